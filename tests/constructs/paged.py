"""A paged cache and its gather kernel, shared by the construct tests: KV blocks of BLK
rows, a permuted block table, per-row lengths; cache rows past a length (and unused
blocks) hold NaN, which must never reach a result."""
from __future__ import annotations

import numpy as np

BLK = 8
D = 32

# Row sums over the first lens[b] rows of sequence b's paged cache: the block index is
# loaded from the block table (a gather) and the last block's rows past the length are
# masked by a dynamic slice (`0:rows`, rows loop-carried).
GATHER_SUM = '''import tilelang.language as T

B = T.dynamic("B")
NB = T.dynamic("NB")
MAXB = T.dynamic("MAXB")
D = 32
BLK = 8
dtype = "float32"


@T.prim_func
def gather_sum(KV: T.Tensor((NB, BLK, D), dtype), block_table: T.Tensor((B, MAXB), "int32"),
               lens: T.Tensor((B,), "int32"), O: T.Tensor((B, D), "float32")):
    with T.Kernel(B, threads=128) as bx:
        KV_s = T.alloc_shared((BLK, D), "float32")
        acc = T.alloc_fragment((D,), "float32")
        T.clear(acc)
        for i in range(T.ceildiv(lens[bx], BLK)):
            rows = lens[bx] - i * BLK
            T.copy(KV[block_table[bx, i], 0:rows, 0:D], KV_s)
            T.reduce_sum(KV_s, acc, dim=0, clear=False)
        T.copy(acc, O[bx, 0:D])
'''


def paged_inputs(lens, seed=0, dtype=np.float32, spare=2):
    """(KV, block_table, lens): every sequence's blocks at permuted places of the cache,
    NaN past each length and in the `spare` unused blocks; table entries past the blocks
    in use hold 2147480000 (FlashMLA's test does the same)."""
    rng = np.random.default_rng(seed)
    lens = np.asarray(lens, np.int32)
    used = [-(-int(n) // BLK) for n in lens]
    maxb = max(1, max(used))
    nb = sum(used) + spare
    kv = np.full((nb, BLK, D), np.nan, np.float32)
    perm = rng.permutation(nb)
    table = np.full((len(lens), maxb), 2147480000, np.int32)
    k = 0
    for b, (n, u) in enumerate(zip(lens, used)):
        for i in range(u):
            blk = perm[k]
            k += 1
            table[b, i] = blk
            rows = min(BLK, int(n) - i * BLK)
            kv[blk, :rows] = rng.standard_normal((rows, D))
    return kv.astype(dtype), table, lens


def reference_sums(kv, table, lens):
    out = np.zeros((len(lens), D), np.float64)
    for b, n in enumerate(lens):
        rows = kv[table[b, :-(-int(n) // BLK)]].reshape(-1, D)[:int(n)]
        out[b] = rows.astype(np.float64).sum(0)
    return out
