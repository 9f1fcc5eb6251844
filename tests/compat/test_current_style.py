"""The current style of @tilelang.jit: the function is the kernel, T.const sizes come
from the arguments' shapes, T.empty declares outputs, `return` gives them;
`.compile(M=..., ...)` gives the kernel; @autotune works over it."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.diagnostics import TileLangError

from .helpers import close, randn


@tilelang.jit
def matmul(A, B, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):
    M, N, K = T.const("M, N, K")
    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C = T.empty((M, N), accum_dtype)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_s = T.alloc_shared((block_M, block_K), dtype)
        B_s = T.alloc_shared((block_K, block_N), dtype)
        C_f = T.alloc_fragment((block_M, block_N), accum_dtype)
        T.clear(C_f)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
            T.copy(A[by * block_M, k * block_K], A_s)
            T.copy(B[k * block_K, bx * block_N], B_s)
            T.gemm(A_s, B_s, C_f)
        T.copy(C_f, C[by * block_M, bx * block_N])
    return C


def test_call_compiles_for_the_shapes_and_runs(target):
    a, b = randn(50, 40, dtype=np.float16), randn(40, 30, dtype=np.float16)
    close(matmul(a, b, 32, 32, 16), a.astype(np.float64) @ b, 1e-2, 2e-2)
    a2 = randn(20, 40, dtype=np.float16)                   # another M: another kernel
    close(matmul(a2, b, 32, 32, 16), a2.astype(np.float64) @ b, 1e-2, 2e-2)


def test_compile_by_name(target):
    k = matmul.compile(M=33, N=30, K=40, block_M=32, block_N=32, block_K=16)
    a, b = randn(33, 40, dtype=np.float16), randn(40, 30, dtype=np.float16)
    close(k(a, b), a.astype(np.float64) @ b, 1e-2, 2e-2)
    assert "T.const" not in k.ir() and "33" in k.ir()       # the sizes are constants


def test_get_kernel_source_and_profiler_as_the_gemm_example_calls_them(target):
    """TileLang's examples/gemm/example_gemm.py main(): the source, then the profiler."""
    k = matmul.compile(M=64, N=64, K=32, block_M=32, block_N=32, block_K=16)
    source = k.get_kernel_source()
    assert ("define" in source) if target == "cpu" else source.startswith(".kernel matmul")
    profiler = k.get_profiler()
    assert profiler.do_bench(backend="cupti") > 0
    # profiler.func is the kernel as a callable (TileLang's deepseek_mla paged example)
    a, b = randn(64, 32, dtype=np.float16), randn(32, 64, dtype=np.float16)
    assert np.array_equal(profiler.func(a, b), k(a, b))


def test_mismatched_sizes_are_an_error():
    a, b = randn(8, 16, dtype=np.float16), randn(12, 8, dtype=np.float16)
    with pytest.raises(TileLangError) as info:
        matmul(a, b, 32, 32, 16)
    assert "size `K` is 16" in info.value.diagnostics[0].message


@tilelang.jit
def split(X, block):
    M, N = T.const("M N")
    X: T.Tensor((M, N), "float32")
    half = N // 2
    Lo = T.empty((M, half), "float32")
    Hi = T.empty((M, N - half), "float32")
    with T.Kernel(T.ceildiv(M, block), threads=32) as bx:
        for i, j in T.Parallel(block, half):
            Lo[bx * block + i, j] = X[bx * block + i, j]
        for i, j in T.Parallel(block, N - half):
            Hi[bx * block + i, j] = X[bx * block + i, half + j]
    return Lo, Hi


def test_several_outputs(target):
    x = randn(8, 6)
    lo, hi = split(x, 4)
    close(lo, x[:, :3])
    close(hi, x[:, 3:])


def configs():
    return [{"block": b} for b in (4, 8)]


@tilelang.autotune(configs=configs())
@tilelang.jit
def tuned_scale(X, block, factor=2.0):
    N = T.const("N")
    X: T.Tensor((N,), "float32")
    Y = T.empty((N,), "float32")
    with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
        for i in T.Parallel(block):
            Y[bx * block + i] = X[bx * block + i] * factor
    return Y


def test_autotune_over_the_current_style(target):
    x = randn(16)
    close(tuned_scale(x), 2 * x)
    close(tuned_scale(x, block=4, factor=3.0), 3 * x)


def test_declaration_mistakes_are_tl0381():
    @tilelang.jit
    def bad(X):
        N = T.const("N")
        Y: T.Tensor((N,), "float32")                 # not a parameter
        with T.Kernel(1) as bx:
            pass
    with pytest.raises(TileLangError) as info:
        bad(np.zeros(4, np.float32))
    assert info.value.code == "TL0381" and "`Y` is annotated" in \
        info.value.diagnostics[0].message
