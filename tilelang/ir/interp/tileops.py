"""Tile operations in the reference interpreter, executed whole with numpy.

Each one is defined as the loops `lower_tile_ops` writes for it (docs/semantics.md):
`T.copy` and `T.fill` elementwise with conversion to the destination's dtype; `T.gemm`
as C += op(A)[i, k] * op(B)[k, j] with the products and sums in C's dtype, k in
increasing order; `T.reduce_*` along `dim` in increasing order, each element converted
to the destination's dtype first; tile atomics elementwise. Global elements outside
their tensor read as 0 and are not written; block-local ones are undefined behaviour.
Elements a region's limits mask (a dynamic slice's stop) read as 0 and are not written.
"""
from __future__ import annotations

import numpy as np

from ... import dtypes
from .values import V, NotSupported, binary, call, const, convert, either


def _top_level(m, op) -> None:
    if m.lanes:
        raise NotSupported(f"`{type(op).__name__}` inside a parallel loop")


def _region(m, region):
    """(Buf, start per dim) of a Region; starts must be the same in every lane."""
    buf = m.buf(region.buffer)
    starts = [m.scalar_int(s, "a region start") for s in region.starts]
    return buf, starts


def _axes(region) -> list[int]:
    return [d for d, e in enumerate(region.extents) if e != 1]


def _grid_indices(starts, extents, axes, order_extents):
    """Index arrays of a region over the grid of its non-unit `axes` (in that order)."""
    grids = np.indices(order_extents) if order_extents else np.zeros((0,), np.int64)
    idx = []
    for d, (s, e) in enumerate(zip(starts, extents)):
        if d in axes:
            idx.append(s + grids[axes.index(d)])
        else:
            idx.append(np.full(tuple(order_extents), s, dtype=np.int64))
    return tuple(np.asarray(i, dtype=np.int64) for i in idx)


def _within_limits(m, region, idx):
    """Where the region's limits (the stop of a dynamic slice, `Region.limits`) let an
    element through: index < limit along each limited dim. A masked element reads as 0
    and is not written, as past the edge of a tensor."""
    active = np.True_
    for i, limit in zip(idx, (region.limits if region is not None else None) or ()):
        if limit is not None:
            active = active & (i < m.scalar_int(limit, "a slice stop"))
    return np.asarray(active)


def _gather(m, buf, idx, span, region=None) -> V:
    return buf.gather(idx, _within_limits(m, region, idx), m.block, span)


def _scatter(m, buf, idx, value: V, span, region=None) -> None:
    buf.scatter(idx, value, _within_limits(m, region, idx), m.block, span)


# ----------------------------------------------------------------------------- copy, fill

def _moved(m, op, name: str):
    """(dst buffer, dst indices, op.src's values in dst's dtype) of a tile op that moves
    one region onto another (T.copy, a tile T.atomic_*), the two walked in step."""
    _top_level(m, op)
    src, s_starts = _region(m, op.src)
    dst, d_starts = _region(m, op.dst)
    s_axes, d_axes = _axes(op.src), _axes(op.dst)
    extents = [op.dst.extents[d] for d in d_axes]
    if extents != [op.src.extents[d] for d in s_axes]:
        raise NotSupported(f"{name} regions disagree: {op.src.extents} vs {op.dst.extents}")
    value = _gather(m, src, _grid_indices(s_starts, op.src.extents, s_axes, extents), op.span,
                    op.src)
    idx = _grid_indices(d_starts, op.dst.extents, d_axes, extents)
    return dst, idx, convert(value, dst.dtype, op.span)


def copy(m, op) -> None:
    dst, idx, value = _moved(m, op, "T.copy")
    _scatter(m, dst, idx, value, op.span, op.dst)


def fill(m, op) -> None:
    _top_level(m, op)
    dst, starts = _region(m, op.dst)
    axes = _axes(op.dst)
    extents = [op.dst.extents[d] for d in axes]
    value = convert(m.expr(op.value), dst.dtype, op.span)
    _scatter(m, dst, _grid_indices(starts, op.dst.extents, axes, extents), value, op.span,
             op.dst)


# ----------------------------------------------------------------------------- gemm

def _matrix(m, region, transpose: bool, span) -> V:
    """The operand as an (rows, cols) matrix of op(X): its last two dims."""
    buf, starts = _region(m, region)
    rank = len(region.extents)
    if rank < 2 or any(e != 1 for e in region.extents[:-2]):
        raise NotSupported(f"T.gemm operand `{buf.name}` is not a matrix")
    axes = [rank - 2, rank - 1]
    extents = [region.extents[d] for d in axes]
    v = _gather(m, buf, _grid_indices(starts, region.extents, axes, extents), span, region)
    if transpose:
        v = V(v.a.T, v.dtype, None if v.poison is None else v.poison.T,
              None if v.mag is None else v.mag.T)
    return v


def gemm(m, op) -> None:
    _top_level(m, op)
    c_buf, c_starts = _region(m, op.c)
    rank = len(op.c.extents)
    c_axes = [rank - 2, rank - 1]
    c_idx = _grid_indices(c_starts, op.c.extents, c_axes, [op.c.extents[d] for d in c_axes])
    a = _matrix(m, op.a, op.transpose_a, op.span)
    b = _matrix(m, op.b, op.transpose_b, op.span)
    cdt = c_buf.dtype
    a, b = convert(a, cdt, op.span), convert(b, cdt, op.span)
    if op.clear_accum:
        acc = const(0, cdt, m.magnitudes)
        acc = V(np.broadcast_to(acc.a, (a.a.shape[0], b.a.shape[1])).copy(), cdt, None,
                None if acc.mag is None else np.zeros((a.a.shape[0], b.a.shape[1])))
    else:
        acc = _gather(m, c_buf, c_idx, op.span, op.c)
    for k in range(a.a.shape[1]):
        ak = _column(a, k)
        bk = _row(b, k)
        acc = binary("+", acc, binary("*", ak, bk, cdt, m.magnitudes), cdt, m.magnitudes)
    _scatter(m, c_buf, c_idx, acc, op.span, op.c)


def _column(v: V, k: int) -> V:
    return V(v.a[:, k:k + 1], v.dtype, None if v.poison is None else v.poison[:, k:k + 1],
             None if v.mag is None else v.mag[:, k:k + 1])


def _row(v: V, k: int) -> V:
    return V(v.a[k:k + 1, :], v.dtype, None if v.poison is None else v.poison[k:k + 1, :],
             None if v.mag is None else v.mag[k:k + 1, :])


# ----------------------------------------------------------------------------- reduce

_COMBINE = {"sum": "+", "abssum": "+", "max": "max", "absmax": "max", "min": "min"}


def reduce(m, op) -> None:
    _top_level(m, op)
    src, dst = m.buf(op.src), m.buf(op.dst)
    whole_src = tuple(np.asarray(i, np.int64) for i in np.indices(src.shape))
    value = convert(_gather(m, src, whole_src, op.span), dst.dtype, op.span)
    keep = len(dst.shape) == len(src.shape)       # dst keeps the dim with extent 1
    out_shape = tuple(n for d, n in enumerate(src.shape) if d != op.dim)
    d_idx = tuple(np.asarray(i, np.int64) for i in np.indices(out_shape))
    if keep:
        d_idx = d_idx[:op.dim] + (np.zeros(out_shape, np.int64),) + d_idx[op.dim:]
    if op.clear:
        acc = _identity(op.kind, dst.dtype, out_shape, m.magnitudes)
    else:
        acc = _gather(m, dst, d_idx, op.span)
    combine = _COMBINE[op.kind]
    for k in range(src.shape[op.dim]):
        x = _take(value, op.dim, k)
        if op.kind in ("abssum", "absmax"):
            x = call("abs", [x], dst.dtype, m.magnitudes)
        acc = binary(combine, acc, x, dst.dtype, m.magnitudes)
    _scatter(m, dst, d_idx, acc, op.span)


def _take(v: V, dim: int, k: int) -> V:
    def cut(a):
        return None if a is None else np.take(a, k, axis=dim)
    return V(cut(v.a), v.dtype, cut(v.poison), cut(v.mag))


def _identity(kind: str, dtype: str, shape, magnitudes: bool) -> V:
    c = const(dtypes.reduction_identity(kind, dtype), dtype, magnitudes)
    mag = None if c.mag is None else np.zeros(shape)
    return V(np.broadcast_to(c.a, shape).copy(), dtype, None, mag)


# ----------------------------------------------------------------------------- atomics

def tile_atomic(m, op) -> None:
    dst, idx, value = _moved(m, op, f"T.atomic_{op.op}")
    atomic_update(m, dst, op.op, idx, value, _within_limits(m, op.dst, idx), op.span)


_ATOMIC = {"add": "+", "max": "max", "min": "min"}


def atomic_update(m, buf, op: str, idx: tuple, value: V, active, span) -> None:
    """Read-modify-write of each active element, one lane after another (lanes that
    hit one element combine in lane order, as atomics in some order would)."""
    shape = np.broadcast(*idx, active, value.a).shape if idx else np.shape(active)
    idx = tuple(np.broadcast_to(i, shape) for i in idx)
    active = np.broadcast_to(active, shape)
    flat_active = np.flatnonzero(active)
    if flat_active.size == 0:
        return
    lanes = [tuple(int(i.flat[f]) for i in idx) for f in flat_active]
    if len(set(lanes)) == len(lanes):          # no two lanes on one element: at once
        _combine(m, buf, op, idx, value, active, span)
        return
    for f in flat_active:
        one = np.zeros(shape, bool)
        one.flat[f] = True
        _combine(m, buf, op, idx, value, one, span)


def _combine(m, buf, op, idx, value, active, span) -> None:
    old = buf.gather(idx, active, None, span)
    new = binary(_ATOMIC[op], old, value, buf.dtype, m.magnitudes)
    new.poison = either(old.poison, value.poison)
    buf.scatter(idx, new, active, None, span)


__all__ = ["copy", "fill", "gemm", "reduce", "tile_atomic", "atomic_update"]
