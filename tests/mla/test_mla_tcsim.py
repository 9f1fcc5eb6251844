"""The same MLA kernel on tcsim:tiny at small sizes (bf16 tiles for the tensor core),
against the float64 reference; the gathered cache blocks are counted."""
from __future__ import annotations

import numpy as np
import pytest

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
