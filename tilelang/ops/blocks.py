"""Cache blocking for the library GEMM: BLOCK_M/N/K from the host's machine description
(targets/cpu/machine.py), chosen by a small cost model.

Within a block the register tiles walk row panels: the MR x BLOCK_K panel of A is
copied right before its tiles while the packed BLOCK_K x NR panels of B stream past it
from L2; BLOCK_K makes one B panel about fill L1 (sized for A's panel and B's together,
256 rather than 342 at n = 2048 on a 48 KiB L1, it ran no faster in the same run), and
no larger than keeps the whole packed B tile (BLOCK_K x BLOCK_N), which every row panel
streams, within `_B_TILE_L2` of L2.
Across blocks, what costs is copying: every block copies its A rows once per k step and
packs its B tile once per k step, so A is copied N / BLOCK_N times over and B M / BLOCK_M times. On this kind of
kernel the copies are the main loss besides the micro-kernel itself (measured on a
2-port AVX-512 core at n = 2048, blocks 518 x 688: the same kernel with its copies
taken out of the k loop ran 16% faster), so blocks are as large as the block's memory
allows (`_LOCAL_BUDGET` on one thread, `_THREADED_BUDGET` on several: its B tile, C
fragment and A row panel; the C fragment costs no pass of its own, the tiling pass
clearing and writing back each row panel's rows within the k loop). BLOCK_N stays narrow
enough that the packed B tile fits `_B_TILE_L2` of L2 with BLOCK_K at least `_BK_KEPT`
of its L1 size (a wider tile would cut BLOCK_K further, and every k step is a pass over
C). Columns: a block computes whole NR-wide register tiles past the
matrix's edge (zeros), so BLOCK_N is a multiple of NR that splits N evenly. Rows: BLOCK_M
splits M exactly and the tiling pass gives a block's last m % MR rows a tail tile of
their own, rather than BLOCK_M rounded up to a multiple of MR (2048 = 4 x 512, each
block 36 row panels and an 8-row tail, not 4 x 518 = 2072 rows of which 24 are zeros
that the last block also copies through its guarded edge path: 1.3-4.6% faster, median
+2.4%, over five same-run comparisons on a 2-port AVX-512 core). A tail of r rows keeps
2r accumulator chains in flight, so one thinner than `_TAIL_ROWS` waits on the FMA
latency and costs as long as `_TAIL_ROWS` rows. And the blocks are dealt to the threads in
the runtime's chunks, so a count that leaves a thread idle at the end costs what that
thread does not do. `_cost` weighs the three.
"""
from __future__ import annotations

from functools import lru_cache

from ..targets.cpu.machine import host
from ..runtime.launch import CHUNKS_PER_THREAD, default_num_threads

_FLOAT_BITS = 32
_BYTES = 4
# Below this much work per thread, waking another thread costs more than it saves: 2 x
# 192^3 ran at 29 GFLOP/s on two threads and 37 on one, 2 x 320^3 at 85 and 68
_MIN_FLOP_PER_THREAD = 32_000_000
# One block's B tile, C fragment and A row panel (float32; past a few hundred KiB the
# kernel takes its block-local memory from the heap, once per chunk of blocks a thread
# runs, codegen/llvm/localmem.py). At n = 2048 on one thread of a 2-port AVX-512 core,
# 12 MiB (blocks 2048 x 1024 x 293: B packed once, not 4 times) ran 0.8-2.0% faster than
# 4 MiB (512 x 1024 x 293) in alternating runs of 41 and 61 turns, with the C fragment
# cleared and written back within the k loop; with the whole-tile clear and copy after
# it, the same blocks ran 1% slower
_LOCAL_BUDGET = 12 << 20
# With several threads, blocks keep to 4 MiB so that each thread runs several of the
# runtime's dynamic chunks: at n = 2048 on 2 threads of a shared host, 2 blocks of
# 2048 x 1024 ran 6% slower than 8 of 512 x 1024 (a thread that loses its core for a
# while holds up the whole launch when there is nothing left to hand to the other)
_THREADED_BUDGET = 4 << 20
# The cost of copying, per element copied per multiply-add of the block (1/BLOCK_M +
# 1/BLOCK_N per k step): 0.16 at 1/518 + 1/688, measured as above
_COPY_WEIGHT = 47.0
_SEARCH = 12            # block counts tried per dimension beyond the fewest that fit
# A register-tile row tail of fewer rows than this runs as long as this many: each row
# keeps NR / lanes accumulator chains, and an FMA unit pair needs ~8 in flight (4-cycle
# latency, two ports) to issue every cycle
_TAIL_ROWS = 4
# The packed B tile's (BLOCK_K x BLOCK_N) share of L2. At n = 2048 on a 2 MiB L2 (blocks
# 512 x 1024), 0.57 of L2 (BLOCK_K 293) ran 2.9-4.2% faster than 0.67 (BLOCK_K 342) in
# five same-run comparisons on one thread (level on two); 0.5 (BLOCK_K 256) was level
# with 0.67 within the noise. BLIS sizes its L2-resident packed block alike (about half)
_B_TILE_L2 = 0.6
# The least share of its L1-sized value that BLOCK_K may be cut to for a wider B tile:
# the cost model counts copies, not passes over C (one a k step), so without this floor
# it widens BLOCK_N and cuts BLOCK_K past what pays (257 x 4097 x 513 to 74-129 from 171-257)
_BK_KEPT = 2 / 3


def launch_threads(m: int, n: int, k: int, num_threads: int | None) -> int:
    """The threads a GEMM of this shape is launched on: the caller's choice, else the
    default count, fewer when each thread would get too little work."""
    if num_threads is not None:
        return num_threads
    return max(1, min(default_num_threads(), 2 * m * n * k // _MIN_FLOP_PER_THREAD))


def choose_blocks(m: int, n: int, k: int, tile_size=None, block=None,
                  num_threads: int | None = None, k_step: int = 1) -> tuple[int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K); BLOCK_K a multiple of `k_step` (2 for bf16, whose
    register tiles may take k steps in pairs: an odd BLOCK_K leaves a lone last step
    per block to a slower tile)."""
    if block is not None:
        bm, bn, bk = (int(x) for x in block)
        if min(bm, bn, bk) < 1:
            raise ValueError(f"gemm: block sizes must be positive, got {block}")
        return bm, bn, bk
    machine = host()
    mr, nr = machine.register_tile(_FLOAT_BITS)
    # BLOCK_K need not be a multiple of anything (the micro-kernel's k loop takes any
    # trip count, and B's panels stay aligned whatever their length), and every
    # zero-padded k step past K is a whole wasted rank-1 update of the block: split K
    # exactly (K = 1000 -> 8 x 125, not 8 x 128; 1025 -> 9 x 114, not 9 x 120).
    bk = _even(k, _clamp(machine.l1d // (nr * _BYTES), 64, 512), k_step)
    if tile_size is not None:
        if int(tile_size) < 1:
            raise ValueError(f"gemm: tile_size must be positive, got {tile_size}")
        return int(tile_size), int(tile_size), bk
    # the threads the launch will use (TILELANG_NUM_THREADS or all cores): blocks cut
    # for two threads run ~15% slower on one
    threads = num_threads or default_num_threads()
    lanes = machine.lanes(_FLOAT_BITS)
    widest_n = int(_B_TILE_L2 * machine.l2) // (_BYTES * max(1, int(bk * _BK_KEPT)))
    budget = _LOCAL_BUDGET if threads == 1 else _THREADED_BUDGET
    bm, bn = _best_grid(m, n, bk, mr, nr if n >= nr else lanes, threads, widest_n, budget)
    # every row panel streams the whole packed B tile from L2, so it must stay there
    # while C's rows and A's panels pass through: at most `_B_TILE_L2` of L2
    most = int(_B_TILE_L2 * machine.l2) // (bn * _BYTES)
    if bk > most:
        bk = _even(k, max(most, k_step), k_step)
    return bm, bn, bk


@lru_cache(maxsize=256)
def _best_grid(m: int, n: int, bk: int, mr: int, nr: int, threads: int,
               widest_n: int, budget: int) -> tuple[int, int]:
    """The (BLOCK_M, BLOCK_N) of least `_cost` among the grids whose blocks fit `budget`
    bytes, with BLOCK_N at most `widest_n` (unless one register tile is wider)."""
    best = None
    for gm in _counts(m, mr, bk, nr, budget):
        bm = _count(m, gm)
        for gn in _counts(n, nr, bk, bm, budget, widest_n):
            bn = _round_up(_count(n, gn), nr)
            if (_arena(bm, bn, bk, mr) > budget or bn > widest_n) \
                    and (bm > mr or bn > nr):
                continue
            cost = _cost(m, n, bm, bn, mr, threads)
            if best is None or cost < best[0]:
                best = (cost, bm, bn)
    return best[1], best[2]


def _counts(size: int, step: int, bk: int, other: int, budget: int,
            widest: int | None = None) -> range:
    """Block counts along a dimension of `size`: from the fewest whose blocks could fit
    `budget` (beside a block of `other` along the other dimension) and be at most
    `widest`, up `_SEARCH` more, and never past one register tile per block."""
    widest = max(step, min((budget // _BYTES) // (other + bk), widest or size))
    lo = _count(size, widest)
    return range(lo, min(lo + _SEARCH, _count(size, step)) + 1)


def _arena(bm: int, bn: int, bk: int, mr: int) -> int:
    """The block's stack: B's tile, the C fragment and A's row panel (the tiling pass
    sinks A's copy into the row panels, so the block holds MR rows of A, not BM)."""
    return _BYTES * (mr * bk + bk * bn + bm * bn)


def _cost(m: int, n: int, bm: int, bn: int, mr: int, threads: int) -> float:
    """Time of the whole GEMM in multiply-adds of useful work: the padded area (a thin
    row tail counted at its `_TAIL_ROWS` floor), the copies, and the rounds of blocks
    the slowest thread runs."""
    gm, gn = _count(m, bm), _count(n, bn)
    tail = bm % mr
    rows = bm - tail + (max(tail, _TAIL_ROWS) if tail else 0)
    padded = gm * rows * gn * bn / (m * n)
    copies = 1.0 + _COPY_WEIGHT * (1.0 / bm + 1.0 / bn)
    return padded * copies * _imbalance(gm * gn, threads)


def _imbalance(blocks: int, threads: int) -> float:
    """How much longer than an even split the runtime's chunks take: the busiest thread
    runs ceil(chunks / threads) chunks (runtime/launch.py hands out chunks of
    ceil(blocks / (threads * CHUNKS_PER_THREAD)) blocks)."""
    workers = min(threads, blocks)
    chunk = _count(blocks, workers * CHUNKS_PER_THREAD)
    chunks = _count(blocks, chunk)
    rounds = _count(chunks, workers)
    return rounds * chunk * threads / blocks


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
