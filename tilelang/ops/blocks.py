"""Cache blocking for the library GEMM: BLOCK_M/N/K (BLIS's MC/NC/KC) from the target.

BLOCK_K keeps one register-tile panel of B (BLOCK_K x NR floats) in half of L1 while the
micro-kernel sweeps the rows of A; the A tile (BLOCK_M x BLOCK_K) takes a third of L2, so
that it stays there across the sweeps of a block while a column of the C fragment and
the next B panel stream through L2 beside it (L2 is not a perfect LRU: an A tile of half
of L2 was evicted between sweeps and ran ~30% slower; a third ran fastest). A tall BLOCK_M matters most: the
B tile is copied (packed) once per block row, BLOCK_M rows of C per copy. Each size is then evened out over the
blocks its dimension needs, so a ragged size wastes at most a register tile per block
instead of most of a block (every block computes its whole tile, past-the-edge rows as
zeros), and the grid is split further until every thread has a few blocks.
"""
from __future__ import annotations

from ..passes.cpu_target import host
from ..runtime.launch import CHUNKS_PER_THREAD, default_num_threads

_FLOAT_BITS = 32
_BLOCKS_PER_THREAD = 3
_MAX_BLOCK_M_TILES = 48     # bounds the C fragment (BLOCK_M x BLOCK_N, on the stack)
# BLOCK_N up to 704 rather than 512: A is packed once per block column, and the wider
# block ran ~1% faster at 2048^3 and 1025^3 on one thread and ~10% at 257x4097x513 on
# two; the C fragment is then at most 672 x 704 floats (1.9 MB of the thread's stack)
_MAX_BLOCK_N = 704


def choose_blocks(m: int, n: int, k: int, tile_size=None, block=None,
                  num_threads: int | None = None) -> tuple[int, int, int]:
    if block is not None:
        bm, bn, bk = (int(x) for x in block)
        if min(bm, bn, bk) < 1:
            raise ValueError(f"gemm: block sizes must be positive, got {block}")
        return bm, bn, bk
    target = host()
    mr, nr = target.register_tile(_FLOAT_BITS)
    lanes = target.lanes(_FLOAT_BITS)
    # BLOCK_K need not be a multiple of anything (the micro-kernel's k loop takes any
    # trip count, and B's panels stay aligned whatever their length), and every
    # zero-padded k step past K is a whole wasted rank-1 update of the block: split K
    # exactly (K = 1000 -> 8 x 125, not 8 x 128; 1025 -> 9 x 114, not 9 x 120).
    bk = _even(k, _clamp(target.l1d // 2 // (nr * 4), 64, 512), 1)
    if tile_size is not None:
        if int(tile_size) < 1:
            raise ValueError(f"gemm: tile_size must be positive, got {tile_size}")
        return int(tile_size), int(tile_size), bk
    bm_target = _clamp(target.l2 // 3 // (bk * 4) // mr * mr, mr, _MAX_BLOCK_M_TILES * mr)
    bn_target = _clamp(target.l2 // 2 // (bk * 4) // nr * nr, nr, _MAX_BLOCK_N)
    gm, gn = _count(m, bm_target), _count(n, bn_target)
    # the threads the launch will use (TILELANG_NUM_THREADS or all cores): blocks cut
    # for two threads run ~15% slower on one
    threads = num_threads or default_num_threads()
    want = _BLOCKS_PER_THREAD * threads
    while gm * gn < want and (gm < _count(m, mr) or gn < _count(n, lanes)):
        if m / gm >= n / gn and gm < _count(m, mr):
            gm += 1
        else:
            gn += 1
    # The runtime hands each thread chunks of about n / (threads * CHUNKS) blocks: a
    # block count that is a multiple of threads * CHUNKS gives every thread the same
    # number of whole chunks (no thread idles at the end while another finishes two).
    rounds = threads * CHUNKS_PER_THREAD
    if threads > 1 and (gm * gn) % rounds and gm * gn < 8 * rounds:
        grids = [(gm + a, gn + b) for a in range(4) for b in range(4)
                 if gm + a <= _count(m, mr) and gn + b <= _count(n, lanes)
                 and ((gm + a) * (gn + b)) % rounds == 0]
        if grids:
            gm, gn = min(grids, key=lambda g: (g[0] * g[1], abs(g[0] - g[1])))
    return _round_up(_count(m, gm), mr), _round_up(_count(n, gn), lanes), bk


def _even(size: int, target: int, step: int) -> int:
    """The block size near `target` that splits `size` into equal blocks (a multiple
    of `step`)."""
    return _round_up(_count(size, _count(size, target)), step)


def _count(size: int, block: int) -> int:
    return max(1, -(-size // block))


def _clamp(x: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, x))


def _round_up(x: int, step: int) -> int:
    return max(step, -(-x // step) * step)
