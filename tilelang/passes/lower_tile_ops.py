"""`lower_tile_ops`: every tile op becomes loops over scalar loads and stores.

After this pass no Copy, Gemm, Fill, Reduce or TileAtomic remains. Elementwise ops get
`parallel` loops (vectorised later); reductions keep their reduced dimension `serial`.
A copy's `eviction_policy` hint becomes the annotation of its innermost loop.
Regions with unit extents are matched dimension by dimension after dropping the unit
dims, the way `T.copy(A[by * 128, k * 32], A_s)` pairs a 2-D window with a 2-D tile.
The accesses are not bounds-checked here: the `predicate` pass guards global ones. A
region's limits (the stop of a dynamic slice) are made explicit here: a masked element
reads as 0 (`Select`) and is not written (`If`).
"""
from __future__ import annotations

from dataclasses import replace

from .. import dtypes
from ..diagnostics import InternalError
from ..ir import (Expr, Const, Var, Binary, Call, Cast, Load, Select, Stmt, Seq, Store, Atomic,
                  For, If, Region, Copy, Gemm, Fill, Reduce, TileAtomic, Module, PrimFunc,
                  rewrite)
from ..ir.canon import canonicalize
from .fold import make_const
from .names import NameSupply, names_in

_LOOP_NAMES = ("i", "j", "k", "l", "m", "n")


def lower_tile_ops(module: Module) -> Module:
    return canonicalize(replace(module, funcs=tuple(_lower_func(f) for f in module.funcs)))


def _lower_func(func: PrimFunc) -> PrimFunc:
    lowering = _Lowering(NameSupply(names_in(func)))
    return rewrite(func, lowering.visit)


class _Lowering:
    def __init__(self, names: NameSupply):
        self.names = names

    def visit(self, node):
        if isinstance(node, Copy):
            return self.copy(node)
        if isinstance(node, Fill):
            return self.fill(node)
        if isinstance(node, Gemm):
            return self.gemm(node)
        if isinstance(node, Reduce):
            return self.reduce(node)
        if isinstance(node, TileAtomic):
            return self.tile_atomic(node)
        return None

    def loop_vars(self, count: int, bases=_LOOP_NAMES) -> list[Var]:
        return [self.names.var(bases[n % len(bases)]) for n in range(count)]

    # ------------------------------------------------------------------ elementwise ops

    def copy(self, op: Copy) -> Stmt:
        dst_axes, src_axes = _paired_axes(op, op.src, op.dst)
        ivars = self.loop_vars(len(dst_axes))
        src = _load(op.src, dict(zip(src_axes, ivars)), op.span)
        value = _cast(src, op.dst.buffer.dtype)
        idx = _indices(op.dst, dict(zip(dst_axes, ivars)))
        store = _guarded(op.dst, idx, Store(op.dst.buffer, idx, value, span=op.span))
        extents = [op.dst.extents[d] for d in dst_axes]
        nest = _nest(ivars, extents, ["parallel"] * len(ivars), store, op.span)
        if op.eviction_policy == "evict_normal" or not isinstance(nest, For):
            return nest
        # the cache hint goes on the innermost loop, the one along dst's last dim
        return _with_innermost(nest, ("eviction_policy", op.eviction_policy))

    def fill(self, op: Fill) -> Stmt:
        axes = _axes(op.dst)
        ivars = self.loop_vars(len(axes))
        value = _cast(op.value, op.dst.buffer.dtype)
        store = Store(op.dst.buffer, _indices(op.dst, dict(zip(axes, ivars))), value,
                      span=op.span)
        return _nest(ivars, [op.dst.extents[d] for d in axes], ["parallel"] * len(axes),
                     store, op.span)

    def tile_atomic(self, op: TileAtomic) -> Stmt:
        dst_axes, src_axes = _paired_axes(op, op.src, op.dst)
        ivars = self.loop_vars(len(dst_axes))
        value = _cast(_load(op.src, dict(zip(src_axes, ivars)), op.span), op.dst.buffer.dtype)
        idx = _indices(op.dst, dict(zip(dst_axes, ivars)))
        atomic = _guarded(op.dst, idx, Atomic(op.op, op.dst.buffer, idx, value, span=op.span))
        extents = [op.dst.extents[d] for d in dst_axes]
        return _nest(ivars, extents, ["parallel"] * len(ivars), atomic, op.span)

    # ------------------------------------------------------------------ gemm

    def gemm(self, op: Gemm) -> Stmt:
        a_axes, b_axes, c_axes = (_matrix_axes(r, op) for r in (op.a, op.b, op.c))
        if op.transpose_a:
            a_axes = a_axes[::-1]
        if op.transpose_b:
            b_axes = b_axes[::-1]
        m, n = (_extent(op.c, d) for d in c_axes)
        k = _extent(op.a, a_axes[1])
        if (_extent(op.a, a_axes[0]), _extent(op.b, b_axes[0]), _extent(op.b, b_axes[1])) \
                != (m, k, n):
            raise InternalError(f"{op.span}: T.gemm shapes disagree: A {op.a.extents}, "
                                f"B {op.b.extents}, C {op.c.extents}")
        i, kk, j = self.loop_vars(3, ("i", "k", "j"))
        cdt = op.c.buffer.dtype
        c_idx = _indices(op.c, _bind(c_axes, (i, j)))
        a_val = _cast(_load(op.a, _bind(a_axes, (i, kk)), op.span), cdt)
        b_val = _cast(_load(op.b, _bind(b_axes, (kk, j)), op.span), cdt)
        acc = Binary("+", Load(op.c.buffer, c_idx, cdt, span=op.span),
                     Binary("*", a_val, b_val, cdt, span=op.span), cdt, span=op.span)
        update = Store(op.c.buffer, c_idx, acc, span=op.span)
        # i, k, j: the innermost loop runs along C's (and B's) contiguous dimension.
        body = _nest([i, kk, j], [m, k, n], ["parallel", "serial", "parallel"], update,
                     op.span)
        if not op.clear_accum:
            return body
        zi, zj = self.loop_vars(2)
        zero = Store(op.c.buffer, _indices(op.c, _bind(c_axes, (zi, zj))),
                     make_const(0, cdt), span=op.span)
        clear = _nest([zi, zj], [m, n], ["parallel", "parallel"], zero, op.span)
        return Seq((clear, body), span=op.span)

    # ------------------------------------------------------------------ reduce

    def reduce(self, op: Reduce) -> Stmt:
        src, dst, dim = op.src, op.dst, op.dim
        ddt = dst.dtype
        init = self.reduce_init(op) if op.clear else None   # named first: it runs first
        ivars = self.loop_vars(src.ndim)
        dst_idx = _reduced_indices(op, ivars)
        value = _cast(Load(src, tuple(ivars), src.dtype, span=op.span), ddt)
        if op.kind in ("abssum", "absmax") and not dtypes.is_bool(ddt):
            value = Call("abs", (value,), ddt, span=op.span)
        current = Load(dst, dst_idx, ddt, span=op.span)
        combine = _COMBINE_BOOL[op.kind] if dtypes.is_bool(ddt) else _COMBINE[op.kind]
        update = Store(dst, dst_idx, Binary(combine, current, value, ddt, span=op.span),
                       span=op.span)
        # Loops in src's dim order keep accesses contiguous; only `dim` carries a dependence.
        kinds = ["serial" if d == dim else "parallel" for d in range(src.ndim)]
        body = _nest(ivars, list(src.shape), kinds, update, op.span)
        return body if init is None else Seq((init, body), span=op.span)

    def reduce_init(self, op: Reduce) -> Stmt:
        dst = op.dst
        ivars = self.loop_vars(dst.ndim)
        # bool too: False for sum / max (any), True for min (all)
        identity = make_const(dtypes.reduction_identity(op.kind, dst.dtype), dst.dtype)
        init = Store(dst, tuple(ivars), identity, span=op.span)
        return _nest(ivars, list(dst.shape), ["parallel"] * dst.ndim, init, op.span)


# ----------------------------------------------------------------------------- helpers

def _axes(region: Region) -> list[int]:
    """The dims of a region that are not of extent 1."""
    return [d for d, e in enumerate(region.extents) if e != 1]


def _paired_axes(op, src: Region, dst: Region) -> tuple[list[int], list[int]]:
    dst_axes, src_axes = _axes(dst), _axes(src)
    if [dst.extents[d] for d in dst_axes] != [src.extents[d] for d in src_axes]:
        raise InternalError(f"{op.span}: {type(op).__name__} regions disagree: "
                            f"{src.extents} vs {dst.extents}")
    return dst_axes, src_axes


def _matrix_axes(region: Region, op) -> list[int]:
    """The buffer dims holding a gemm operand's rows and columns: its last two dims, all
    leading dims being of extent 1 (the rule the frontend checks)."""
    rank = region.buffer.ndim
    if rank < 2 or any(e != 1 for e in region.extents[:-2]):
        raise InternalError(f"{op.span}: T.gemm operand {region.buffer.name} is not a matrix: "
                            f"extents {region.extents}")
    return [rank - 2, rank - 1]


def _extent(region: Region, dim: int) -> int:
    return region.extents[dim]


_COMBINE = {"sum": "+", "abssum": "+", "max": "max", "absmax": "max", "min": "min"}
# Bool reductions as numpy and TileLang's C++ give them: a sum saturates (any, as max
# does), never the parity an add of one-bit integers gives; min is all. max / min, not
# and / or, which the CPU target short-circuits (a branch per element).
_COMBINE_BOOL = {"sum": "max", "abssum": "max", "max": "max", "absmax": "max", "min": "min"}


def _bind(axes, ivars) -> dict[int, Var]:
    return dict(zip(axes, ivars))


def _indices(region: Region, offsets: dict[int, Var]) -> tuple[Expr, ...]:
    out = []
    for d, start in enumerate(region.starts):
        var = offsets.get(d)
        if var is None:
            out.append(start)
        elif isinstance(start, Const) and start.value == 0:
            out.append(var)          # whole-buffer operands: index by the loop var alone
        else:
            if start.dtype != var.dtype:
                start = Cast(start, var.dtype, span=start.span)
            out.append(Binary("+", start, var, var.dtype, span=start.span))
    return tuple(out)


def _load(region: Region, offsets: dict[int, Var], span) -> Expr:
    return region_load(region, _indices(region, offsets), span)


def region_load(region: Region, indices, span) -> Expr:
    """The element of `region` at `indices`: 0 where a limit masks it."""
    load = Load(region.buffer, tuple(indices), region.buffer.dtype, span=span)
    cond = within_limits(region, indices)
    if cond is None:
        return load
    return Select(cond, load, make_const(0, load.dtype), load.dtype, span=span)


def within_limits(region: Region, indices) -> Expr | None:
    """`index < limit` over the region's limited dims (None when it has no limit)."""
    if region.limits is None:
        return None
    cond = None
    for index, limit in zip(indices, region.limits):
        if limit is None:
            continue
        if limit.dtype != index.dtype:
            limit = Cast(limit, index.dtype, span=limit.span)
        term = Binary("<", index, limit, "bool", span=limit.span)
        cond = term if cond is None else Binary("and", cond, term, "bool", span=limit.span)
    return cond


def _guarded(region: Region, indices, stmt: Stmt) -> Stmt:
    """`stmt` (a write of `region` at `indices`) under the region's limits."""
    cond = within_limits(region, indices)
    return stmt if cond is None else If(cond, stmt, span=stmt.span)


def _cast(e: Expr, dtype: str) -> Expr:
    return e if e.dtype == dtype else Cast(e, dtype, span=e.span)


def _nest(ivars, extents, kinds, body: Stmt, span) -> Stmt:
    for var, extent, kind in reversed(list(zip(ivars, extents, kinds))):
        if isinstance(extent, int):
            extent = make_const(extent, var.dtype)
        elif extent.dtype != var.dtype:
            extent = Cast(extent, var.dtype, span=extent.span)
        body = For(var, make_const(0, var.dtype), extent, kind, body, span=span)
    return body


def _with_innermost(loop: For, annotation) -> For:
    if isinstance(loop.body, For):
        return replace(loop, body=_with_innermost(loop.body, annotation))
    return replace(loop, annotations=tuple(sorted(loop.annotations + (annotation,))))


def _reduced_indices(op: Reduce, ivars: list[Var]) -> tuple[Expr, ...]:
    """dst indices for the src element at `ivars`: the reduced dim dropped (or pinned to
    0 when dst keeps it with extent 1)."""
    if op.dst.ndim == op.src.ndim:
        return tuple(make_const(0, v.dtype) if d == op.dim else v
                     for d, v in enumerate(ivars))
    return tuple(v for d, v in enumerate(ivars) if d != op.dim)


__all__ = ["lower_tile_ops"]
