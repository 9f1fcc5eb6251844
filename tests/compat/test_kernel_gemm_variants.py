"""Ports of TileLang's further GEMM kernel tests (testing/python/kernel/): batched GEMM over
slices of 3-d shared tiles (gemm_batched), operands that are strided sub-regions of wider
shared tiles (gemm_with_stride), the Turing / Volta cases (gemm_sm75, sm70_gemm_fma,
sm75_gemm_fma, sm70_fragment_copy: fp16 / bf16 / fp32 / fp64 / int8 / uint8, a fragment
converted and fed to the next GEMM, a transposed A), checked against numpy on both
targets. The factories' lines are TileLang's; TileLang's checks of the generated CUDA
(which MMA atom, the FMA fallback) have no counterpart here and are replaced by the
values. The int4 case is out of scope (sub-byte dtypes are stored packed in uint8)."""
import ml_dtypes
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.dtypes import numpy_dtype

from .helpers import RNG, close, randn, slow_beyond

_SM75 = {"kind": "cuda", "arch": "sm_75"}


def f64(x):
    return np.asarray(x, dtype=np.float64)


def matmul_batched(
    batch,
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
    A_shape = (batch, K, M) if trans_A else (batch, M, K)
    B_shape = (batch, N, K) if trans_B else (batch, K, N)
    A_shared_shape = (batch, block_K, block_M) if trans_A else (batch, block_M, block_K)
    B_shared_shape = (batch, block_N, block_K) if trans_B else (batch, block_K, block_N)

    @T.prim_func
    def main(
        A: T.Tensor(A_shape, in_dtype),
        B: T.Tensor(B_shape, in_dtype),
        C: T.Tensor((batch, M, N), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared(A_shared_shape, in_dtype)
            B_shared = T.alloc_shared(B_shared_shape, in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.disable_warp_group_reg_alloc()
            for b in T.serial(batch):
                T.clear(C_local)
                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                    if trans_A:
                        T.copy(A[b, k * block_K, by * block_M], A_shared[b, :, :])
                    else:
                        T.copy(A[b, by * block_M, k * block_K], A_shared[b, :, :])
                    if trans_B:
                        T.copy(B[b, bx * block_N, k * block_K], B_shared[b, :, :])
                    else:
                        T.copy(B[b, k * block_K, bx * block_N], B_shared[b, :, :])
                    T.gemm(A_shared[b, :, :], B_shared[b, :, :], C_local, trans_A, trans_B)
                T.copy(C_local, C[b, by * block_M, bx * block_N])

    return main


def matmul_with_stride(M, N, K, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        # Initialize Kernel Context
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K * 2), dtype, scope="shared")
            B_shared = T.alloc_shared((block_K, block_N * 2), dtype, scope="shared")
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            # Clear local accumulation
            T.clear(C_local)
            T.clear(B_shared)
            T.clear(A_shared)

            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=0):
                # Copy tile of A
                # T.copy(A[by * block_M, ko * block_K], A_shared)
                for i, k in T.Parallel(block_M, block_K):
                    A_shared[i, k + block_K] = A[by * block_M + i, ko * block_K + k]

                # Copy tile of B
                # T.copy(B[ko * block_K, bx * block_N], B_shared)
                for i, k in T.Parallel(block_K, block_N):
                    B_shared[i, k] = B[ko * block_K + i, bx * block_N + k]

                # Perform a tile-level GEMM on the shared buffers
                # Currently we dispatch to the cute/hip on Nvidia/AMD GPUs
                T.gemm(A_shared[:, block_K:], B_shared[0:block_K, 0:block_N], C_local)

            # Copy result back to global memory
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def _make_gemm_kernel(M, N, K, block_M, block_N, block_K, in_dtype, out_dtype, accum_dtype):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), in_dtype),
        B: T.Tensor((N, K), in_dtype),
        C: T.Tensor((M, N), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), in_dtype)
            B_shared = T.alloc_shared((block_N, block_K), in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            T.clear(C_local)
            for ko in T.serial(T.ceildiv(K, block_K)):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def _make_bf16_ss_gemm():
    @T.prim_func
    def main(
        A: T.Tensor((64, 16), T.bfloat16),
        B: T.Tensor((16, 16), T.bfloat16),
        C: T.Tensor((64, 16), T.float32),
    ):
        with T.Kernel(1, threads=128):
            A_shared = T.alloc_shared((64, 16), T.bfloat16)
            B_shared = T.alloc_shared((16, 16), T.bfloat16)
            C_local = T.alloc_fragment((64, 16), T.float32)

            T.copy(A, A_shared)
            T.copy(B, B_shared)
            T.clear(C_local)
            T.gemm(A_shared, B_shared, C_local, policy=T.GemmWarpPolicy.FullRow)
            T.copy(C_local, C)

    return main


def _make_bf16_ss_and_rs_gemm():
    @T.prim_func
    def main(
        A: T.Tensor((64, 16), T.bfloat16),
        B: T.Tensor((16, 16), T.bfloat16),
        C: T.Tensor((64, 16), T.float32),
    ):
        with T.Kernel(1, threads=128):
            A_shared = T.alloc_shared((64, 16), T.bfloat16)
            B_shared = T.alloc_shared((16, 16), T.bfloat16)
            P = T.alloc_fragment((64, 16), T.float32)
            P_bf16 = T.alloc_fragment((64, 16), T.bfloat16)
            C_local = T.alloc_fragment((64, 16), T.float32)

            T.copy(A, A_shared)
            T.copy(B, B_shared)

            T.clear(P)
            T.gemm(A_shared, B_shared, P, policy=T.GemmWarpPolicy.FullRow)
            T.copy(P, P_bf16)

            T.clear(C_local)
            T.gemm(P_bf16, B_shared, C_local, policy=T.GemmWarpPolicy.FullRow)
            T.copy(C_local, C)

    return main


def _make_fp16_transposed_a_ss_gemm():
    @T.prim_func
    def main(
        A: T.Tensor((16, 64), T.float16),
        B: T.Tensor((16, 16), T.float16),
        C: T.Tensor((64, 16), T.float32),
    ):
        with T.Kernel(1, threads=128):
            A_shared = T.alloc_shared((16, 64), T.float16)
            B_shared = T.alloc_shared((16, 16), T.float16)
            C_local = T.alloc_fragment((64, 16), T.float32)

            T.copy(A, A_shared)
            T.copy(B, B_shared)
            T.clear(C_local)
            T.gemm(A_shared, B_shared, C_local, transpose_A=True, policy=T.GemmWarpPolicy.FullRow)
            T.copy(C_local, C)

    return main


def _make_ss_gemm(M, N, K, in_dtype, accum_dtype, threads=128):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), in_dtype),
        B: T.Tensor((K, N), in_dtype),
        C: T.Tensor((M, N), accum_dtype),
    ):
        with T.Kernel(1, threads=threads):
            A_shared = T.alloc_shared((M, K), in_dtype)
            B_shared = T.alloc_shared((K, N), in_dtype)
            C_local = T.alloc_fragment((M, N), accum_dtype)

            T.copy(A, A_shared)
            T.copy(B, B_shared)
            T.clear(C_local)
            T.gemm(A_shared, B_shared, C_local, policy=T.GemmWarpPolicy.FullRow)
            T.copy(C_local, C)

    return main


# ---------------------------------------------------------------------------
# Compile-only dispatch checks pinned to an explicit sm_75 target, so they run
# on any CUDA runner regardless of the host GPU. Turing has no fp32/tf32,
# fp64, or bf16 mma.sync atoms; these dtypes must lower through the FMA
# fallback instead of tl::mma_sync (which fails nvcc's static_assert for bf16
# and compiles into a cutlass runtime trap for fp32/fp64).
# ---------------------------------------------------------------------------


def _make_fragment_cast_into_rs_gemm():
    @T.prim_func
    def main(
        A: T.Tensor((64, 16), T.float16),
        B: T.Tensor((16, 16), T.float16),
        C: T.Tensor((64, 16), T.float32),
    ):
        with T.Kernel(1, threads=128):
            A_shared = T.alloc_shared((64, 16), T.float16)
            B_shared = T.alloc_shared((16, 16), T.float16)
            P = T.alloc_fragment((64, 16), T.float32)
            P_half = T.alloc_fragment((64, 16), T.float16)
            C_local = T.alloc_fragment((64, 16), T.float32)

            T.copy(A, A_shared)
            T.copy(B, B_shared)

            for i, j in T.Parallel(64, 16):
                P[i, j] = T.cast(A_shared[i, j], T.float32)

            T.copy(P, P_half)
            T.clear(C_local)
            T.gemm(P_half, B_shared, C_local, policy=T.GemmWarpPolicy.FullRow)
            T.copy(C_local, C)

    return main


@pytest.mark.parametrize("trans_A,trans_B", [(False, False), (True, True)])
def test_gemm_batched(target, trans_A, trans_B):
    batch, M, N, K = 2, 32, 32, 32
    program = matmul_batched(batch, M, N, K, 32, 32, 16, trans_A, trans_B, T.float16,
                             T.float16, T.float16, 0, 128)
    kernel = tilelang.compile(program, out_idx=[2], pass_configs={
        tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True})

    def ref_program(A, B):
        A = A.transpose(0, 2, 1) if trans_A else A
        B = B.transpose(0, 2, 1) if trans_B else B
        return (f64(A) @ f64(B)).astype(np.float16)

    kernel.get_profiler().assert_allclose(ref_program, atol=1e-2, rtol=1e-2)


def test_gemm_with_stride(target):
    M, N, K = 64, 64, 32
    jit_kernel = tilelang.compile(matmul_with_stride(M, N, K, 32, 32, 16), out_idx=[2],
                                  target="cuda", pass_configs={
                                      tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True})
    a, b = randn(M, K, dtype=np.float16), randn(K, N, dtype=np.float16)
    close(jit_kernel(a, b), f64(a) @ f64(b), 1e-2, 1e-2)


@pytest.mark.parametrize("in_dtype,out_dtype,accum_dtype", slow_beyond([
    (T.uint8, T.int32, T.int32), (T.float16, T.float16, T.float16),
    (T.float16, T.float32, T.float32), (T.int8, T.int32, T.int32)], 2))
def test_sm75_gemm(target, in_dtype, out_dtype, accum_dtype):
    M = N = K = 64
    kernel = tilelang.compile(_make_gemm_kernel(M, N, K, 32, 32, 32, in_dtype, out_dtype,
                                                accum_dtype), target="cuda", out_idx=[2])
    if str(in_dtype) == "uint8":
        a, b = (RNG.integers(0, 256, s).astype(np.uint8) for s in ((M, K), (N, K)))
    elif str(in_dtype) == "int8":
        a, b = (RNG.integers(-8, 8, s).astype(np.int8) for s in ((M, K), (N, K)))
    else:
        a, b = randn(M, K, dtype=np.float16, scale=0.1), randn(N, K, dtype=np.float16, scale=0.1)
    c = kernel(a, b)
    ref = (a.astype(np.int64) @ b.astype(np.int64).T) if a.dtype.kind in "iu" else \
        (f64(a) @ f64(b).T).astype(numpy_dtype(str(out_dtype)))
    close(c, ref, 0 if a.dtype.kind in "iu" else 1e-2, 0 if a.dtype.kind in "iu" else 1e-2)


def test_sm70_bf16_ss_gemm(target):
    kernel = tilelang.compile(_make_bf16_ss_gemm(), target="cuda", out_idx=[2])
    a, b = randn(64, 16, dtype=ml_dtypes.bfloat16), randn(16, 16, dtype=ml_dtypes.bfloat16)
    close(kernel(a, b), f64(a) @ f64(b), 1e-2, 1e-2)


def test_sm70_bf16_rs_gemm(target):
    kernel = tilelang.compile(_make_bf16_ss_and_rs_gemm(), target="cuda", out_idx=[2])
    a = randn(64, 16, dtype=ml_dtypes.bfloat16, scale=0.25)
    b = randn(16, 16, dtype=ml_dtypes.bfloat16, scale=0.25)
    p = (f64(a) @ f64(b)).astype(ml_dtypes.bfloat16)
    close(kernel(a, b), f64(p) @ f64(b), 2e-2, 2e-2)


def test_sm70_fp16_transposed_a(target):
    kernel = tilelang.compile(_make_fp16_transposed_a_ss_gemm(), target="cuda", out_idx=[2])
    a = randn(16, 64, dtype=np.float16, scale=0.25)
    b = randn(16, 16, dtype=np.float16, scale=0.25)
    close(kernel(a, b), f64(a).T @ f64(b), 1e-2, 1e-2)


@pytest.mark.parametrize("M,N,K,in_dtype,accum_dtype", slow_beyond([
    (32, 32, 32, T.float64, T.float64), (64, 64, 32, T.bfloat16, T.float32),
    (64, 64, 32, T.float32, T.float32), (64, 64, 32, T.float16, T.float32)], 2))
def test_sm75_gemm_fma(target, M, N, K, in_dtype, accum_dtype):
    kernel = tilelang.compile(_make_ss_gemm(M, N, K, in_dtype, accum_dtype), target=_SM75,
                              out_idx=[2])
    dtype = numpy_dtype(str(in_dtype))
    a, b = randn(M, K, dtype=dtype), randn(K, N, dtype=dtype)
    tol = 1e-9 if str(in_dtype) == "float64" else 1e-2
    close(kernel(a, b), f64(a) @ f64(b), tol, tol)


def test_sm70_fragment_cast_copy_feeds_rs_gemm(target):
    kernel = tilelang.compile(_make_fragment_cast_into_rs_gemm(), target="cuda", out_idx=[2])
    a, b = randn(64, 16, dtype=np.float16), randn(16, 16, dtype=np.float16)
    close(kernel(a, b), f64(a) @ f64(b), 1e-2, 1e-2)
