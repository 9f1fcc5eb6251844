"""Ports of TileLang's language tests on buffers and loops (testing/python/language:
clear, parallel, alloc): kernel lines as TileLang writes them, shapes shrunk, checked
against numpy. A T.Parallel of run-time extent runs on tcsim too (serially: its
iterations are independent); `T.copy(A[i], B[i])` copies one element, as in TileLang."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T

from .helpers import close, randn


def matmul_clear(M, N, K, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=0):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.clear(A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])
    return main


def test_clear_of_a_shared_operand_zeroes_the_product(target):
    k = tilelang.compile(matmul_clear(64, 64, 64, 32, 32, 16), out_idx=[2])
    c = k(randn(64, 64).astype(np.float16), randn(64, 64).astype(np.float16))
    assert (np.asarray(c, np.float32) == 0).all()


def test_fill_cast_zero(target):
    @T.prim_func
    def main(out: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128):
            smem = T.alloc_shared((128,), T.float32)
            for i in T.Parallel(128):
                smem[i] = T.float32(1.0)
            T.fill(smem, T.cast(0, T.float32))
            T.copy(smem, out)
    out = np.ones(128, np.float32)
    tilelang.compile(main)(out)
    assert (out == 0).all()


@pytest.mark.parametrize("value", [-7, -128, -1, 5])
def test_fill_int8_negative(target, value):
    M, N = 8, 128
    def program(value):
        @T.prim_func
        def main(out: T.Tensor((M, N), "int8")):
            with T.Kernel(1, threads=128):
                smem = T.alloc_shared((M, N), "int8")
                T.fill(smem, value)
                T.copy(smem, out)
        return main
    out = tilelang.compile(program(value), out_idx=[0])()
    assert (out == value).all()


@tilelang.jit(out_idx=[1])
def parallel_elementwise_static(length=256, dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((length,), dtype), B: T.Tensor((length,), dtype)):
        with T.Kernel(1, threads=length) as _:
            for i in T.Parallel(length):
                B[i] = A[i] + 1.0
    return main


@tilelang.jit(out_idx=[1])
def parallel_elementwise_dynamic(max_len=512, threads=256, dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((max_len,), dtype), B: T.Tensor((max_len,), dtype), valid_len: T.int32):
        with T.Kernel(1, threads=threads) as _:
            for i in T.Parallel(max_len):
                B[i] = 0.0
            span = T.min(valid_len, max_len)
            for i in T.Parallel(span):
                B[i] = A[i] - 1.0
    return main


def test_parallel_static(target):
    a = randn(256)
    close(parallel_elementwise_static(256)(a), a + 1)


@pytest.mark.parametrize("valid_len", [0, 13, 200, 600])
def test_parallel_dynamic(target, valid_len):
    a = randn(512)
    out = parallel_elementwise_dynamic(max_len=512, threads=256)(a, valid_len)
    ref = np.zeros_like(a)
    c = min(valid_len, 512)
    ref[:c] = a[:c] - 1
    close(out, ref)


@tilelang.jit
def _parallel_vectorize_local_and_var():
    with T.Kernel(1) as _:
        x = T.alloc_fragment([256], T.float32)
        y = T.alloc_fragment([256], T.float32)
        z = T.alloc_var(T.float32)
        for i in T.parallel(256):
            y[i] = x[i] * z


def test_parallel_loop_without_parameters_compiles(target):
    assert _parallel_vectorize_local_and_var.get_kernel_source().strip()


def alloc_var(N, block_N, dtype):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=block_N) as bx:
            A_shared = T.alloc_shared([block_N], dtype)
            tmp = T.alloc_var(dtype)
            tmp = 1  # noqa: F841
            T.copy(A[bx * block_N], A_shared)
            T.copy(A_shared, B[bx * block_N])
    return main


def alloc_var_add(N, block_N, dtype):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=block_N) as bx:
            A_shared = T.alloc_shared([block_N], dtype)
            tmp = T.alloc_var(dtype)
            tmp = 1  # noqa: F841
            T.copy(A[bx * block_N], A_shared)
            for i in T.Parallel(block_N):
                A_shared[i] = A_shared[i] + tmp
            T.copy(A_shared, B[bx * block_N])
    return main


def alloc_var_with_initializer(N, block_N, dtype, init_value):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=block_N) as bx:
            tmp = T.alloc_var(dtype, init_value)
            T.copy(A[bx * block_N], B[bx * block_N])
            for i in T.Parallel(block_N):
                B[bx * block_N + i] = tmp
    return main


def alloc_multi_vars_with_initializer(N, block_N, dtype):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=block_N) as bx:
            tmp0 = T.alloc_var(dtype, 1)
            tmp1 = T.alloc_var(dtype, 2)
            T.copy(A[bx * block_N], B[bx * block_N])
            for i in T.Parallel(block_N):
                B[bx * block_N + i] = tmp0 + tmp1
    return main


def alloc_global(N, block_N, dtype):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        C = T.alloc_global((N,), dtype)
        with T.Kernel(T.ceildiv(N, block_N), threads=block_N) as bx:
            T.copy(A[bx * block_N : (bx + 1) * block_N], C[bx * block_N : (bx + 1) * block_N])
            T.copy(C[bx * block_N : (bx + 1) * block_N], B[bx * block_N : (bx + 1) * block_N])
    return main


@tilelang.jit
def alloc_global_eagerjit(A, block_N, dtype):
    N = T.const("N")
    A: T.Tensor[[N], dtype]
    B = T.empty([N,], dtype=dtype)
    C = T.alloc_global([N,], dtype)
    with T.Kernel(T.ceildiv(N, block_N), threads=block_N) as bx:
        T.copy(A[bx * block_N : (bx + 1) * block_N], C[bx * block_N : (bx + 1) * block_N])
        T.copy(C[bx * block_N : (bx + 1) * block_N], B[bx * block_N : (bx + 1) * block_N])
    return B


def test_alloc(target):
    a = randn(256).astype(np.float16)
    close(tilelang.compile(alloc_var(256, 64, "float16"), out_idx=[1])(a), a)
    close(tilelang.compile(alloc_var_add(256, 64, "float16"), out_idx=[1])(a), a.astype(np.float32) + 1, 1e-2, 1e-2)
    ai = np.arange(256, dtype=np.int32)
    assert (tilelang.compile(alloc_var_with_initializer(256, 64, "int32", 5), out_idx=[1])(ai) == 5).all()
    assert (tilelang.compile(alloc_multi_vars_with_initializer(256, 64, "int32"), out_idx=[1])(ai) == 3).all()
    close(tilelang.compile(alloc_global(256, 64, "float16"), out_idx=[1])(a), a)
    close(alloc_global_eagerjit(a, 64, "float16"), a)


@T.prim_func
def element_copy(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
    with T.Kernel(1, threads=32):
        T.copy(A[3], B[5])


def test_copy_between_two_elements_copies_one(target):
    a, b = randn(8), np.zeros(8, np.float32)
    tilelang.compile(element_copy)(a, b)
    want = np.zeros(8, np.float32)
    want[5] = a[3]
    close(b, want, 0, 0)
