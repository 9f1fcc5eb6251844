"""The FP8 KV cache in FlashMLA's 656-byte layout: quantisation, padded block strides,
uint8 bytes, any fp32 scale; decode checked as FlashMLA checks it (against the reference
on the dequantised cache: abs 1e-3, rel 2.01/128, cosine diff 5e-6)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tilelang.ops.mla import (dequantize_k_cache, flash_mla_with_kvcache, get_mla_metadata,
                              quantize_k_cache)

from .cases import check, make_case


def _decode(q, cache, table, lens):
    meta, _ = get_mla_metadata()
    return flash_mla_with_kvcache(q, cache, table, lens, 512, meta, None, is_fp8_kvcache=True)


@pytest.mark.parametrize("padded, as_bytes, pow2", [(True, False, True), (False, True, False)])
def test_fp8_cache_decode(padded, as_bytes, pow2):
    q, kv, table, lens = make_case(3, 1, 16, 1, 150, zero=True, seed=11)
    clean = np.nan_to_num(kv.astype(np.float32)).astype(ml_dtypes.bfloat16)
    cache = quantize_k_cache(clean, power_of_two_scales=pow2, padded=padded)
    assert cache.shape[-1] == 656 and cache.flags.c_contiguous == (not padded)
    if as_bytes:
        cache = cache.view(np.uint8)
    out, lse = _decode(q, cache, table, lens)
    check(out, lse, q, dequantize_k_cache(cache), table, lens, out_abs=1e-3, cos=5e-6)


def test_quantisation_layout():
    rng = np.random.default_rng(0)
    kv = (rng.standard_normal((2, 64, 1, 576)) / 10).astype(ml_dtypes.bfloat16)
    raw = quantize_k_cache(kv).view(np.uint8)
    scales = raw[..., 512:528].copy().view(np.float32)
    assert np.all(np.log2(scales) == np.round(np.log2(scales)))       # powers of two
    rope = raw[..., 528:].copy().view(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(rope, kv[..., 512:])               # rope kept exactly
    back = dequantize_k_cache(raw).astype(np.float32)
    assert np.abs(back - kv.astype(np.float32)).max() < 0.07 * np.abs(kv.astype(np.float32)).max()


def test_fp8_needs_bf16_queries():
    q, kv, table, lens = make_case(1, 1, 16, 1, 64, seed=12, dtype="fp16")
    cache = quantize_k_cache(np.nan_to_num(kv.astype(np.float32)).astype(ml_dtypes.bfloat16))
    with pytest.raises(TypeError, match="q: dtype must be bfloat16 with an FP8 cache"):
        _decode(q, cache, table, lens)


@pytest.mark.parametrize("s_q, h_q, causal", [(1, 16, False), (4, 9, True)])
def test_fp8_cache_quantised_with_nan_slots(s_q, h_q, causal):
    """FlashMLA's recipe quantises the NaN-filled cache: NaN values and scales in every
    slot past a length, which the kernel must never let through."""
    q, kv, table, lens = make_case(3, s_q, h_q, 1, 90, zero=True, seed=13)
    cache = quantize_k_cache(kv)
    assert np.isnan(cache.astype(np.float32)).any()
    meta, _ = get_mla_metadata()
    out, lse = flash_mla_with_kvcache(q, cache, table, lens, 512, meta, None, causal=causal,
                                      is_fp8_kvcache=True)
    check(out, lse, q, dequantize_k_cache(cache), table, lens, causal=causal, out_abs=1e-3,
          cos=5e-6)
