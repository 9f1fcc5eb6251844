"""vector_add.tl, bias_gelu.tl and transpose.tl against numpy, for hypothesis-drawn
shapes that include ragged ones (not multiples of the block sizes)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from examples_support import assert_close, kernel, np_dtype, random, ref

SETTINGS = settings(max_examples=15, deadline=None)
SEEDS = st.integers(0, 2**32 - 1)


def sizes(block: int, hi: int):
    """Any size in 1..hi, with exact multiples of `block` (and one past them) drawn often."""
    return st.one_of(st.integers(1, hi),
                     st.sampled_from([block, 2 * block, block + 1, 2 * block - 1]))


# ----------------------------------------------------------------------------- vector_add

@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@SETTINGS
@given(n=sizes(1024, 5000), seed=SEEDS)
def test_vector_add(dtype, n, seed):
    rng = np.random.default_rng(seed)
    a, b = random(rng, n, dtype), random(rng, n, dtype)
    c = np.zeros(n, dtype=np_dtype(dtype))
    kernel("vector_add", dtype=dtype)(a, b, c)
    # a + b of two values of `dtype` is exact in float32 and rounded once on the store,
    # which is what numpy does too: the results agree bit for bit.
    want = (a.astype(np.float32) + b.astype(np.float32)).astype(np_dtype(dtype))
    np.testing.assert_array_equal(c.view(np.uint8), want.view(np.uint8))


@pytest.mark.slow
def test_vector_add_large_ragged():
    rng = np.random.default_rng(1)
    n = 3_000_017
    a, b = random(rng, n, "float32"), random(rng, n, "float32")
    c = np.zeros(n, dtype=np.float32)
    kernel("vector_add")(a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_vector_add_out_idx():
    """tilelang.compile(..., out_idx=[-1]) allocates and returns the output."""
    import tilelang
    from examples_support import EXAMPLES
    vector_add = tilelang.compile(str(EXAMPLES / "vector_add.tl"), out_idx=[-1])
    a = np.arange(1500, dtype=np.float32)
    b = np.full(1500, 0.5, dtype=np.float32)
    c = vector_add(a, b)
    assert c.shape == (1500,) and c.dtype == np.float32
    np.testing.assert_array_equal(c, a + b)


# ----------------------------------------------------------------------------- bias_gelu

# The tanh-approximated GELU is 0.5 x (1 + tanh(..)); for negative x, 1 + tanh(..)
# cancels, so the float32 result is accurate to ~|x| * u in absolute terms, not to u
# relative: hence the atol next to the relative tolerance.
TOL = {"float32": dict(rtol=1e-5, atol=1e-6), "float16": dict(rtol=1e-2, atol=1e-3)}


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@SETTINGS
@given(m=sizes(32, 100), n=sizes(128, 300), seed=SEEDS)
def test_bias_gelu(dtype, m, n, seed):
    rng = np.random.default_rng(seed)
    x, bias = random(rng, (m, n), dtype, 2.0), random(rng, n, dtype)
    y = np.zeros((m, n), dtype=np_dtype(dtype))
    kernel("bias_gelu", dtype=dtype)(x, bias, y)
    assert_close(y, ref.bias_gelu(x, bias), **TOL[dtype], what=f"bias_gelu {m}x{n} {dtype}")


@pytest.mark.slow
def test_bias_gelu_large_ragged():
    rng = np.random.default_rng(2)
    x, bias = random(rng, (1031, 2049), "float32", 2.0), random(rng, 2049, "float32")
    y = np.zeros_like(x)
    kernel("bias_gelu")(x, bias, y)
    assert_close(y, ref.bias_gelu(x, bias), **TOL["float32"])


# ----------------------------------------------------------------------------- transpose

@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
@SETTINGS
@given(m=sizes(32, 150), n=sizes(32, 150), seed=SEEDS)
def test_transpose(dtype, m, n, seed):
    rng = np.random.default_rng(seed)
    if dtype == "int32":
        a = rng.integers(-2**31, 2**31 - 1, size=(m, n), dtype=np.int32)
    else:
        a = random(rng, (m, n), dtype)
    b = np.zeros((n, m), dtype=a.dtype)
    kernel("transpose", dtype=dtype)(a, b)
    np.testing.assert_array_equal(b, a.T)


@pytest.mark.slow
def test_transpose_large_ragged():
    rng = np.random.default_rng(3)
    a = random(rng, (1999, 1013), "float32")
    b = np.zeros((1013, 1999), dtype=np.float32)
    kernel("transpose")(a, b)
    np.testing.assert_array_equal(b, a.T)
