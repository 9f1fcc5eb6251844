"""`prefetch`: a CPU `T.Pipelined` loop fetches its next iteration's tiles while it computes.

On the CPU there is no copy engine to run `T.copy` ahead, so a pipelined loop

    for k in T.Pipelined(n, num_stages=2):
        T.copy(A[by * BM, k * BK], A_s)            # global -> block-local
        T.copy(B[k * BK, bx * BN], B_s)
        <compute: a nest of loops>

would otherwise pay the full cache-miss latency of every row its copies read (rows of a
large tensor, far apart, defeat the hardware prefetcher at every row start). This pass
gives each global source region of the copies, at iteration k + 1, to `T.prefetch`,
spread over the iterations of the compute nest so that the requests trickle out while
the FMAs run, instead of stalling in one burst:

    for k in T.Pipelined(n, num_stages=2):
        T.copy(...)
        for jo in range(16):
            for io in range(37):
                if k + 1 < n:
                    T.prefetch(A[by * BM:by * BM + BM, (k + 1) * BK:(k + 1) * BK + BK],
                               part=jo * 37 + io, parts=592)
                    T.prefetch(B[...], part=jo * 37 + io, parts=592)
                for k_0 in range(BK):                      # a register tile
                    ...

The prefetches go as deep into the nest as keeps at least `_MIN_LINES` cache lines per
part, never into a register tile's own k loop (its body must stay the micro-kernel
form). `num_stages=1` asks for no overlap, so such loops are left alone.
"""
from __future__ import annotations

from dataclasses import replace
from math import prod

from .. import dtypes
from ..ir import (Binary, Const, Copy, For, If, Module, Region, Seq, Stmt, Var, rewrite,
                  substitute, walk)
from ..ir.canon import canonicalize, make_body
from ..ir.nodes import Prefetch
from .fold import make_const

_LINE = 64
_MIN_LINES = 8      # per part: fewer would mean a test and a loop around almost nothing


def prefetch(module: Module) -> Module:
    return canonicalize(rewrite(module, _visit))


def _visit(node):
    if isinstance(node, For) and node.kind == "pipelined" \
            and (node.annotation("num_stages") or 1) >= 2:
        return _pipelined(node)
    return None


def _pipelined(loop: For) -> For | None:
    stmts = list(loop.body.stmts if isinstance(loop.body, Seq) else (loop.body,))
    copies = [i for i, s in enumerate(stmts) if _reads_global_per_iteration(s, loop.var)]
    if not copies:
        return None
    at = next((i for i in range(copies[-1] + 1, len(stmts)) if isinstance(stmts[i], For)),
              None)
    if at is None:
        return None
    nxt = Binary("+", loop.var, make_const(1, loop.var.dtype), loop.var.dtype)
    regions = [_shifted(stmts[i].src, loop.var, nxt) for i in copies]
    lines = sum(_lines(r) for r in regions)
    end = loop.extent if _zero(loop.min) else Binary("+", loop.min, loop.extent, loop.var.dtype)
    guard = Binary("<", nxt, end, "bool")
    stmts[at] = _spread(stmts[at], regions, lines, guard)
    return replace(loop, body=make_body(stmts, loop.body.span))


def _reads_global_per_iteration(s: Stmt, var: Var) -> bool:
    """A T.copy from a global tensor whose source moves with the loop variable."""
    return isinstance(s, Copy) and s.src.buffer.scope == "global" \
        and any(n == var for st in s.src.starts for n in walk(st))


def _shifted(r: Region, var: Var, nxt) -> Region:
    return replace(r, starts=tuple(substitute(s, {var: nxt}) for s in r.starts))


def _lines(r: Region) -> int:
    row_bytes = r.extents[-1] * dtypes.nbytes(r.buffer.dtype)
    return prod(r.extents[:-1]) * -(-row_bytes // _LINE)


def _spread(nest: For, regions, lines: int, guard) -> Stmt:
    """`nest` with the prefetches of `regions` at the start of its deepest loop body that
    still gets `_MIN_LINES` lines per iteration."""
    path, total = [], 1
    loop = nest
    while isinstance(loop, For) and isinstance(loop.extent, Const) \
            and loop.kind in ("serial", "parallel") and not _is_register_tile(loop) \
            and lines // (total * int(loop.extent.value)) >= _MIN_LINES:
        path.append(loop)
        total *= int(loop.extent.value)
        loop = loop.body
    part = _flat_index(path)
    fetch = If(guard, make_body([Prefetch(r, part, total) for r in regions]))
    if not path:
        return make_body([fetch, nest])
    return _insert(nest, len(path), fetch)


def _is_register_tile(loop: For) -> bool:
    """The k loop of the register-tile form (passes/tiling.py): its body is the tile."""
    return isinstance(loop.body, For) and loop.body.kind in ("unroll", "vectorized")


def _flat_index(path) -> object:
    """The row-major iteration number of the loops in `path` (0 when there are none)."""
    index = make_const(0, "int32")
    for f in path:
        offset = f.var if _zero(f.min) else Binary("-", f.var, f.min, f.var.dtype)
        index = offset if _zero(index) else Binary(
            "+", Binary("*", index, f.extent, "int32"), offset, "int32")
    return index


def _zero(e) -> bool:
    return isinstance(e, Const) and e.value == 0


def _insert(loop: For, depth: int, fetch: Stmt) -> For:
    if depth == 1:
        return replace(loop, body=make_body([fetch, loop.body]))
    return replace(loop, body=_insert(loop.body, depth - 1, fetch))


__all__ = ["prefetch"]
