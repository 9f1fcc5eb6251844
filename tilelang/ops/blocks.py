"""Cache blocking for the library GEMM: BLOCK_M/N/K (BLIS's MC/NC/KC) from the target.

BLOCK_K keeps one register-tile panel of B (BLOCK_K x NR floats) in half of L1 while the
micro-kernel sweeps the rows of A; BLOCK_M x BLOCK_K of A and BLOCK_K x BLOCK_N of B stay
in L2 across a block. BLOCK_M is a multiple of MR so that no row tail is computed inside
a block unless M itself is ragged.
"""
from __future__ import annotations

from ..passes.cpu_target import host

_FLOAT_BITS = 32


def choose_blocks(m: int, n: int, k: int, tile_size=None, block=None) -> tuple[int, int, int]:
    if block is not None:
        bm, bn, bk = (int(x) for x in block)
        if min(bm, bn, bk) < 1:
            raise ValueError(f"gemm: block sizes must be positive, got {block}")
        return bm, bn, bk
    target = host()
    mr, nr = target.register_tile(_FLOAT_BITS)
    bk = _clamp(target.l1d // 2 // (nr * 4), 128, 512)
    bk = min(bk, _round_up(k, 8))
    if tile_size is not None:
        if int(tile_size) < 1:
            raise ValueError(f"gemm: tile_size must be positive, got {tile_size}")
        return int(tile_size), int(tile_size), bk
    bm = max(mr, (target.l2 // 4 // (bk * 4)) // mr * mr)
    bm = min(bm, _round_up(m, mr))
    bn = max(nr, (target.l2 // 2 // (bk * 4)) // nr * nr)
    bn = min(bn, _round_up(n, nr))
    return bm, bn, bk


def _clamp(x: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, x))


def _round_up(x: int, step: int) -> int:
    return max(step, -(-x // step) * step)
