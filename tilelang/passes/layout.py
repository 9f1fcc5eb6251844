"""`layout`: lay out the shared operands of register tiles for the micro-kernel.

Runs after `tiling`. A 2-D block-local buffer X that feeds register tiles (see
tiling.py) as the vector operand (B: read `X[k, c + jj]`) is re-laid out in panels of
the register tile's width W (NR), each panel contiguous along K:

    X (K x P or P x K)   ->   X (ceil(P / W), K, W),        X[.., p, ..] -> X[p // W, k, p % W]

so the micro-kernel walks one contiguous stream (the K x NR panel of B fits a cache
whatever BLOCK_N is; a power-of-two row stride no longer maps the panel onto a few
cache sets). Register tiles that take two k steps at a time (tiling.py's dot form, bf16
pairs) read K-pair panels instead, each lane's two k steps side by side as the dot
instruction wants them:

    X  ->  X (ceil(P / W), ceil(K / 2), W, 2),    X[.., p, ..] -> X[p // W, k // 2, p % W, k % 2]

A block-local operand of a narrower float that the tiles widen on every read (the
broadcast operand A, read `T.cast(X[r + ii, k], "float32")`, or a panel of B that is not
read in pairs) is given the tiles' dtype: its copy converts each element once, and the
micro-kernel's inner loop does no conversion.

The `T.copy` that fills X becomes the packing loop nest (with its dtype conversion, once
per element); a transposed operand (`transpose_B=True`: `X[c + jj, k]`) is transposed
there, which is what lets its register tiles use the micro-kernel at all. A buffer is
changed only when every use is one of these: a whole-buffer `T.copy` into it (any
`T.copy` for a broadcast operand, which only changes dtype: tiling's sunk row panels),
or a register-tile read (for a panel, with the panel index `W * q + v` / `const + v`,
const a multiple of W, v the tile's loop variable). Anything else keeps the buffer as it
is.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..ir import (Alloc, Atomic, Binary, Buffer, Cast, Const, Copy, Expr, For, Load, Module,
                  PrimFunc, Reduce, Region, Store, Var, rewrite, walk)
from .. import dtypes
from ..ir.canon import canonicalize, make_body
from ..ir.visitor import children
from ..targets.cpu import machine as cpu_machine
from .fold import make_const
from .lower_tile_ops import _cast, _indices, _paired_axes, region_load
from .names import NameSupply, names_in

_BITS = {"float32": 32, "float64": 64}


@dataclass(frozen=True)
class _Plan:
    buffer: Buffer
    panel_dim: int | None     # the dim cut into panels (P; the other one is K), or None:
    width: int                # W                      the layout stays, only the dtype changes
    pairs: bool = False       # K-pair panels
    dtype: str | None = None  # the new dtype, if it changes

    @property
    def packed(self) -> Buffer:
        dtype = self.dtype or self.buffer.dtype
        if self.panel_dim is None:
            return replace(self.buffer, dtype=dtype)
        p, k = self.buffer.shape[self.panel_dim], self.buffer.shape[1 - self.panel_dim]
        panels = -(-int(p.value) // self.width)
        dims = (panels, -(-int(k.value) // 2), self.width, 2) if self.pairs else \
            (panels, int(k.value), self.width)
        return replace(self.buffer, shape=tuple(make_const(v, "int32") for v in dims),
                       dtype=dtype)


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

@dataclass
class _Uses:
    """What the register tiles do with one candidate buffer."""
    panels: set            # (dim, width) of its reads as a vector operand
    pairs: bool = False    # read by a dot-form tile
    widened: set = None    # dtypes its reads are cast to (None: a read not cast)
    broadcast: bool = False
    partial: bool = False  # filled by a T.copy of part of it (tiling's sunk row panels)
    other: bool = False    # a use that is none of the above: keep the buffer


def _plans(func: PrimFunc, machine) -> dict[str, _Plan]:
    """The buffers to re-lay out or retype, by name."""
    candidates = {}
    for n in walk(func.body):
        if isinstance(n, Alloc) and n.buffer.scope in ("shared", "fragment", "local") \
                and n.buffer.ndim == 2 and all(isinstance(d, Const) for d in n.buffer.shape):
            candidates[n.buffer.name] = n.buffer
    uses = {name: _Uses(set(), widened=set()) for name in candidates}
    allowed: set[int] = set()          # ids of the nodes that are accounted-for uses
    for n in walk(func.body):
        if isinstance(n, For):
            _tile_uses(n, machine, candidates, uses, allowed)
        elif isinstance(n, Copy) and n.dst.buffer.name in candidates \
                and n.src.buffer.name != n.dst.buffer.name:
            allowed.add(id(n.dst))         # the Region: this copy becomes the packing
            uses[n.dst.buffer.name].partial |= not _whole(n.dst)
    for n in walk(func.body):          # any other use of a candidate disqualifies it
        for buf in _used_buffers(n):
            if buf.name in candidates and id(n) not in allowed:
                uses[buf.name].other = True
    plans = {}
    for name, u in uses.items():
        plan = _plan(candidates[name], u)
        if plan is not None:
            plans[name] = plan
    return plans


def _plan(buf: Buffer, u: _Uses) -> _Plan | None:
    if u.other or (u.panels and (u.broadcast or u.partial)) or len(u.panels) > 1:
        return None
    # widen to the tiles' dtype when every read widens (never under a dot: it reads the
    # narrow pairs themselves)
    dtype = next(iter(u.widened)) if len(u.widened) == 1 and None not in u.widened \
        and not u.pairs else None
    if u.panels:
        dim, width = next(iter(u.panels))
        return _Plan(buf, dim, width, u.pairs, dtype)
    if u.broadcast and dtype is not None:
        return _Plan(buf, None, 1, False, dtype)
    return None


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


def _tile_uses(loop: For, machine, candidates, uses, allowed) -> None:
    """Record the operand reads of `loop` if it is a register tile."""
    tile = _register_tile(loop)
    if tile is None:
        return
    ii, jj, store = tile
    _, nr = machine.register_tile(_BITS[store.buffer.dtype])
    pairs = _is_dot_form(store)
    for load, cast in _reads(store.value):
        name = load.buffer.name
        if name not in candidates or name == store.buffer.name:
            continue
        u = uses[name]
        dim = _panel_dim(load, jj, loop.var, nr)
        if dim is not None:
            u.panels.add((dim, nr))
        elif _broadcast_read(load, jj, loop.var):
            u.broadcast = True
        else:
            continue
        u.pairs |= pairs
        u.widened.add(cast if cast is not None and _BITS.get(cast, 0) >
                      _float_bits(load.buffer.dtype) else None)
        allowed.add(id(load))


def _reads(e, cast=None):
    """(Load, the dtype it is directly cast to or None) for every load in `e`."""
    if isinstance(e, Load):
        yield e, cast
    elif isinstance(e, Cast):
        yield from _reads(e.value, e.dtype)
    else:
        for n in children(e):
            yield from _reads(n)


def _float_bits(dtype: str) -> int:
    return dtypes.bits(dtype) if dtypes.is_float(dtype) else 1 << 10


def _is_dot_form(store: Store) -> bool:
    """tiling.py's dot form: C = (C + x(2kk + 1) * y(2kk + 1)) + x(2kk) * y(2kk)."""
    v = store.value
    return isinstance(v, Binary) and v.op == "+" and isinstance(v.lhs, Binary) \
        and v.lhs.op == "+" and isinstance(v.lhs.lhs, Load) \
        and v.lhs.lhs.buffer.name == store.buffer.name \
        and any(_k_offset(i) == 1 for n in walk(v.lhs.rhs) if isinstance(n, Load)
                for i in n.indices)


def _k_offset(e) -> int | None:
    """0 / 1 when `e` is `2 * kk` / `2 * kk + 1` (kk a variable), else None."""
    if _twice(e):
        return 0
    if isinstance(e, Binary) and e.op == "+" and _twice(e.lhs) and isinstance(e.rhs, Const) \
            and e.rhs.value == 1:
        return 1
    return None


def _twice(e) -> bool:
    return isinstance(e, Binary) and e.op == "*" and isinstance(e.lhs, Var) \
        and isinstance(e.rhs, Const) and e.rhs.value == 2


def _is_k(e, k: Var) -> bool:
    return e == k or (_k_offset(e) is not None and _k_var(e) == k)


def _k_var(e) -> Var:
    """kk of `2 * kk` or `2 * kk + 1`."""
    return e.lhs if _twice(e) else e.lhs.lhs


def _broadcast_read(load: Load, jj: Var, k: Var) -> bool:
    """A read of the broadcast operand: indexed by k in one dim, without jj."""
    return not any(n == jj for i in load.indices for n in walk(i)) \
        and any(_is_k(i, k) for i in load.indices)


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
        if _split(load.indices[dim], var, width) is not None and _is_k(load.indices[1 - dim], k):
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
        idx = n.indices if plan.panel_dim is None else _packed_index(n.indices, plan)
        return replace(n, buffer=plan.packed, indices=idx, dtype=plan.packed.dtype)
    if isinstance(n, Cast) and isinstance(n.value, Load) and n.value.buffer.name in plans \
            and n.value.dtype == n.dtype:
        return n.value                   # the load now reads the widened buffer
    if isinstance(n, Copy) and n.dst.buffer.name in plans:
        plan = plans[n.dst.buffer.name]
        if plan.panel_dim is None:       # retyped: the copy converts
            return replace(n, dst=replace(n.dst, buffer=plan.packed))
        return _packing_copy(n, plan, names)
    return None


def _packed_index(indices, plan: _Plan):
    p, k = indices[plan.panel_dim], indices[1 - plan.panel_dim]
    for var in (n for n in walk(p) if isinstance(n, Var)):
        parts = _split(p, var, plan.width)
        if parts is not None:
            if not plan.pairs:
                return parts[0], k, parts[1]
            kk, r = _pair_of(k)
            return parts[0], kk, parts[1], r
    raise AssertionError(f"layout: {plan.buffer.name} index {p} is not a panel index")


def _pair_of(k: Expr) -> tuple[Expr, Expr]:
    """(k // 2, k % 2) for a K index, spelled `kk, 0` / `kk, 1` for `2 * kk` / `2 * kk + 1`."""
    offset = _k_offset(k)
    if offset is not None:
        return _k_var(k), make_const(offset, k.dtype)
    two = make_const(2, k.dtype)
    return Binary("//", k, two, k.dtype), Binary("%", k, two, k.dtype)


def _packing_copy(op: Copy, plan: _Plan, names: NameSupply):
    """`T.copy(src, X)` as the loop nest that writes X's panels:
    for q, k, v: X[q, k, v] = src[.. p = q * W + v, k ..], with a narrower last panel
    (k outermost when the source is contiguous along p, see _panel_loops); K-pair panels
    take k = 2 kk + r (r = 0, 1) for X[q, kk, v, r]."""
    dst_axes, src_axes = _paired_axes(op, op.src, op.dst)
    by_dst = dict(zip(dst_axes, src_axes))
    p_ext = int(plan.buffer.shape[plan.panel_dim].value)
    k_ext = int(plan.buffer.shape[1 - plan.panel_dim].value)
    full, tail = divmod(p_ext, plan.width)
    stmts = []
    for ks in _k_runs(k_ext, plan.pairs):
        if full:
            q = names.var("q")
            stmts.append(_panel_loops(op, plan, by_dst, names, q, full, plan.width, ks))
        if tail:
            stmts.append(_panel_loops(op, plan, by_dst, names, make_const(full, "int32"), 1,
                                      tail, ks))
    return make_body(stmts, op.span)


def _k_runs(k_ext: int, pairs: bool) -> list[tuple[int, int, tuple[int, ...]]]:
    """The K loops of a packing: (first k, trip count, the offsets r of k = step * t + r
    each trip writes). Plain panels: one loop of single steps. K-pair panels: the whole
    pairs, then a lone last k step when K is odd (its pair's second half is never read:
    tiling gives an odd K's last step a single-step tile)."""
    if not pairs:
        return [(0, k_ext, (0,))]
    runs = [(0, k_ext // 2, (0, 1))] if k_ext >= 2 else []
    if k_ext % 2:
        runs.append((k_ext - 1, 1, (0,)))
    return runs


def _panel_loops(op, plan, by_dst, names, q, count, width, k_run):
    first, trips, offsets = k_run
    t, v = names.var("kp"), names.var("v")
    if isinstance(q, Const):
        p = v if q.value == 0 else \
            Binary("+", make_const(q.value * plan.width, "int32"), v, "int32")
    else:
        p = Binary("+", Binary("*", q, make_const(plan.width, "int32"), "int32"), v, "int32")
    stores = []
    for r in offsets:
        if not plan.pairs:
            k, dst = t, (q, t, v)
        else:        # k = 2 t + r (+ the run's first k for a lone last step)
            base = Binary("*", t, make_const(2, "int32"), "int32") if trips > 1 or first == 0 \
                else make_const(first, "int32")
            k = base if r == 0 else Binary("+", base, make_const(r, "int32"), "int32")
            kk = t if trips > 1 or first == 0 else make_const(first // 2, "int32")
            dst = (q, kk, v, make_const(r, "int32"))
        dst_index = {plan.panel_dim: p, 1 - plan.panel_dim: k}
        src_map = {by_dst[d]: e for d, e in dst_index.items() if d in by_dst}
        src = region_load(op.src, _indices(op.src, src_map), op.span)
        stores.append(Store(plan.packed, dst, _cast(src, plan.packed.dtype), span=op.span))
    store = make_body(stores, op.span)
    # lanes innermost when the source is contiguous along the panel dim, else K
    src_contig_along_p = by_dst.get(plan.panel_dim) == op.src.buffer.ndim - 1
    if src_contig_along_p:
        # K outermost: each source row is read once, front to back, across all the
        # panels (one stream), rather than re-visiting every row once per panel, whose
        # rows a row stride of a power of two maps onto a few cache sets.
        body = _loop(v, width, store, op.span)
        if isinstance(q, Var):
            body = _loop(q, count, body, op.span)
        return _loop(t, trips, body, op.span)
    body = _loop(v, width, _loop(t, trips, store, op.span), op.span)
    if isinstance(q, Var):
        body = _loop(q, count, body, op.span)
    return body


def _loop(var: Var, extent: int, body, span):
    return For(var, make_const(0, var.dtype), make_const(extent, var.dtype), "parallel", body,
               span=span)


__all__ = ["layout"]
