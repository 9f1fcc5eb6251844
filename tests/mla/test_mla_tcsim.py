"""The MLA kernels on tcsim:tiny at small sizes (bf16 tiles for the tensor core; a bf16
/ fp16 cache runs `mla_decode_ws`, the overlapped schedule), against the float64
reference; the gathered cache blocks are counted. On h100_like the overlapped schedule
keeps the tensor core busy under the softmax where `mla_decode`'s does not."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang
from tilelang.ops.mla import interface, kernels
from tilelang.ops.mla.scheduler import forced_splits, schedule

from .cases import check, make_case


def _run_tcsim(q, kv, table, lens, causal=False, parts=3, fp8=False):
    b, s_q, h_q, _ = q.shape
    h_kv = kv.shape[2]
    rows = s_q * h_q // h_kv
    k = kernels.decode_kernel(q.dtype.name, rows, fp8, causal, target="tcsim:tiny")
    meta, splits = schedule(lens, parts)
    views, stride = kernels.cache_rows(kv, fp8)
    qv = np.ascontiguousarray(q.reshape(b, s_q, h_kv, rows // s_q, 576)
                              .transpose(0, 2, 1, 3, 4).reshape(b, h_kv, rows, 576))
    out = np.zeros((b, h_kv, rows, 512), q.dtype)
    lse = np.zeros((b, h_kv, rows), np.float32)
    k(qv, *[np.ascontiguousarray(v) for v in views], table, lens, meta, splits, out, lse,
      576 ** -0.5 * interface.LOG2E, s_q, rows // s_q, stride)
    out = out.reshape(b, h_kv, s_q, rows // s_q, 512).transpose(0, 2, 1, 3, 4)
    lse = lse.reshape(b, h_kv, s_q, rows // s_q).transpose(0, 1, 3, 2).reshape(b, h_q, s_q)
    return out.reshape(b, s_q, h_q, 512), lse, k.last_report


def test_tcsim_decode_matches_the_reference():
    q, kv, table, lens = make_case(3, 1, 16, 1, 100, zero=True, seed=21)
    out, lse, report = _run_tcsim(q, kv, table, lens)
    check(out, lse, q, kv, table, lens, cos=2e-5)
    assert report.bytes["gather"] == lens.sum() * 576 * 2      # the tokens in use, once


def test_tcsim_overlapped_schedule_ragged_tiles():
    # 64 heads x s_q 2 = two head blocks; lengths 150, 105, 37: ragged last tiles,
    # one request ending in the first half of a block; causal; forced splits cut
    # requests mid-way (runs starting at a block > 0)
    q, kv, table, lens = make_case(3, 2, 64, 1, 90, seed=24)
    assert sorted(n % 64 < 32 for n in lens) == [False, False, True]
    with forced_splits(2):
        out, lse, _ = _run_tcsim(q, kv, table, lens, causal=True, parts=4)
    check(out, lse, q, kv, table, lens, causal=True, cos=2e-5)


def _decode_cycles(kernel: str):
    """(cycles, MMA busy share, MMA share waiting) of a timing run on h100_like: 2
    requests of 2048 tokens, 128 heads x s_q 2, 2 parts (8 blocks on 8 cores)."""
    b, s_q, h_q, s_k = 2, 2, 128, 2048
    lens = np.full(b, s_k, np.int32)
    meta, splits = schedule(lens, 2)
    table = np.random.default_rng(0).permutation(b * s_k // 64).astype(np.int32) \
        .reshape(b, s_k // 64)
    k = tilelang.compile(kernels.SOURCE, kernel=kernel, target="tcsim:h100_like",
                         defines=dict(TILE_DTYPE="bfloat16", BLOCK_H=64, CAUSAL=True))
    rows = s_q * h_q
    k(((b, 1, rows, 576), "bfloat16"), ((b * s_k, 1, 576), "bfloat16"), table, lens, meta,
      splits, ((b, 1, rows, 512), "bfloat16"), ((b, 1, rows), "float32"), 0.06, s_q, h_q,
      64, mode="timing")
    r = k.last_report
    return r.cycles, r.engine_busy["MMA"], r.engine_stalls["MMA"]["sem_wait"]


def test_overlapped_schedule_keeps_the_tensor_core_busy():
    # the same work; FlashAttention-2's order leaves the tensor core waiting for each
    # block's softmax, the overlapped one multiplies under it. It gains less than the
    # softmax's share: its 64x32 QK^T waits on its shared-memory operands (192 bytes a
    # clock where 128 arrive; docs/tcsim.md, FlashMLA rows), where FA2's 64x64 does not
    fa2, ws = _decode_cycles("mla_decode"), _decode_cycles("mla_decode_ws")
    assert ws[0] < 0.95 * fa2[0]
    assert ws[1] > 1.25 * fa2[1]
    assert ws[2] < 0.25 * fa2[2]


@pytest.mark.slow
def test_tcsim_causal_and_forced_splits():
    q, kv, table, lens = make_case(2, 2, 16, 1, 150, seed=22)
    with forced_splits(2):
        out, lse, _ = _run_tcsim(q, kv, table, lens, causal=True)
    check(out, lse, q, kv, table, lens, causal=True, cos=2e-5)


@pytest.mark.slow
def test_tcsim_fp8_cache():
    import ml_dtypes
    from tilelang.ops.mla import dequantize_k_cache, quantize_k_cache
    q, kv, table, lens = make_case(2, 1, 16, 1, 100, seed=23)
    clean = np.nan_to_num(kv.astype(np.float32)).astype(ml_dtypes.bfloat16)
    cache = quantize_k_cache(clean)
    out, lse, _ = _run_tcsim(q, cache, table, lens, fp8=True)
    check(out, lse, q, dequantize_k_cache(cache), table, lens, out_abs=1e-3, cos=2e-5)
