"""TileLang's dtype names: T.float, T.float8_e4m3fn / float8_e4m3 / float8_e5m2 (two e4m3
formats, as in TileLang and ml_dtypes), `dtype: T.dtype` parameters, buf.dtype /
buf.shape in a kernel."""
import ml_dtypes
import numpy as np
import pytest

import tilelang
import tilelang.language as T

from .helpers import close, randn, similar


@tilelang.jit(out_idx=[-1])
def convert(N, src: T.dtype = T.float, dst: T.dtype = T.float8_e4m3fn):
    @T.prim_func
    def kernel(X: T.Tensor((N,), src), Y: T.Tensor((N,), dst)):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_fragment((N,), src)
            T.copy(X, x)
            for i in T.Parallel(N):
                Y[i] = x[i]
    return kernel


@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e4m3", "float8_e5m2"])
def test_each_fp8_format_rounds_like_ml_dtypes(target, fmt):
    # e4m3fn saturates at 448 (then NaN), e4m3 reaches 240 then infinity
    x = np.array([0.1, -1.7, 230.0, 250.0, 440.0, 500.0, 1e5, -3e-3] * 2, np.float32)
    got = convert(16, T.float, getattr(T, fmt))(x)
    want = x.astype(getattr(ml_dtypes, fmt))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_e4m3_and_e4m3fn_are_two_dtypes():
    assert str(T.float8_e4m3fn) != str(T.float8_e4m3)
    assert tilelang.dtypes.numpy_dtype("float8_e4m3fn") == np.dtype(ml_dtypes.float8_e4m3fn)
    assert tilelang.dtypes.numpy_dtype("float8_e4m3") == np.dtype(ml_dtypes.float8_e4m3)


def test_dtype_spellings():
    assert T.float == "float32" and T.int == "int32" and T.dtype("half") == "float16"
    assert T.dtype(T.bfloat16) == "bfloat16"


@tilelang.jit(out_idx=[-1])
def fp8_gemm(M, N, K, dtype=T.float8_e4m3fn):
    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype),
             C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, 32), T.ceildiv(M, 32), threads=128) as (bx, by):
            A_s = T.alloc_shared((32, 32), dtype)
            B_s = T.alloc_shared((32, 32), dtype)
            C_f = T.alloc_fragment((32, 32), T.float)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=2):
                T.copy(A[by * 32, k * 32], A_s)
                T.copy(B[bx * 32, k * 32], B_s)
                T.gemm(A_s, B_s, C_f, transpose_B=True)
            T.copy(C_f, C[by * 32, bx * 32])
    return gemm


def test_fp8_gemm_in_e4m3fn(target):
    a = randn(48, 64).astype(ml_dtypes.float8_e4m3fn)
    b = randn(40, 64).astype(ml_dtypes.float8_e4m3fn)
    similar(fp8_gemm(48, 40, 64)(a, b), a.astype(np.float64) @ b.astype(np.float64).T)


@tilelang.jit(out_idx=[-1])
def shape_and_dtype_of_buffers(M, N):
    @T.prim_func
    def kernel(X: T.Tensor((M, N), T.float16), Y: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((M, N), X.dtype)
            T.copy(X, x)
            rows, cols = x.shape
            for i, j in T.Parallel(rows, cols):
                Y[i, j] = T.cast(x[i, j], Y.dtype) * cols
    return kernel


def test_buffer_dtype_and_shape(target):
    x = randn(8, 6, dtype=np.float16)
    close(shape_and_dtype_of_buffers(8, 6)(x), x.astype(np.float32) * 6, 1e-3, 1e-3)
