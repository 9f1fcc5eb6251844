"""Cache blocking for the library GEMM: BLOCK_M/N/K (BLIS's MC/NC/KC) from the host's
machine description (targets/cpu/machine.py).

The micro-kernels of a block walk B's NR-wide panels, and for each panel every MR-row
tile of A. So one panel of B (BLOCK_K x NR floats) is reused from L1 by all the rows:
BLOCK_K makes it fill L1 (half of L1 ran 1-3% slower: twice the k steps, each with its
copies and C-tile round trips). The whole A tile (BLOCK_M x BLOCK_K) is swept once per
panel, from L2: it takes up to two thirds of L2, the C column and the next B panel
stream beside it. B's tile is read once per k step and need not stay anywhere, so
BLOCK_N is as wide as the C fragment (on the stack) allows: A is packed once per block
column, B once per block row. Each size is then evened out over the blocks its
dimension needs, so a ragged size wastes at most a register tile per block instead of
most of a block (every block computes its whole tile, past-the-edge rows as zeros), and
the grid is split further until every thread has a few blocks.
"""
from __future__ import annotations

from ..targets.cpu.machine import host
from ..runtime.launch import CHUNKS_PER_THREAD, default_num_threads

_FLOAT_BITS = 32
# Below this much work per thread, waking another thread costs more than it saves: 2 x
# 192^3 ran at 29 GFLOP/s on two threads and 37 on one, 2 x 320^3 at 85 and 68
_MIN_FLOP_PER_THREAD = 32_000_000
_BLOCKS_PER_THREAD = 3
_MAX_BLOCK_M_TILES = 48     # bounds the C fragment (BLOCK_M x BLOCK_N, on the stack)
# 704 rather than 512 ran ~1% faster at 2048^3 and 1025^3 on one thread and ~10% at
# 257x4097x513 on two; the C fragment is then at most 672 x 704 floats (1.9 MB of the
# thread's stack)
_MAX_BLOCK_N = 704


def launch_threads(m: int, n: int, k: int, num_threads: int | None) -> int:
    """The threads a GEMM of this shape is launched on: the caller's choice, else the
    default count, fewer when each thread would get too little work."""
    if num_threads is not None:
        return num_threads
    return max(1, min(default_num_threads(), 2 * m * n * k // _MIN_FLOP_PER_THREAD))


def choose_blocks(m: int, n: int, k: int, tile_size=None, block=None,
                  num_threads: int | None = None) -> tuple[int, int, int]:
    if block is not None:
        bm, bn, bk = (int(x) for x in block)
        if min(bm, bn, bk) < 1:
            raise ValueError(f"gemm: block sizes must be positive, got {block}")
        return bm, bn, bk
    machine = host()
    mr, nr = machine.register_tile(_FLOAT_BITS)
    lanes = machine.lanes(_FLOAT_BITS)
    # BLOCK_K need not be a multiple of anything (the micro-kernel's k loop takes any
    # trip count, and B's panels stay aligned whatever their length), and every
    # zero-padded k step past K is a whole wasted rank-1 update of the block: split K
    # exactly (K = 1000 -> 8 x 125, not 8 x 128; 1025 -> 9 x 114, not 9 x 120).
    bk = _even(k, _clamp(machine.l1d // (nr * 4), 64, 512), 1)
    if tile_size is not None:
        if int(tile_size) < 1:
            raise ValueError(f"gemm: tile_size must be positive, got {tile_size}")
        return int(tile_size), int(tile_size), bk
    bm_target = _clamp(machine.l2 * 2 // 3 // (bk * 4) // mr * mr, mr, _MAX_BLOCK_M_TILES * mr)
    bn_target = _MAX_BLOCK_N // nr * nr
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
