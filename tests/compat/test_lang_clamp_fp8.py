"""Ports of the float8 tests of TileLang's clamp file
(testing/python/language/test_tilelang_language_clamp.py): T.max / T.min / T.clamp of
float8 operands through a module-level dict of lambdas (`FP8_OPS[op](a, b, dtype)`),
also inside a `T.vectorized` loop, checked exactly against numpy on both targets. The
kernels' lines are TileLang's; shapes are smaller."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.dtypes import numpy_dtype

from .helpers import RNG

FP8_OPS = {
    "max": lambda a, b, dtype: T.max(a, b),
    "min": lambda a, b, dtype: T.min(a, b),
    "clamp": lambda a, b, dtype: T.clamp(a, T.cast(-1.0, dtype), T.cast(1.0, dtype)),
}


def fp8_operand_kernel(N, block_N, dtype, op):
    @T.prim_func
    def main(
        A: T.Tensor((N,), dtype),
        B: T.Tensor((N,), dtype),
        C: T.Tensor((N,), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), threads=block_N) as bx:
            for i in T.Parallel(block_N):
                C[bx * block_N + i] = FP8_OPS[op](A[bx * block_N + i], B[bx * block_N + i], dtype)

    return main


def fp8_operand_vectorized_kernel(N, block_N, dtype, op, vec=4):
    @T.prim_func
    def main(
        A: T.Tensor((N,), dtype),
        B: T.Tensor((N,), dtype),
        C: T.Tensor((N,), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), threads=block_N // vec) as bx:
            for i in T.Parallel(block_N // vec):
                for v in T.vectorized(vec):
                    idx = bx * block_N + i * vec + v
                    C[idx] = FP8_OPS[op](A[idx], B[idx], dtype)

    return main


def _check(kernel, dtype, op, N):
    a = RNG.integers(-4, 5, N).astype(np.float32)
    b = RNG.integers(-4, 5, N).astype(np.float32)
    ref = {"max": np.maximum(a, b), "min": np.minimum(a, b), "clamp": np.clip(a, -1, 1)}[op]
    c = np.zeros(N, numpy_dtype(str(dtype)))
    kernel(a.astype(numpy_dtype(str(dtype))), b.astype(numpy_dtype(str(dtype))), c)
    np.testing.assert_array_equal(c.astype(np.float32), ref)


@pytest.mark.parametrize("dtype", [T.float8_e4m3, T.float8_e5m2])
@pytest.mark.parametrize("op", list(FP8_OPS))
def test_fp8_min_max_clamp(target, dtype, op):
    _check(tilelang.compile(fp8_operand_kernel(256, 128, dtype, op)), dtype, op, 256)


@pytest.mark.parametrize("op", list(FP8_OPS))
def test_fp8_vectorized_min_max(target, op):
    kernel = tilelang.compile(fp8_operand_vectorized_kernel(256, 128, T.float8_e4m3, op))
    _check(kernel, T.float8_e4m3, op, 256)


def test_fp8_e4m3fn_min_max(target):
    kernel = tilelang.compile(fp8_operand_kernel(256, 128, T.float8_e4m3fn, "clamp"))
    _check(kernel, T.float8_e4m3fn, "clamp", 256)
