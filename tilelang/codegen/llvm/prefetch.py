"""`T.prefetch(region, part=p, parts=n)` -> `llvm.prefetch` of every cache line of part p.

The region's rows (every index but the last) are numbered in row-major order and cut into
n equal runs; part p walks rows [p * R / n, (p + 1) * R / n) and prefetches each row's
lines into L2. L2, not L1: a prefetch is issued well ahead of its use (typically an
iteration of a pipelined loop ahead, spread over its compute), long enough for L1 to
evict it. Addresses are computed without `inbounds` (a prefetch past the tensor's end is a
harmless wasted request, and must not be poison).
"""
from __future__ import annotations

from math import prod

from llvmlite import ir

from ... import dtypes
from ...ir.nodes import Binary, Prefetch, Var
from .convert import intrinsic
from .types import I64

_LINE = 64
_LOCALITY_L2 = 2        # llvm.prefetch locality: 3 = L1 (prefetcht0), 2 = L2 (prefetcht1)


def emit(em, s: Prefetch) -> None:
    r = s.region
    row_dims = r.extents[:-1]
    rows = prod(row_dims)
    lo, hi = _part_rows(em, s, rows)
    row_bytes = r.extents[-1] * dtypes.nbytes(r.buffer.dtype)
    # one request per 64 bytes from the row's start, and one for its last byte: together
    # they touch every line of the row, whatever its alignment
    offsets = sorted(set(range(0, row_bytes, _LINE)) | {row_bytes - 1})
    index_vars = [Var(f"{r.buffer.name}.prefetch.{d}", "int64") for d in range(len(row_dims))]

    def row(t):
        for v, extent in zip(reversed(index_vars), reversed(row_dims)):
            em.ctx.env[v] = em.b.srem(t, ir.Constant(I64, extent))
            t = em.b.sdiv(t, ir.Constant(I64, extent))
        indices = [Binary("+", start, v, "int64") for start, v in zip(r.starts, index_vars)]
        ptr, _ = em.address(r.buffer, indices + [r.starts[-1]], inbounds=False)
        lines(em.b, ptr, offsets)

    em.counted_loop(I64, lo, hi, row, name=f"{r.buffer.name}.prefetch")


def _part_rows(em, s: Prefetch, rows: int):
    """[lo, hi): the rows of part `s.part` of `s.parts`."""
    if s.parts == 1:
        return ir.Constant(I64, 0), ir.Constant(I64, rows)
    b, n = em.b, ir.Constant(I64, s.parts)
    p = em.index64(s.part)
    lo = b.sdiv(b.mul(p, ir.Constant(I64, rows)), n)
    hi = b.sdiv(b.mul(b.add(p, ir.Constant(I64, 1)), ir.Constant(I64, rows)), n)
    return lo, hi


def lines(b: ir.IRBuilder, ptr, offsets, write: bool = False,
          locality: int = _LOCALITY_L2) -> None:
    """`llvm.prefetch` of the lines at byte `offsets` from `ptr`."""
    i8, i32 = ir.IntType(8), ir.IntType(32)
    fn = intrinsic(b.module, "llvm.prefetch.p0", ir.VoidType(),
                   [ir.PointerType(), i32, i32, i32])
    for off in offsets:
        q = ptr if off == 0 else b.gep(ptr, [ir.Constant(I64, off)], source_etype=i8)
        b.call(fn, [q, ir.Constant(i32, int(write)), ir.Constant(i32, locality),
                    ir.Constant(i32, 1)])
