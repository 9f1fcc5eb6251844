"""softmax.tl, rmsnorm.tl and reduce.tl (row_sum, col_sum) against numpy (float64), for
hypothesis-drawn shapes that include ragged ones."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from examples_support import assert_close, assert_sum_close, build, kernel, np_dtype, random, ref

SETTINGS = settings(max_examples=15, deadline=None)
SEEDS = st.integers(0, 2**32 - 1)


def sizes(block: int, hi: int):
    return st.one_of(st.integers(1, hi),
                     st.sampled_from([block, 2 * block, block + 1, 2 * block - 1]))


# ----------------------------------------------------------------------------- softmax

# float32: each output is exp2((x - max) * log2(e)): the subtraction is exact or nearly
# so for the terms that matter, the product and exp2 add a few roundings (relative ~u
# times the argument, <= ~30 here), and the division by a sum of up to N positive terms
# adds <= N u worst case, ~sqrt(N) u typically: 1e-5 relative with N <= 600.
SOFTMAX_TOL = {"float32": dict(rtol=1e-5, atol=1e-9), "float16": dict(rtol=1e-2, atol=1e-4),
               "bfloat16": dict(rtol=1e-2, atol=1e-4)}


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@SETTINGS
@given(m=sizes(8, 40), n=sizes(256, 600), seed=SEEDS)
def test_softmax(dtype, m, n, seed):
    rng = np.random.default_rng(seed)
    x = random(rng, (m, n), dtype, 3.0)
    y = np.zeros_like(x)
    kernel("softmax", dtype=dtype)(x, y)
    assert_close(y, ref.softmax(x), **SOFTMAX_TOL[dtype], what=f"softmax {m}x{n} {dtype}")


def test_softmax_large_magnitudes():
    """Rows far from zero (all very negative, or with a huge spread) must not overflow
    or turn into NaN: the max is subtracted before exponentiating."""
    x = np.array([[-1000.0, -1001.0, -1002.5] * 100,
                  [80.0, -80.0, 0.0] * 100], dtype=np.float32)
    y = np.zeros_like(x)
    kernel("softmax")(x, y)
    assert np.all(np.isfinite(y))
    assert_close(y, ref.softmax(x), **SOFTMAX_TOL["float32"])


@pytest.mark.slow
def test_softmax_large_ragged():
    rng = np.random.default_rng(4)
    x = random(rng, (257, 4099), "float32", 3.0)
    y = np.zeros_like(x)
    kernel("softmax")(x, y)
    # rows of 4099 terms: the sum's worst-case relative error grows to N u ~ 2.4e-4;
    # 2e-5 allows the typical sqrt(N) u growth with margin.
    assert_close(y, ref.softmax(x), rtol=2e-5, atol=1e-9)


# ----------------------------------------------------------------------------- rmsnorm

# The mean of squares is a sum of N positive terms (relative error <= N u, ~sqrt(N) u
# typically), then rsqrt and two products: 1e-5 relative for N <= 600.
RMS_TOL = {"float32": dict(rtol=1e-5, atol=1e-7), "bfloat16": dict(rtol=1e-2, atol=1e-2)}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@SETTINGS
@given(m=sizes(8, 40), n=sizes(256, 600), seed=SEEDS)
def test_rmsnorm(dtype, m, n, seed):
    rng = np.random.default_rng(seed)
    x, w = random(rng, (m, n), dtype, 2.0), random(rng, n, dtype)
    y = np.zeros_like(x)
    kernel("rmsnorm", dtype=dtype)(x, w, y)
    assert_close(y, ref.rmsnorm(x, w), **RMS_TOL[dtype], what=f"rmsnorm {m}x{n} {dtype}")


@pytest.mark.slow
def test_rmsnorm_large_ragged():
    rng = np.random.default_rng(5)
    x, w = random(rng, (301, 5003), "float32", 2.0), random(rng, 5003, "float32")
    y = np.zeros_like(x)
    kernel("rmsnorm")(x, w, y)
    assert_close(y, ref.rmsnorm(x, w), rtol=2e-5, atol=1e-7)


# ----------------------------------------------------------------------------- reduce

# A float32 sum of n terms is within (n - 1) u sum|x| of the exact sum whatever the
# order; with n <= 300 the worst case is 1.8e-5, typical errors are ~sqrt(n) u. The check
# is relative to sum|x| because the terms cancel (results near zero). float16 outputs are
# additionally rounded to 11 bits: 1e-2.
SUM_TOL = {"float32": 1e-5, "float16": 1e-2}


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@SETTINGS
@given(m=sizes(32, 300), n=sizes(128, 300), seed=SEEDS)
def test_row_and_col_sum(dtype, m, n, seed):
    rng = np.random.default_rng(seed)
    x = random(rng, (m, n), dtype)
    lib = build("reduce", dtype=dtype)
    rows = np.zeros(m, dtype=np_dtype(dtype))
    cols = np.zeros(n, dtype=np_dtype(dtype))
    lib["row_sum"](x, rows)
    lib["col_sum"](x, cols)
    ax = np.abs(x.astype(np.float64))
    assert_sum_close(rows, ref.row_sum(x), ax.sum(axis=1), SUM_TOL[dtype], f"row_sum {m}x{n}")
    assert_sum_close(cols, ref.col_sum(x), ax.sum(axis=0), SUM_TOL[dtype], f"col_sum {m}x{n}")


@pytest.mark.slow
def test_reduce_large_ragged():
    rng = np.random.default_rng(6)
    x = random(rng, (1537, 2111), "float32")
    lib = build("reduce")
    rows, cols = np.zeros(1537, np.float32), np.zeros(2111, np.float32)
    lib["row_sum"](x, rows)
    lib["col_sum"](x, cols)
    ax = np.abs(x.astype(np.float64))
    # up to 2111 terms: worst case n u = 1.3e-4; 3e-5 covers the typical growth
    assert_sum_close(rows, ref.row_sum(x), ax.sum(axis=1), 3e-5, "row_sum")
    assert_sum_close(cols, ref.col_sum(x), ax.sum(axis=0), 3e-5, "col_sum")
