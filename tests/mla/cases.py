"""Test data as FlashMLA's test makes it: varlen lengths around a mean, optionally some
zero, a permuted paged layout, NaN in every cache slot past each length and in unused
blocks, 2147480000 in block-table entries past the blocks in use; and the checks with
FlashMLA's tolerances against the float64 reference."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from tilelang.ops.mla import cosine_diff, mla_decode_reference

DTYPES = {"bf16": ml_dtypes.bfloat16, "fp16": np.float16}


def make_case(b, s_q, h_q, h_kv, mean, varlen=True, zero=False, seed=0, dtype="bf16"):
    rng = np.random.default_rng(seed)
    lens = np.full(b, mean, np.int32)
    if varlen:
        lens = np.maximum(rng.normal(mean, mean / 2, b), s_q).astype(np.int32)
    if zero:
        lens[rng.standard_normal(b) > 0] = 0
    pad = max(256, -(-int(lens.max()) // 256) * 256)
    nblk = b * pad // 64
    table = rng.permutation(nblk).astype(np.int32).reshape(b, pad // 64)
    kv = np.clip(rng.standard_normal((nblk, 64, h_kv, 576)) / 10, -1, 1).astype(np.float32)
    for i, n in enumerate(int(x) for x in lens):
        used = -(-n // 64)
        kv[table[i, used:]] = np.nan
        if n % 64:
            kv[table[i, used - 1], n % 64:] = np.nan
        table[i, used:] = 2147480000
    q = np.clip(rng.standard_normal((b, s_q, h_q, 576)) / 10, -1, 1)
    dt = DTYPES[dtype]
    return q.astype(dt), kv.astype(dt), table, lens


def check(out, lse, q, kv, table, lens, causal=False, out_abs=8e-4, cos=1e-5):
    """FlashMLA's checks: out within abs / rel 2.01/128 and cosine diff; lse within
    abs 1e-6 / rel 8.01/65536, +inf exactly where the reference has it."""
    ref_out, ref_lse = mla_decode_reference(q, np.nan_to_num(kv.astype(np.float32)), table,
                                            lens, 512, causal=causal)
    o = np.asarray(out, np.float64)
    assert not np.isnan(o).any()
    assert cosine_diff(o, ref_out) < cos
    assert np.all(np.abs(o - ref_out) <= out_abs + 2.01 / 128 * np.abs(ref_out))
    assert np.array_equal(np.isinf(lse), np.isinf(ref_lse))
    fin = np.isfinite(ref_lse)
    assert np.all(np.abs(lse[fin] - ref_lse[fin]) <= 1e-6 + 8.01 / 65536 * np.abs(ref_lse[fin]))
    assert np.all(o[(lens == 0)] == 0)
