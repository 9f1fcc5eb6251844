"""gemm.tl and splitk_gemm.tl against a float64 numpy product, for hypothesis-drawn
shapes that include ragged ones (M, N, K not multiples of the block sizes)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from examples_support import assert_sum_close, kernel, random, ref

SETTINGS = settings(max_examples=12, deadline=None)
SEEDS = st.integers(0, 2**32 - 1)

# Every dtype accumulates in float32, and float16 / bfloat16 inputs are exact in float32,
# so all variants share one bound: a K-term float32 dot product is within (K - 1) u
# (|A| @ |B|) of the exact one (u = 2^-24), at most 1.2e-5 for K <= 200; errors in
# practice grow like sqrt(K) u. The check is relative to |A| @ |B| because terms cancel.
TOL = 1e-5


def dims(hi: int, blocks=(32, 64, 128)):
    return st.one_of(st.integers(1, hi),
                     st.sampled_from([b for blk in blocks for b in (blk, blk + 1, blk - 1)]))


def check_gemm(a, b, c, what):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert_sum_close(c, ref.gemm(a, b), np.abs(a64) @ np.abs(b64), TOL, what)


@pytest.mark.parametrize("in_dtype", ["float32", "float16", "bfloat16"])
@SETTINGS
@given(m=dims(200), n=dims(200), k=dims(200), seed=SEEDS)
def test_gemm(in_dtype, m, n, k, seed):
    rng = np.random.default_rng(seed)
    a, b = random(rng, (m, k), in_dtype), random(rng, (k, n), in_dtype)
    c = np.full((m, n), np.nan, dtype=np.float32)    # every element must be written
    kernel("gemm", in_dtype=in_dtype)(a, b, c)
    check_gemm(a, b, c, f"gemm {m}x{n}x{k} {in_dtype}")


@pytest.mark.parametrize("blocks", [dict(BLOCK_M=32, BLOCK_N=64, BLOCK_K=16, NUM_STAGES=2)])
def test_gemm_other_block_sizes(blocks):
    rng = np.random.default_rng(7)
    a, b = random(rng, (77, 45), "float32"), random(rng, (45, 130), "float32")
    c = np.zeros((77, 130), dtype=np.float32)
    kernel("gemm", **blocks)(a, b, c)
    check_gemm(a, b, c, f"gemm with {blocks}")


@pytest.mark.slow
@pytest.mark.parametrize("in_dtype", ["float32", "float16"])
def test_gemm_large_ragged(in_dtype):
    rng = np.random.default_rng(8)
    m, n, k = 503, 1017, 763
    a, b = random(rng, (m, k), in_dtype), random(rng, (k, n), in_dtype)
    c = np.zeros((m, n), dtype=np.float32)
    kernel("gemm", in_dtype=in_dtype)(a, b, c)
    # K = 763: worst case (K - 1) u = 4.5e-5; sqrt(K) u growth stays far below 1e-5
    check_gemm(a, b, c, f"gemm {m}x{n}x{k} {in_dtype}")


# ----------------------------------------------------------------------------- split-K

@pytest.mark.parametrize("in_dtype", ["float32", "float16"])
@SETTINGS
@given(m=dims(150, (64,)), n=dims(150, (64,)), k=dims(600, (32, 128, 512)), seed=SEEDS)
def test_splitk_gemm(in_dtype, m, n, k, seed):
    rng = np.random.default_rng(seed)
    a, b = random(rng, (m, k), in_dtype), random(rng, (k, n), in_dtype)
    c = np.zeros((m, n), dtype=np.float32)
    kernel("splitk_gemm", in_dtype=in_dtype)(a, b, c)
    # four partial sums of K/4 terms each, combined by atomic adds in any order: the same
    # (K - 1) u bound applies; with K <= 600 typical errors are ~sqrt(K) u << 1e-5
    check_gemm(a, b, c, f"splitk_gemm {m}x{n}x{k} {in_dtype}")


@pytest.mark.parametrize("split_k", [1, 3])
def test_splitk_gemm_other_splits(split_k):
    """SPLIT_K is a -D constant: one slice (a plain GEMM) and an odd count whose last
    slice is partly and whose later tiles are wholly past K."""
    rng = np.random.default_rng(12)
    a, b = random(rng, (65, 161), "float32"), random(rng, (161, 70), "float32")
    c = np.zeros((65, 70), dtype=np.float32)
    kernel("splitk_gemm", SPLIT_K=split_k)(a, b, c)
    check_gemm(a, b, c, f"splitk_gemm SPLIT_K={split_k}")


def test_splitk_gemm_accumulates_onto_c():
    """The atomic adds accumulate onto what C holds: C += A @ B."""
    rng = np.random.default_rng(9)
    a, b = random(rng, (70, 300), "float32"), random(rng, (300, 90), "float32")
    c0 = random(rng, (70, 90), "float32")
    c = c0.copy()
    kernel("splitk_gemm")(a, b, c)
    abs_terms = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)) + np.abs(c0)
    assert_sum_close(c, ref.gemm(a, b) + c0, abs_terms, TOL, "C += A @ B")


@pytest.mark.slow
def test_splitk_gemm_large_ragged():
    rng = np.random.default_rng(10)
    m, n, k = 131, 77, 4099
    a, b = random(rng, (m, k), "float32"), random(rng, (k, n), "float32")
    c = np.zeros((m, n), dtype=np.float32)
    kernel("splitk_gemm")(a, b, c)
    # K = 4099: sqrt(K) u ~ 4e-6 typical; 2e-5 leaves margin (worst case K u = 2.4e-4)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert_sum_close(c, ref.gemm(a, b), np.abs(a64) @ np.abs(b64), 2e-5, "splitk large")
