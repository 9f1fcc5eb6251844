"""Ports of TileLang's vectorized-cast tests (testing/python/language/test_tilelang_language_vectorized_cast.py):
a dtype conversion by `T.copy` between global tensors and by a `T.Parallel` copy between
fragments, for fp32 / fp16 / bf16 / fp8 (e4m3fn, e5m2) pairs, checked against ml_dtypes'
conversion on both targets. TileLang checks that its CUDA uses the paired conversion
intrinsics; here the values are checked. float8_e8m0fnu and float4_e2m1fn are not dtypes
of kernels here (out of scope: sub-byte storage, an exponent-only format)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.dtypes import numpy_dtype

from .helpers import RNG, slow_beyond



@tilelang.jit
def vectorized_cast_kernel(M: int, dtype_A: str, dtype_B: str):
    assert M % 256 == 0

    @T.prim_func
    def main(
        A: T.Tensor[(M,), dtype_A],  # noqa: F821
        B: T.Tensor[(M,), dtype_B],  # noqa: F821
    ):
        with T.Kernel(1, threads=128):
            T.copy(A, B)

    return main


@tilelang.jit
def parallel_vectorized_cast_kernel(M: int, dtype_A: str, dtype_B: str):
    assert M % 256 == 0

    @T.prim_func
    def main(
        A: T.Tensor[(M,), dtype_A],  # noqa: F821
        B: T.Tensor[(M,), dtype_B],  # noqa: F821
    ):
        with T.Kernel(1, threads=128):
            A_local = T.alloc_fragment((M,), dtype_A)
            B_local = T.alloc_fragment((M,), dtype_B)

            T.copy(A, A_local)
            for i in T.Parallel(M):
                B_local[i] = A_local[i]
            T.copy(B_local, B)

    return main


CASES = [(T.float32, T.float16), (T.float16, T.float32), (T.float32, T.bfloat16),
         (T.bfloat16, T.float32), (T.float32, T.float8_e4m3fn), (T.float32, T.float8_e5m2),
         (T.float8_e4m3fn, T.float32), (T.float8_e5m2, T.float32),
         (T.float8_e4m3fn, T.float16), (T.float8_e5m2, T.float16),
         (T.float16, T.float8_e4m3fn), (T.float16, T.float8_e5m2),
         (T.float8_e4m3fn, T.bfloat16), (T.float8_e5m2, T.bfloat16),
         (T.bfloat16, T.float8_e4m3fn), (T.bfloat16, T.float8_e5m2)]


@pytest.mark.parametrize("src_dtype,dst_dtype", slow_beyond(CASES, 8), ids=[f"{a}-{b}" for a, b in CASES])
@pytest.mark.parametrize("lanes", slow_beyond([2, 4], 1))
def test_vectorized_cast(target, src_dtype, dst_dtype, lanes):
    M = 128 * lanes
    A = RNG.standard_normal(M).astype(np.float32).astype(numpy_dtype(str(src_dtype)))
    want = A.astype(np.float32).astype(numpy_dtype(str(dst_dtype)))
    for kernel in (vectorized_cast_kernel(M, src_dtype, dst_dtype),
                   parallel_vectorized_cast_kernel(M, src_dtype, dst_dtype)):
        B = np.zeros(M, numpy_dtype(str(dst_dtype)))
        kernel(A, B)
        np.testing.assert_array_equal(B.astype(np.float32), want.astype(np.float32))
