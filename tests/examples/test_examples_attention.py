"""flash_attention.tl against a float64 numpy attention, for hypothesis-drawn batch,
heads and (ragged, dynamic) sequence lengths, with and without causal masking."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from examples_support import assert_close, kernel, np_dtype, random, ref

SETTINGS = settings(max_examples=10, deadline=None)
DIM = 64

# Each output row is a convex combination of rows of V, so errors are measured against
# max|V| (atol) as well as relative. float32: the scores are dot products of DIM = 64
# terms and the softmax sums run over <= 128 keys, both in float32 (~sqrt(n) u), and the
# online rescaling adds a few roundings: 1e-5. float16: P is rounded to float16 before
# the P @ V product (as TileLang does), a relative error of 2^-11 per weight, and the
# output is rounded to float16: 1e-2. bfloat16 (2^-9 per rounding) stays within it too.
TOL = {"float32": 1e-5, "float16": 1e-2, "bfloat16": 1e-2}


def run_attention(dtype, causal, b, h, sq, skv, seed, **defines):
    dim = defines.get("DIM", DIM)
    rng = np.random.default_rng(seed)
    q = random(rng, (b, h, sq, dim), dtype)
    k = random(rng, (b, h, skv, dim), dtype)
    v = random(rng, (b, h, skv, dim), dtype)
    o = np.full((b, h, sq, dim), np.nan, dtype=np_dtype(dtype))
    kernel("flash_attention", dtype=dtype, CAUSAL=causal, **defines)(q, k, v, o)
    want = ref.flash_attention(q, k, v, causal=causal)
    vmax = float(np.max(np.abs(v.astype(np.float64))))
    assert_close(o, want, rtol=TOL[dtype], atol=TOL[dtype] * vmax,
                 what=f"attention b={b} h={h} sq={sq} skv={skv} {dtype} causal={causal}")


SEQ = st.one_of(st.integers(1, 128), st.sampled_from([64, 65, 63, 128]))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@SETTINGS
@given(b=st.integers(1, 2), h=st.integers(1, 3), sq=SEQ, skv=SEQ,
       seed=st.integers(0, 2**32 - 1))
def test_flash_attention(dtype, b, h, sq, skv, seed):
    run_attention(dtype, False, b, h, sq, skv, seed)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@SETTINGS
@given(b=st.integers(1, 2), h=st.integers(1, 2), sq=SEQ, extra=st.integers(-40, 40),
       seed=st.integers(0, 2**32 - 1))
def test_flash_attention_causal(dtype, b, h, sq, extra, seed):
    # causal masking aligns query i with key i (queries past the last key see them all);
    # every query sees key 0, so no row is fully masked
    run_attention(dtype, True, b, h, sq, max(1, sq + extra), seed)


@pytest.mark.parametrize("defines", [dict(DIM=32, BLOCK_M=16, BLOCK_N=64),
                                     dict(DIM=128, BLOCK_M=32, BLOCK_N=16)])
def test_flash_attention_other_head_dims_and_blocks(defines):
    run_attention("float32", True, 1, 2, 77, 90, 13, **defines)
    run_attention("float32", False, 2, 1, 33, 129, 14, **defines)


@pytest.mark.slow
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_large_ragged(causal):
    run_attention("float32", causal, 2, 3, 517, 1029, 11)
