"""Ports of TileLang's JIT tests that need no GPU toolchain (testing/python/jit/):
`None` for a tensor argument the kernel does not touch (test_tilelang_jit_nullptr.py),
`factory.par_compile(configs)` (test_tilelang_jit_parcompile.py) and a GEMM factory
(test_tilelang_jit_gemm.py), checked against
numpy on both targets. The factories' lines are TileLang's; shapes are smaller. The
other JIT tests check TileLang's own internals (its argument-binding cache, nvcc and
cython back ends, CUDA post-processing callbacks) and are out of scope."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.runtime.errors import LaunchTypeError

from .helpers import RNG, close


@tilelang.jit
def tensor_null_test(M, N, K, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32, with_bias=False):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), accum_dtype),
        Bias: T.Tensor((N), accum_dtype),
    ):
        # Initialize Kernel Context
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            T.clear(C_local)

            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                # Copy tile of A
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)

            if with_bias:
                for i, j in T.Parallel(block_M, block_N):
                    C_local[i, j] += Bias[bx * block_N + j]

            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


@tilelang.jit(
    out_idx=-1,  # create the output tensor during runtime
    verbose=True,
)
def matmul_kernel_jit(
    M,
    N,
    K,
    block_M,
    block_N,
    block_K,
    trans_A=False,
    trans_B=True,
    in_dtype=T.float16,
    out_dtype=T.float32,
    accum_dtype=T.float32,
    num_stages=2,
    threads=128,
):
    A_shape = (K, M) if trans_A else (M, K)
    B_shape = (N, K) if trans_B else (K, N)
    A_shared_shape = (block_K, block_M) if trans_A else (block_M, block_K)
    B_shared_shape = (block_N, block_K) if trans_B else (block_K, block_N)

    import tilelang.language as T

    @T.prim_func
    def main(
        A: T.Tensor(A_shape, in_dtype),
        B: T.Tensor(B_shape, in_dtype),
        C: T.Tensor((M, N), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared(A_shared_shape, in_dtype)
            B_shared = T.alloc_shared(B_shared_shape, in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                if trans_A:
                    T.copy(A[k * block_K, by * block_M], A_shared)
                else:
                    T.copy(A[by * block_M, k * block_K], A_shared)
                if trans_B:
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, trans_A, trans_B)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def test_nullptr(target):
    """None for the unused `Bias`: the launch binds every tensor argument, so it names
    the argument and what it expects (TileLang passes a null pointer)."""
    M, N, K = 64, 64, 64
    a = RNG.standard_normal((M, K)).astype(np.float16)
    b = RNG.standard_normal((N, K)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    kernel = tensor_null_test(M, N, K, 32, 32, 16, T.float16, T.float32, with_bias=False)
    with pytest.raises(LaunchTypeError, match="argument 'Bias' expects a tensor float32"):
        kernel(a, b, c, None)
    kernel(a, b, c, np.zeros(N, np.float32))
    close(c, a.astype(np.float64) @ b.astype(np.float64).T, 1e-2, 1e-2)


def test_par_compile(target):
    configs = [(64, 64, 64, 32, 32, 16), (96, 64, 32, 32, 32, 32), (32, 32, 64, 16, 16, 64)]
    kernels = matmul_kernel_jit.par_compile(configs)
    for (M, N, K, _, _, _), kernel in zip(configs, kernels):
        A = RNG.standard_normal((M, K)).astype(np.float16)
        B = RNG.standard_normal((N, K)).astype(np.float16)
        close(kernel(A, B), A.astype(np.float64) @ B.astype(np.float64).T, 1e-2, 1e-2)


@tilelang.jit(
    out_idx=-1,  # create the output tensor during runtime
)
def matmul_kernel_jit_full(
    M,
    N,
    K,
    block_M,
    block_N,
    block_K,
    trans_A,
    trans_B,
    in_dtype,
    out_dtype,
    accum_dtype,
    num_stages,
    threads,
):
    A_shape = (K, M) if trans_A else (M, K)
    B_shape = (N, K) if trans_B else (K, N)
    A_shared_shape = (block_K, block_M) if trans_A else (block_M, block_K)
    B_shared_shape = (block_N, block_K) if trans_B else (block_K, block_N)

    @T.prim_func
    def main(
        A: T.Tensor(A_shape, in_dtype),
        B: T.Tensor(B_shape, in_dtype),
        C: T.Tensor((M, N), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared(A_shared_shape, in_dtype)
            B_shared = T.alloc_shared(B_shared_shape, in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                if trans_A:
                    T.copy(A[k * block_K, by * block_M], A_shared)
                else:
                    T.copy(A[by * block_M, k * block_K], A_shared)
                if trans_B:
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, trans_A, trans_B)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def test_gemm_f16f16f32_nn_kernel_jit(target):
    """test_tilelang_jit_gemm.py: the factory's kernel called with inputs only."""
    M, N, K = 64, 128, 96
    matmul_kernel = matmul_kernel_jit_full(M, N, K, 32, 32, 16, False, False, T.float16,
                                           T.float16, T.float32, 0, 128)
    A = RNG.standard_normal((M, K)).astype(np.float16)
    B = RNG.standard_normal((K, N)).astype(np.float16)
    close(matmul_kernel(A, B), A.astype(np.float64) @ B.astype(np.float64), 1e-2, 1e-2)
