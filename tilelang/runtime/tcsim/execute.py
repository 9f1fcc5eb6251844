"""The functional effect of an engine instruction on the core's buffers and the global
tensors, applied when the instruction completes (so results land in completion order:
a reader that did not wait for its producer sees the old contents)."""
from __future__ import annotations

import numpy as np

from . import numerics as nx


def view(core, ts, stage: int) -> np.ndarray:
    """The tile an operand names: one stage of its buffer, or a static box of it."""
    arr = core.bufs[ts.buf][stage]
    return arr if ts.slices is None else arr[ts.slices]


def apply(sim, core, op) -> None:
    d = op.di
    name = d.op
    if name == "DMA.LD":
        t = d.tiles[0]
        g = sim.tensors[d.glob[0]]
        val = nx.dma_load(g, op.starts, d.box, t.decl.dtype, op.stops)
        view(core, t, op.stages[0])[...] = val.reshape(t.shape)
    elif name == "DMA.ST":
        t = d.tiles[0]
        g = sim.tensors[d.glob[0]]
        nx.dma_store(g, op.starts, d.box, view(core, t, op.stages[0]), d.attrs.get("reduce"),
                     op.stops)
    elif name == "MMA":
        c, a, b = d.tiles
        sc, sa, sb = op.stages
        res = nx.mma(view(core, c, sc), view(core, a, sa), view(core, b, sb),
                     bool(d.attrs.get("ta")), bool(d.attrs.get("tb")))
        view(core, c, sc)[...] = nx.store_cast(res, c.decl.dtype)
    elif name == "ACC.ZERO":
        view(core, d.tiles[0], op.stages[0])[...] = 0
    else:
        _vec(core, op, d, name)


def _operand(core, op, i, domain):
    """Operand i of a VEC instruction as an array over the domain (or a scalar)."""
    a = op.di.args[i]
    v = op.vals[i]
    if v is not None:
        return v
    stage = op.stages[op.di.tiles.index(a)]
    arr = view(core, a, stage)
    if op.di.op == "COPY" and a.dims is None and arr.shape != tuple(domain):
        arr = arr.reshape(domain)                # COPY between tiles of equal extents
    return nx.domain_view(arr, a.dims, domain)


def _vec(core, op, d, name) -> None:
    dst = d.tiles[0]
    dst_arr = view(core, dst, op.stages[0])
    shape = d.attrs.get("shape") or _dst_domain(dst)
    if name == "ACC.ZERO":
        dst_arr[...] = 0
        return
    if name.startswith("VEC.RED."):
        kind = name[8:]
        src = view(core, d.tiles[1], op.stages[1])
        res = nx.reduce(kind, src, d.attrs["dim"])
        if d.attrs.get("acc"):
            res = nx.combine(kind, dst_arr, res)
        dst_arr[...] = nx.store_cast(res, dst.decl.dtype).reshape(dst_arr.shape)
        return
    if name == "VEC.IOTA":
        res = np.indices(shape)[d.attrs["dim"]]
    elif name == "VEC.GATHER":
        flat = view(core, d.tiles[1], op.stages[1]).reshape(-1)
        idx = np.broadcast_to(_operand(core, op, 2, shape), shape).astype(np.int64)
        inside = (idx >= 0) & (idx < flat.size)
        res = np.where(inside, flat[np.where(inside, idx, 0)], 0)
    elif name == "VEC.BITCAST":
        src = np.broadcast_to(_operand(core, op, 1, shape), shape)
        res = np.ascontiguousarray(nx.store_cast(src, d.attrs["src"])).view(
            nx.npdt(dst.decl.dtype))
    elif name == "ACC.READ":
        src = _operand(core, op, 1, shape)
        scale = d.attrs.get("scale")
        res = src.astype(np.float32 if src.dtype != np.float64 else np.float64)
        if scale is not None:
            res = res * (op.vals[-1] if op.vals[-1] is not None else 1.0)
    else:
        args = [_operand(core, op, i, shape) for i in range(1, len(d.args))]
        res = _elementwise(name, args, dst.decl.dtype)
    out = nx.from_domain(nx.store_cast(np.broadcast_to(res, shape), dst.decl.dtype),
                         dst.dims, dst.shape)
    dst_arr[...] = out


def _dst_domain(dst) -> tuple:
    shape = dst.shape
    if dst.dims is None:
        return tuple(shape)
    out = [0] * len(shape)
    for i, dd in enumerate(dst.dims):
        out[dd] = shape[i]
    return tuple(out)


def _elementwise(name, args, dst_dtype: str = ""):
    base = name[4:] if name.startswith("VEC.") else "MOV"
    if base == "SEL":
        cond, a, b = args
        dt = nx.compute_dtype([a, b])
        a, b = nx.widen([a, b], dt)
        return np.where(np.asarray(cond).astype(bool), a, b)
    dt = nx.compute_dtype(args)
    if dst_dtype == "float64" and dt == np.float32 and \
            not any(isinstance(a, np.ndarray) for a in args):
        dt = np.dtype(np.float64)   # immediates only (tanh(0.5) into a float64 tile)
    if base in ("AND", "OR", "NOT"):
        dt = np.dtype(np.bool_)
    wide = nx.widen(args, dt)
    with np.errstate(all="ignore"):
        if len(wide) == 1:
            return nx.VEC_UN[base](wide[0])
        return nx.VEC_BIN[base](wide[0], wide[1])
