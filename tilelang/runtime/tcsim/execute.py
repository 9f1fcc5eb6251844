"""The functional effect of an engine instruction on the core's buffers and the global
tensors, applied when the instruction completes (so results land in completion order:
a reader that did not wait for its producer sees the old contents)."""
from __future__ import annotations

import numpy as np

from . import numerics as nx


def tile_array(core, ts, stage: int) -> np.ndarray:
    return core.bufs[ts.buf][stage]


def apply(sim, core, op) -> None:
    d = op.di
    name = d.op
    if name == "DMA.LD":
        t = d.tiles[0]
        g = sim.tensors[d.glob[0]]
        val = nx.dma_load(g, op.starts, d.box, t.decl.dtype)
        core.bufs[t.buf][op.stages[0]] = val.reshape(t.decl.shape)
    elif name == "DMA.ST":
        t = d.tiles[0]
        g = sim.tensors[d.glob[0]]
        nx.dma_store(g, op.starts, d.box, core.bufs[t.buf][op.stages[0]],
                     d.attrs.get("reduce"))
    elif name == "MMA":
        c, a, b = d.tiles
        sc, sa, sb = op.stages
        res = nx.mma(core.bufs[c.buf][sc], core.bufs[a.buf][sa], core.bufs[b.buf][sb],
                     bool(d.attrs.get("ta")), bool(d.attrs.get("tb")))
        core.bufs[c.buf][sc] = nx.store_cast(res, c.decl.dtype)
    elif name == "ACC.ZERO":
        t = d.tiles[0]
        core.bufs[t.buf][op.stages[0]][...] = 0
    else:
        _vec(core, op, d, name)


def _operand(core, op, i, domain):
    """Operand i of a VEC instruction as an array over the domain (or a scalar)."""
    a = op.di.args[i]
    v = op.vals[i]
    if v is not None:
        return v
    stage = op.stages[op.di.tiles.index(a)]
    return nx.domain_view(core.bufs[a.buf][stage], a.dims, domain)


def _vec(core, op, d, name) -> None:
    dst = d.tiles[0]
    dst_arr = core.bufs[dst.buf][op.stages[0]]
    shape = d.attrs.get("shape") or _dst_domain(dst)
    if name == "ACC.ZERO":
        dst_arr[...] = 0
        return
    if name.startswith("VEC.RED."):
        kind = name[8:]
        src = core.bufs[d.tiles[1].buf][op.stages[1]]
        res = nx.reduce(kind, src, d.attrs["dim"])
        if d.attrs.get("acc"):
            res = nx.combine(kind, dst_arr, res)
        dst_arr[...] = nx.store_cast(res, dst.decl.dtype).reshape(dst_arr.shape)
        return
    if name == "VEC.IOTA":
        res = np.indices(shape)[d.attrs["dim"]]
    elif name == "ACC.READ":
        src = _operand(core, op, 1, shape)
        scale = d.attrs.get("scale")
        res = src.astype(np.float32 if src.dtype != np.float64 else np.float64)
        if scale is not None:
            res = res * (op.vals[-1] if op.vals[-1] is not None else 1.0)
    else:
        args = [_operand(core, op, i, shape) for i in range(1, len(d.args))]
        res = _elementwise(name, args)
    out = nx.from_domain(nx.store_cast(np.broadcast_to(res, shape), dst.decl.dtype),
                         dst.dims, dst.decl.shape)
    dst_arr[...] = out


def _dst_domain(dst) -> tuple:
    shape = dst.decl.shape
    if dst.dims is None:
        return tuple(shape)
    out = [0] * len(shape)
    for i, dd in enumerate(dst.dims):
        out[dd] = shape[i]
    return tuple(out)


def _elementwise(name, args):
    base = name[4:] if name.startswith("VEC.") else "MOV"
    if base == "SEL":
        cond, a, b = args
        dt = nx.compute_dtype([a, b])
        a, b = nx.widen([a, b], dt)
        return np.where(np.asarray(cond).astype(bool), a, b)
    dt = nx.compute_dtype(args)
    if base in ("AND", "OR", "NOT"):
        dt = np.dtype(np.bool_)
    wide = nx.widen(args, dt)
    with np.errstate(all="ignore"):
        if len(wide) == 1:
            return nx.VEC_UN[base](wide[0])
        return nx.VEC_BIN[base](wide[0], wide[1])
