"""Ports of TileLang's GEMM kernel tests (testing/python/kernel/test_tilelang_kernel_gemm.py):
T.gemm of shared / fragment operands (ss, sr, rs) in every transpose, fp16 / bf16 / fp32 /
fp64 / int8, with ragged sizes, checked through `kernel.get_profiler().assert_allclose`
against numpy on both targets. Shapes are smaller than TileLang's; the factories'
lines are TileLang's. The tfloat32 cases are out of scope (an NVIDIA tensor-core input
format)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.dtypes import numpy_dtype

from .helpers import slow_beyond



def matmul(
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


def matmul_sr(
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
            B_local = T.alloc_fragment(B_shared_shape, in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                if trans_A:
                    T.copy(A[k * block_K, by * block_M], A_shared)
                else:
                    T.copy(A[by * block_M, k * block_K], A_shared)
                if trans_B:
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                    T.copy(B_shared, B_local)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                    T.copy(B_shared, B_local)
                T.gemm(A_shared, B_local, C_local, trans_A, trans_B)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def matmul_rs(
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

    import tilelang.language as T

    @T.prim_func
    def main(
        A: T.Tensor(A_shape, in_dtype),
        B: T.Tensor(B_shape, in_dtype),
        C: T.Tensor((M, N), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared(A_shared_shape, in_dtype, scope="shared")
            A_local = T.alloc_fragment(A_shared_shape, in_dtype)
            B_shared = T.alloc_shared(B_shared_shape, in_dtype, scope="shared")
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                if trans_A:
                    T.copy(A[k * block_K, by * block_M], A_shared)
                    T.copy(A_shared, A_local)
                else:
                    T.copy(A[by * block_M, k * block_K], A_shared)
                    T.copy(A_shared, A_local)
                if trans_B:
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_local, B_shared, C_local, trans_A, trans_B)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def run(factory, M, N, K, trans_A, trans_B, in_dtype, out_dtype, accum_dtype, block_M,
        block_N, block_K, num_stages=0, num_threads=128):
    program = factory(M, N, K, block_M, block_N, block_K, trans_A, trans_B, in_dtype,
                      out_dtype, accum_dtype, num_stages, num_threads)
    kernel = tilelang.compile(program, out_idx=[2])
    profiler = kernel.get_profiler()

    def ref_program(A, B):
        A = A.T if trans_A else A
        B = B.T if trans_B else B
        wide = np.float64 if str(in_dtype) == "float64" else np.float32
        if str(in_dtype) == "int8":
            wide = np.int64
        return (A.astype(wide) @ B.astype(wide)).astype(numpy_dtype(str(out_dtype)))

    profiler.assert_allclose(ref_program, atol=1e-2, rtol=1e-2)


# (M, N, K, trans_A, trans_B, in, out, accum, block_M, block_N, block_K, stages): TileLang's
# cases with their sizes divided by 8 (the ragged ones keep their odd remainders)
GEMM_CASES = [
    (64 - 9, 128 - 7, 96 - 5, False, False, T.float16, T.float16, T.float16, 32, 64, 16, 2),
    (64, 128, 96, False, True, T.int8, T.int8, T.int32, 32, 32, 32, 0),
    (64, 128, 96, True, False, T.float16, T.float16, T.float16, 32, 32, 16, 0),
    (64, 128, 96, False, False, T.float16, T.float16, T.float16, 32, 32, 16, 0),
    (64, 128, 96, False, False, T.float16, T.float16, T.float32, 32, 32, 16, 0),
    (64, 128, 96, False, False, T.bfloat16, T.bfloat16, T.float32, 32, 32, 16, 0),
    (64, 128, 96, False, False, T.float32, T.float32, T.float32, 32, 32, 16, 0),
    (64, 128, 96, False, True, T.float16, T.float16, T.float16, 32, 32, 16, 0),
    (64, 128, 96, True, False, T.int8, T.int8, T.int32, 32, 32, 32, 0),
    (64, 64, 64, False, True, T.float64, T.float64, T.float64, 32, 16, 16, 0),
    (64 - 8, 128 - 32, 96 - 24, False, False, T.float16, T.float16, T.float16, 32, 64, 16, 2),
    (64 + 19, 128 + 17, 96 + 15, False, False, T.float16, T.float16, T.float32, 32, 16, 16, 0),
]


@pytest.mark.parametrize("case", slow_beyond(GEMM_CASES, 3, one_arg=True), ids=lambda c: f"{c[5]}-{c[6]}-{c[7]}-"
                         f"{'t' if c[3] else 'n'}{'t' if c[4] else 'n'}-{c[0]}x{c[1]}x{c[2]}")
def test_gemm(target, case):
    run(matmul, *case)


# sr / rs: TileLang's four transposes each, fp16 in, fp16 out, fp16 accumulate
SR_CASES = [(False, False), (False, True), (True, False), (True, True)]


@pytest.mark.parametrize("factory", [matmul_sr, matmul_rs], ids=["sr", "rs"])
@pytest.mark.parametrize("trans_A,trans_B", slow_beyond(SR_CASES[::-1], 1))
def test_gemm_fragment_operand(target, factory, trans_A, trans_B):
    run(factory, 64, 64, 64, trans_A, trans_B, T.float16, T.float16, T.float16, 32, 32, 16, 1)
