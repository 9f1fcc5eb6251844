"""`layout`: lay out the shared operands of register tiles for the micro-kernel.

Runs after `tiling`. A 2-D block-local buffer X that feeds register tiles (see
tiling.py) as the vector operand (B: read `X[k, c + jj]`) or the broadcast operand (A:
read `X[r + ii, k]`) is re-laid out in panels of the register tile's width W (NR for B,
MR for A), each panel contiguous along K:

    X (P x K or K x P)   ->   X (ceil(P / W), K, W),   X[.., p, ..] -> X[p // W, k, p % W]

so the micro-kernel walks one contiguous stream per operand (the K x NR panel of B fits
L1 whatever BLOCK_N is; a power-of-two row stride no longer maps the panel onto a few
cache sets). The `T.copy` that fills X becomes the packing loop nest (with its dtype
conversion, once per element); a transposed operand (`transpose_B=True`: `X[c + jj, k]`)
is transposed there, which is what lets its register tiles use the micro-kernel at all.

A buffer is re-laid out only when every use is one of these: a whole-buffer `T.copy`
into it, or a register-tile read whose panel index is `W * q + v` / `const + v` (const a
multiple of W, v the tile's loop variable). Anything else keeps the row-major layout.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..ir import (Alloc, Atomic, Binary, Buffer, Const, Copy, Expr, For, Load, Module,
                  PrimFunc, Reduce, Region, Store, Var, rewrite, walk)
from ..ir.canon import canonicalize, make_body
from ..targets.cpu import machine as cpu_machine
from .fold import make_const
from .lower_tile_ops import _cast, _indices, _paired_axes, region_load
from .names import NameSupply, names_in

_BITS = {"float32": 32, "float64": 64}


@dataclass(frozen=True)
class _Plan:
    buffer: Buffer
    panel_dim: int        # the dim cut into panels (P); the other one is K
    width: int            # W

    @property
    def packed(self) -> Buffer:
        p, k = self.buffer.shape[self.panel_dim], self.buffer.shape[1 - self.panel_dim]
        panels = -(-int(p.value) // self.width)
        shape = tuple(make_const(v, "int32") for v in (panels, int(k.value), self.width))
        return replace(self.buffer, shape=shape)


def layout(module: Module, machine: cpu_machine.CpuMachine | None = None) -> Module:
    machine = machine or cpu_machine.host()
    return canonicalize(replace(module, funcs=tuple(_layout_func(f, machine)
                                                    for f in module.funcs)))


def _layout_func(func: PrimFunc, machine) -> PrimFunc:
    plans = _plans(func, machine)
    if not plans:
        return func
    names = NameSupply(names_in(func))
    return rewrite(func, lambda n: _apply(n, plans, names))


# ----------------------------------------------------------------------------- analysis

def _plans(func: PrimFunc, machine) -> dict[str, _Plan]:
    """The buffers to re-lay out, by name."""
    candidates = {}
    for n in walk(func.body):
        if isinstance(n, Alloc) and n.buffer.scope in ("shared", "fragment", "local") \
                and n.buffer.ndim == 2 and all(isinstance(d, Const) for d in n.buffer.shape):
            candidates[n.buffer.name] = n.buffer
    proposals: dict[str, set] = {name: set() for name in candidates}
    allowed: set[int] = set()          # ids of the nodes that are accounted-for uses
    for n in walk(func.body):
        if isinstance(n, For):
            _tile_uses(n, machine, candidates, proposals, allowed)
        elif isinstance(n, Copy) and n.dst.buffer.name in candidates \
                and _whole(n.dst) and n.src.buffer.name != n.dst.buffer.name:
            allowed.add(id(n.dst))         # the Region: this copy becomes the packing
    for n in walk(func.body):          # any other use of a candidate disqualifies it
        for buf in _used_buffers(n):
            if buf.name in candidates and id(n) not in allowed:
                proposals[buf.name].add(None)
    plans = {}
    for name, props in proposals.items():
        if len(props) == 1 and None not in props:
            panel_dim, width = next(iter(props))
            plans[name] = _Plan(candidates[name], panel_dim, width)
    return plans


def _used_buffers(n) -> tuple[Buffer, ...]:
    """The buffers node `n` reads or writes (a Region counts for its tile op)."""
    if isinstance(n, (Load, Store, Atomic, Region)):
        return (n.buffer,)
    if isinstance(n, Reduce):
        return (n.src, n.dst)
    return ()


def _whole(region) -> bool:
    return all(isinstance(s, Const) and s.value == 0 for s in region.starts) and \
        tuple(region.extents) == tuple(int(d.value) for d in region.buffer.shape)


def _tile_uses(loop: For, machine, candidates, proposals, allowed) -> None:
    """Record the operand reads of `loop` if it is a register tile."""
    tile = _register_tile(loop)
    if tile is None:
        return
    _, jj, store = tile
    _, nr = machine.register_tile(_BITS[store.buffer.dtype])
    for load in (n for n in walk(store.value) if isinstance(n, Load)):
        if load.buffer.name not in candidates or load.buffer.name == store.buffer.name:
            continue
        dim = _panel_dim(load, jj, loop.var, nr)
        if dim is not None:
            proposals[load.buffer.name].add((dim, nr))
            allowed.add(id(load))


def _register_tile(loop: For):
    """(ii or None, jj, store) when `loop` is the register-tile form of tiling.py."""
    if loop.kind != "serial":
        return None
    body, ii = loop.body, None
    if isinstance(body, For) and body.kind == "unroll":
        ii, body = body.var, body.body
    if not (isinstance(body, For) and body.kind == "vectorized"):
        return None
    if not (isinstance(body.body, Store) and body.body.buffer.dtype in _BITS):
        return None
    return ii, body.var, body.body


def _panel_dim(load: Load, var: Var | None, k: Var, width: int) -> int | None:
    """The dim of `load` indexed `W * q + var` (the other one by k alone), or None."""
    if var is None:
        return None
    for dim in (0, 1):
        if _split(load.indices[dim], var, width) is not None and load.indices[1 - dim] == k:
            return dim
    return None


def _split(e: Expr, var: Var, width: int):
    """(panel, lane) exprs when `e` is `var`, `W * q + var` or `c + var` (c % W == 0)."""
    if e == var:
        return make_const(0, var.dtype), var
    if not (isinstance(e, Binary) and e.op == "+" and e.rhs == var):
        return None
    base = e.lhs
    if isinstance(base, Const) and base.value % width == 0:
        return make_const(base.value // width, var.dtype), var
    if isinstance(base, Binary) and base.op == "*" and isinstance(base.rhs, Const) \
            and base.rhs.value == width and var not in set(walk(base.lhs)):
        return base.lhs, var
    return None


# ----------------------------------------------------------------------------- rewriting

def _apply(n, plans: dict[str, _Plan], names: NameSupply):
    if isinstance(n, Alloc) and n.buffer.name in plans:
        return replace(n, buffer=plans[n.buffer.name].packed)
    if isinstance(n, Load) and n.buffer.name in plans:
        plan = plans[n.buffer.name]
        idx = _packed_index(n.indices, plan)
        return replace(n, buffer=plan.packed, indices=idx)
    if isinstance(n, Copy) and n.dst.buffer.name in plans:
        return _packing_copy(n, plans[n.dst.buffer.name], names)
    return None


def _packed_index(indices, plan: _Plan):
    p, k = indices[plan.panel_dim], indices[1 - plan.panel_dim]
    for var in (n for n in walk(p) if isinstance(n, Var)):
        parts = _split(p, var, plan.width)
        if parts is not None:
            return parts[0], k, parts[1]
    raise AssertionError(f"layout: {plan.buffer.name} index {p} is not a panel index")


def _packing_copy(op: Copy, plan: _Plan, names: NameSupply):
    """`T.copy(src, X)` as the loop nest that writes X's panels:
    for q, k, v: X[q, k, v] = src[.. p = q * W + v, k ..], with a narrower last panel
    (k outermost when the source is contiguous along p, see _panel_loops)."""
    dst_axes, src_axes = _paired_axes(op, op.src, op.dst)
    by_dst = dict(zip(dst_axes, src_axes))
    p_ext = int(plan.buffer.shape[plan.panel_dim].value)
    k_ext = int(plan.buffer.shape[1 - plan.panel_dim].value)
    full, tail = divmod(p_ext, plan.width)
    stmts = []
    if full:
        q = names.var("q")
        stmts.append(_panel_loops(op, plan, by_dst, names, q, full, plan.width, k_ext))
    if tail:
        stmts.append(_panel_loops(op, plan, by_dst, names, make_const(full, "int32"), 1,
                                  tail, k_ext))
    return make_body(stmts, op.span)


def _panel_loops(op, plan, by_dst, names, q, count, width, k_ext):
    k, v = names.var("kp"), names.var("v")
    if isinstance(q, Const):
        p = v if q.value == 0 else \
            Binary("+", make_const(q.value * plan.width, "int32"), v, "int32")
    else:
        p = Binary("+", Binary("*", q, make_const(plan.width, "int32"), "int32"), v, "int32")
    dst_index = {plan.panel_dim: p, 1 - plan.panel_dim: k}
    src_map = {by_dst[d]: e for d, e in dst_index.items() if d in by_dst}
    src = region_load(op.src, _indices(op.src, src_map), op.span)
    store = Store(plan.packed, (q, k, v), _cast(src, plan.buffer.dtype), span=op.span)
    # lanes innermost when the source is contiguous along the panel dim, else K
    src_contig_along_p = by_dst.get(plan.panel_dim) == op.src.buffer.ndim - 1
    if src_contig_along_p:
        # K outermost: each source row is read once, front to back, across all the
        # panels (one stream), rather than re-visiting every row once per panel, whose
        # rows a row stride of a power of two maps onto a few cache sets.
        body = _loop(v, width, store, op.span)
        if isinstance(q, Var):
            body = _loop(q, count, body, op.span)
        return _loop(k, k_ext, body, op.span)
    body = _loop(v, width, _loop(k, k_ext, store, op.span), op.span)
    if isinstance(q, Var):
        body = _loop(q, count, body, op.span)
    return body


def _loop(var: Var, extent: int, body, span):
    return For(var, make_const(0, var.dtype), make_const(extent, var.dtype), "parallel", body,
               span=span)


__all__ = ["layout"]
