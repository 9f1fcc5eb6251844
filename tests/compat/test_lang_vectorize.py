"""Ports of TileLang's vectorize tests (testing/python/language/test_tilelang_language_vectorize.py)
that program whole blocks: `T.vectorized` loops over every dtype, broadcasting a
`T.alloc_var`, a call in a vectorized store, and a `T.Parallel` copy into a shared tile
with a layout hint. The generated CUDA text TileLang checks (`float4`) is replaced by the
values; the tests that index by `T.get_thread_binding` are thread-level code."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.layout import make_swizzled_layout
from tilelang.dtypes import numpy_dtype



@tilelang.jit
def vectorize_test_all_dtypes(dtype, vec_num):
    @T.prim_func
    def main(A: T.Tensor[(64,), dtype]):
        with T.Kernel(1, threads=256):
            for i in T.vectorized(vec_num):
                A[i] = T.cast(i + 1, dtype)

    return main


@pytest.mark.parametrize("dtype", [T.uint8, T.int8, T.int64, T.uint32, T.float8_e4m3fn,
                                   T.float8_e5m2])
@pytest.mark.parametrize("vec_num", [1, 2, 4, 8])
def test_vectorize_all_dtypes(target, dtype, vec_num):
    x = np.zeros(64, numpy_dtype(str(dtype)))
    vectorize_test_all_dtypes(dtype, vec_num)(x)
    want = np.zeros(64)
    want[:vec_num] = np.arange(1, vec_num + 1)
    np.testing.assert_array_equal(x.astype(np.float64), want)


@tilelang.jit
def vectorize_broadcast_int8(vec_num):
    with T.Kernel(1, threads=128):
        a = T.alloc_local((64,), "int8")
        b = T.alloc_var("int8")

        for i in T.vectorized(vec_num):
            a[i] = b


@pytest.mark.parametrize("vec_num", [4, 32])
def test_vectorize_broadcast_int8(target, vec_num):
    vectorize_broadcast_int8.compile(vec_num=vec_num)


@tilelang.jit
def vectorize_test_call_infinity():
    A = T.empty((4,), dtype=T.float32)
    with T.Kernel(1, threads=128):
        for i in T.vectorized(4):
            A[i] = T.infinity(T.float32)
    return A


def test_vectorize_call_infinity(target):
    kernel = vectorize_test_call_infinity.compile()
    np.testing.assert_array_equal(kernel(), np.full(4, np.inf, np.float32))


@tilelang.jit(
    pass_configs={tilelang.PassConfigKey.TL_ENABLE_VECTORIZE_PLANNER_VERBOSE: True, tilelang.PassConfigKey.TL_ENABLE_ASYNC_COPY: False}
)
def vectorize_test_call_bitwise_logical():
    A = T.empty((128, 32), dtype=T.float32)
    with T.Kernel(1, threads=128):
        A_shared = T.alloc_shared((128, 32), dtype=T.float32)
        T.annotate_layout({A_shared: make_swizzled_layout(A_shared)})
        for i, j in T.Parallel(128, 32):
            A_shared[i, j] = A[i, j]
    return A


def test_vectorize_call_bitwise_logical(target):
    """TileLang's layout is `make_mma_swizzle_layout` from its CUDA intrinsics module;
    any layout is a hint here. The kernel returns its output unwritten (as TileLang's)."""
    kernel = vectorize_test_call_bitwise_logical.compile()
    assert kernel().shape == (128, 32)
