"""Ports of TileLang's atomic tests (testing/python/language/test_tilelang_language_atomic.py):
T.atomic_add / max / min on elements inside T.Parallel and on whole tiles, with
`memory_order=` and `return_prev=True`, T.atomic_addx2 / addx4, T.atomic_load /
T.atomic_store and T.atomic_or, checked against numpy on both targets. Shapes are
smaller than TileLang's; the kernels' lines are TileLang's."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.diagnostics import TileLangError
from tilelang.dtypes import numpy_dtype

from .helpers import close, randn, slow_beyond



# ----------------------------------------------------------------- element atomics

@tilelang.jit
def atomic_add_program(K, M, N, block_M, block_N, dtype=T.float32):
    @T.prim_func
    def atomic_add(A: T.Tensor((K, M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), K, threads=32) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_N), dtype)

            T.copy(A[bz, bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N], A_shared)

            for i, j in T.Parallel(block_M, block_N):
                T.atomic_add(B[bx * block_M + i, by * block_N + j], A_shared[i, j])

    return atomic_add


@tilelang.jit
def atomic_memory_order_program(K, M, N, block_M, block_N, dtype=T.float32):
    @T.prim_func
    def atomic_with_memory_order(A: T.Tensor((K, M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), K, threads=32) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_N), dtype)

            T.copy(A[bz, bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N], A_shared)

            for i, j in T.Parallel(block_M, block_N):
                T.atomic_add(B[bx * block_M + i, by * block_N + j], A_shared[i, j], memory_order="relaxed")

    return atomic_with_memory_order


@tilelang.jit
def atomic_add_complicated_parallel_program(K, M, N, block_M, block_N, dtype=T.float32):
    @T.prim_func
    def atomic_add(A: T.Tensor((K, M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), K, threads=32) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_N), dtype)

            T.copy(A[bz, bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N], A_shared)

            for i, j in T.Parallel(block_M, block_N):
                value = A_shared[i, j]
                T.atomic_add(B[bx * block_M + i, by * block_N + j], value)

    return atomic_add


@pytest.mark.parametrize("program", [atomic_add_program, atomic_memory_order_program,
                                     atomic_add_complicated_parallel_program])
def test_atomic_add(target, program):
    K, M, N = 4, 32, 32
    A, B = randn(K, M, N), np.zeros((M, N), np.float32)
    program(K, M, N, 16, 16)(A, B)
    close(B, A.sum(0), 1e-5, 1e-5)


@tilelang.jit
def atomic_max_program(K, M, N, block_M, block_N, dtype=T.float32):
    @T.prim_func
    def atomic_max(A: T.Tensor((K, M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), K, threads=32) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_N), dtype)

            T.copy(A[bz, bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N], A_shared)

            for i, j in T.Parallel(block_M, block_N):
                T.atomic_max(B[bx * block_M + i, by * block_N + j], A_shared[i, j])

    return atomic_max


@tilelang.jit
def atomic_min_program(K, M, N, block_M, block_N, dtype=T.float32):
    @T.prim_func
    def atomic_min(A: T.Tensor((K, M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), K, threads=32) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_N), dtype)

            T.copy(A[bz, bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N], A_shared)

            for i, j in T.Parallel(block_M, block_N):
                T.atomic_min(B[bx * block_M + i, by * block_N + j], A_shared[i, j])

    return atomic_min


def test_atomic_max_min(target):
    K, M, N = 4, 32, 32
    A = randn(K, M, N)
    B = np.zeros((M, N), np.float32)
    atomic_max_program(K, M, N, 16, 16)(A, B)
    np.testing.assert_array_equal(B, np.maximum(A.max(0), 0))
    D = np.full((M, N), np.inf, np.float32)
    atomic_min_program(K, M, N, 16, 16)(A, D)
    np.testing.assert_array_equal(D, A.min(0))


@tilelang.jit
def atomic_different_memory_orders_program(M, N, block_M, block_N, dtype=T.float32):
    @T.prim_func
    def atomic_different_orders(
        A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype), D: T.Tensor((M, N), dtype)
    ):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), threads=32) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                idx_i = bx * block_M + i
                idx_j = by * block_N + j
                if idx_i < M and idx_j < N:
                    val = A[idx_i, idx_j]
                    T.atomic_add(B[idx_i, idx_j], val, memory_order="release")
                    T.atomic_max(C[idx_i, idx_j], val, memory_order="relaxed")
                    T.atomic_min(D[idx_i, idx_j], val, memory_order="relaxed")

    return atomic_different_orders


@pytest.mark.parametrize("dtype", slow_beyond([T.float16, T.float32, T.bfloat16], 1))
def test_atomic_different_memory_orders(target, dtype):
    M = N = 16
    A = randn(M, N, dtype=numpy_dtype(str(dtype)))
    B, C = np.zeros_like(A), np.zeros_like(A)
    D = np.full_like(A, np.inf)
    atomic_different_memory_orders_program(M, N, 8, 8, dtype=dtype)(A, B, C, D)
    a = A.astype(np.float32)
    close(B, a, 1e-3, 1e-3)
    close(C, np.maximum(a, 0), 0, 0)
    close(D, a, 0, 0)


@tilelang.jit
def atomic_return_prev_program(M, N, block_M, block_N, dtype=T.float32):
    @T.prim_func
    def atomic_with_return_prev(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), old_vals: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), threads=32) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                idx_i = bx * block_M + i
                idx_j = by * block_N + j
                if idx_i < M and idx_j < N:
                    old_vals[idx_i, idx_j] = T.atomic_add(B[idx_i, idx_j], A[idx_i, idx_j], return_prev=True)

    return atomic_with_return_prev


@pytest.mark.parametrize("dtype", slow_beyond([T.bfloat16, T.float32, T.float16], 1))
def test_atomic_return_prev(target, dtype):
    M = N = 16
    A = (np.ones((M, N)) * 5).astype(numpy_dtype(str(dtype)))
    B = (np.ones((M, N)) * 2).astype(numpy_dtype(str(dtype)))
    old = np.zeros_like(A)
    atomic_return_prev_program(M, N, 8, 8, dtype=dtype)(A, B, old)
    close(old, np.full((M, N), 2.0), 0, 0)
    close(B, np.full((M, N), 7.0), 0, 0)


def atomic_scalar_return_prev_program(op_name, val):
    atom = getattr(T, op_name)

    @T.prim_func
    def main(Dst: T.Tensor((1,), "float32"), Prev: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=1):
            Prev[0] = atom(Dst[0], val, return_prev=True)

    return main


@pytest.mark.parametrize("op_name", ["atomic_max", "atomic_min"])
def test_atomic_scalar_return_prev(target, op_name):
    val = 5.0 if op_name == "atomic_max" else 1.0
    if target != "cpu":         # tcsim's scalar unit has ATOM.ADD only
        with pytest.raises(TileLangError) as info:
            tilelang.compile(atomic_scalar_return_prev_program(op_name, val))
        assert info.value.diagnostics[0].code == "TL0806"
        return
    kernel = tilelang.compile(atomic_scalar_return_prev_program(op_name, val))
    dst = np.array([3.0], np.float32)
    prev = np.zeros(1, np.float32)
    kernel(dst, prev)
    assert prev[0] == 3.0
    assert dst[0] == (max(3.0, val) if op_name == "atomic_max" else min(3.0, val))


def _scalar_literal_program(op, dtype):
    @tilelang.jit
    def wrapper():
        @T.prim_func
        def kernel(dst: T.Tensor((1,), dtype)):
            with T.Kernel(1, threads=1):
                if op == "max":
                    T.atomic_max(dst[0], 42.0)  # python float literal is fp32
                else:
                    T.atomic_min(dst[0], 42.0)  # python float literal is fp32

        return kernel

    return wrapper()


@pytest.mark.parametrize("dtype", slow_beyond(["bfloat16", "float16"], 1))
@pytest.mark.parametrize("op,start", [("max", -1e4), ("min", 1e4)])
def test_atomic_scalar_literal(target, op, start, dtype):
    dst = np.full(1, start, numpy_dtype(dtype))
    _scalar_literal_program(op, dtype)(dst)
    assert float(dst[0]) == 42.0


@tilelang.jit
def atomic_add_contended_program(N, threads, dtype):
    @T.prim_func
    def atomic_add_contended(A: T.Tensor((N,), dtype), Out: T.Tensor((1,), dtype)):
        with T.Kernel(1, threads=threads) as _:
            for i in T.Parallel(N):
                T.atomic_add(Out[0], A[i])

    return atomic_add_contended


@pytest.mark.parametrize("dtype", slow_beyond([T.bfloat16, T.float32], 1))
def test_atomic_add_contended(target, dtype):
    N = 128
    out = np.zeros(1, numpy_dtype(str(dtype)))
    atomic_add_contended_program(N, 128, dtype)(np.ones(N, numpy_dtype(str(dtype))), out)
    assert float(out[0]) == N


# ----------------------------------------------------------------- x2 / x4

@tilelang.jit
def atomic_addx2_program(M, N, block_M, block_N, dtype=T.float16):
    @T.prim_func
    def atomic_addx2(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), threads=32) as (bx, by):
            for i, j in T.Parallel(block_M, block_N // 2):
                idx_i = bx * block_M + i
                idx_j = by * block_N + j * 2
                T.atomic_addx2(B[idx_i, idx_j], A[idx_i, idx_j])

    return atomic_addx2


@tilelang.jit
def atomic_addx4_program(M, N, block_M, block_N):
    @T.prim_func
    def atomic_addx4(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), threads=32) as (bx, by):
            for i, j in T.Parallel(block_M, block_N // 4):
                idx_i = bx * block_M + i
                idx_j = by * block_N + j * 4
                T.atomic_addx4(B[idx_i, idx_j], A[idx_i, idx_j])

    return atomic_addx4


@pytest.mark.parametrize("dtype", slow_beyond([T.float16, T.float32], 1))
def test_atomic_addx2(target, dtype):
    M, N = 16, 32
    A = randn(M, N, dtype=numpy_dtype(str(dtype)))
    B = np.ones_like(A)
    atomic_addx2_program(M, N, 8, 16, dtype=dtype)(A, B)
    close(B, A.astype(np.float32) + 1, 1e-3, 1e-3)


def test_atomic_addx4(target):
    M, N = 16, 32
    A = randn(M, N)
    B = np.ones_like(A)
    atomic_addx4_program(M, N, 4, 4)(A, B)
    close(B, A + 1, 1e-6, 1e-6)


@tilelang.jit
def atomic_add_mixed_dtype_program(N, src_dtype, dst_dtype):
    @T.prim_func
    def atomic_add(Src: T.Tensor((N,), src_dtype), Out: T.Tensor((N,), dst_dtype)):
        with T.Kernel(threads=1):
            frag = T.alloc_fragment((N,), src_dtype)
            for i in T.Parallel(N):
                frag[i] = Src[i]
            for i in T.Parallel(N):
                T.atomic_add(Out[i], frag[i])

    return atomic_add


@tilelang.jit
def atomic_addx2_mixed_dtype_program(M, N, block_M, block_N, src_dtype, dst_dtype):
    @T.prim_func
    def atomic_addx2(A: T.Tensor((M, N), src_dtype), B: T.Tensor((M, N), dst_dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), threads=32) as (bx, by):
            for i, j in T.Parallel(block_M, block_N // 2):
                idx_i = bx * block_M + i
                idx_j = by * block_N + j * 2
                T.atomic_addx2(B[idx_i, idx_j], A[idx_i, idx_j])

    return atomic_addx2


@pytest.mark.parametrize("dst_dtype", slow_beyond([T.bfloat16, T.float16], 1))
def test_atomic_add_mixed_dtype(target, dst_dtype):
    src = np.arange(1, 9, dtype=np.float32)
    out = np.zeros(8, numpy_dtype(str(dst_dtype)))
    atomic_add_mixed_dtype_program(8, T.float32, dst_dtype)(src, out)
    close(out, src, 0, 0)
    A = randn(16, 32)
    B = np.zeros((16, 32), numpy_dtype(str(dst_dtype)))
    atomic_addx2_mixed_dtype_program(16, 32, 8, 16, T.float32, dst_dtype)(A, B)
    close(B, A.astype(numpy_dtype(str(dst_dtype))), 0, 0)


@tilelang.jit
def atomic_add_vectorized_memory_order_program(N, threads, memory_order, dtype=T.float16):
    @T.prim_func
    def atomic_add(X: T.Tensor((N,), dtype), Out: T.Tensor((N,), dtype)):
        with T.Kernel(1, threads=threads):
            T.atomic_add(Out[0:N], X[0:N], memory_order=memory_order)

    return atomic_add


@pytest.mark.parametrize("memory_order", slow_beyond(["acq_rel", "acquire", "release"], 1))
@pytest.mark.parametrize("dtype", [T.float16, T.bfloat16])
def test_atomic_add_tile_memory_order(target, memory_order, dtype):
    X = randn(64, dtype=numpy_dtype(str(dtype)))
    out = np.zeros_like(X)
    atomic_add_vectorized_memory_order_program(64, 32, memory_order, dtype=dtype)(X, out)
    close(out, X, 0, 0)


def atomic_addx2_return_prev_program(dtype=T.float32):
    @T.prim_func
    def main(Dst: T.Tensor((2,), dtype), Val: T.Tensor((2,), dtype), Prev: T.Tensor((2,), dtype)):
        with T.Kernel(1, threads=1):
            Prev[0:2] = T.atomic_addx2(Dst[0:2], Val[0:2], return_prev=True)

    return main


def atomic_addx2_return_prev_let_bound_program(dtype=T.float32):
    @T.prim_func
    def main(Dst: T.Tensor((2,), dtype), Val: T.Tensor((2,), dtype), Prev: T.Tensor((2,), dtype)):
        with T.Kernel(1, threads=1):
            dst = Dst[0:2]
            val = Val[0:2]
            Prev[0:2] = T.atomic_addx2(dst, val, return_prev=True)

    return main


def atomic_addx4_return_prev_program(dtype=T.float32):
    @T.prim_func
    def main(Dst: T.Tensor((4,), dtype), Val: T.Tensor((4,), dtype), Prev: T.Tensor((4,), dtype)):
        with T.Kernel(1, threads=1):
            Prev[0:4] = T.atomic_addx4(Dst[0:4], Val[0:4], return_prev=True)

    return main


@pytest.mark.parametrize("make,n", [(atomic_addx2_return_prev_program, 2),
                                    (atomic_addx2_return_prev_let_bound_program, 2),
                                    (atomic_addx4_return_prev_program, 4)])
@pytest.mark.parametrize("dtype", slow_beyond([T.float32, T.bfloat16, T.float16], 2))
def test_atomic_addx_return_prev(target, make, n, dtype):
    kernel = tilelang.compile(make(dtype))
    dst = np.arange(1, n + 1).astype(numpy_dtype(str(dtype)))
    val = (np.arange(1, n + 1) * 10).astype(numpy_dtype(str(dtype)))
    prev = np.zeros(n, numpy_dtype(str(dtype)))
    kernel(dst, val, prev)
    close(prev, np.arange(1, n + 1), 0, 0)
    close(dst, np.arange(1, n + 1) * 11, 0, 0)


# ----------------------------------------------------------------- tile atomics

@tilelang.jit
def tile_atomic_add_program(K, M, N, block_M, block_N, dtype=T.float32):
    @T.prim_func
    def atomic_add(A: T.Tensor((K, M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), K, threads=32) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_N), dtype)

            T.copy(A[bz, bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N], A_shared)

            T.atomic_add(B[bx * block_M, by * block_N], A_shared)

    return atomic_add


@tilelang.jit
def tile_atomic_max_program(K, M, N, block_M, block_N, dtype=T.float32):
    @T.prim_func
    def tile_atomic_max(A: T.Tensor((K, M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), K, threads=32) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_N), dtype)

            T.copy(A[bz, bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N], A_shared)

            T.atomic_max(B[bx * block_M, by * block_N], A_shared)

    return tile_atomic_max


@tilelang.jit
def tile_atomic_min_program(K, M, N, block_M, block_N, dtype=T.float32):
    @T.prim_func
    def tile_atomic_min(A: T.Tensor((K, M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), K, threads=32) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_N), dtype)

            T.copy(A[bz, bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N], A_shared)

            T.atomic_min(B[bx * block_M, by * block_N], A_shared)

    return tile_atomic_min


@pytest.mark.parametrize("program,start,ref", [
    (tile_atomic_add_program, 0.0, lambda a: a.sum(0)),
    (tile_atomic_max_program, -np.inf, lambda a: a.max(0)),
    (tile_atomic_min_program, np.inf, lambda a: a.min(0))])
def test_tile_atomic(target, program, start, ref):
    K, M, N = 4, 32, 32
    A = randn(K, M, N)
    B = np.full((M, N), start, np.float32)
    program(K, M, N, 16, 16)(A, B)
    close(B, ref(A), 1e-5, 1e-5)


@tilelang.jit
def tile_atomic_add_expr_program(M, N, block_M, block_N, dtype=T.float32):
    @T.prim_func
    def atomic_add(A: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), threads=32) as (bx, by):
            T.atomic_add(A[bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N], 1.0)

    return atomic_add


@tilelang.jit
def tile_atomic_max_expr_program(M, N, block_M, block_N, dtype=T.float32):
    @T.prim_func
    def atomic_max(A: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), threads=32) as (bx, by):
            T.atomic_max(A[bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N], 0.5)

    return atomic_max


def test_tile_atomic_expr(target):
    A = randn(32, 32)
    want = A + 1
    tile_atomic_add_expr_program(32, 32, 16, 16)(A)
    close(A, want, 0, 0)
    A = randn(32, 32)
    want = np.maximum(A, 0.5)
    tile_atomic_max_expr_program(32, 32, 16, 16)(A)
    close(A, want, 0, 0)


@tilelang.jit
def tile_atomic_add_scalar_program(dtype=T.float32):
    @T.prim_func
    def atomic_add(A: T.Tensor((1), dtype), B: T.Tensor((1), dtype)):
        with T.Kernel(
            1,
        ) as _:
            A_local = T.alloc_local([1], dtype)
            T.copy(A, A_local)
            T.clear(B)
            T.atomic_add(B, A_local)
            T.atomic_add(B, 1)

    return atomic_add


def test_tile_atomic_add_scalar(target):
    A = randn(1)
    B = np.full(1, 7.0, np.float32)
    tile_atomic_add_scalar_program()(A, B)
    close(B, A + 1, 1e-6, 1e-6)


# ----------------------------------------------------------------- load / store / or

@tilelang.jit
def atomic_load_store_program(M, N, block_M, block_N, dtype=T.float32):
    @T.prim_func
    def atomic_load_store(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), threads=32) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                idx_i = bx * block_M + i
                idx_j = by * block_N + j
                if idx_i < M and idx_j < N:
                    val = T.atomic_load(A[idx_i, idx_j])
                    T.atomic_store(B[idx_i, idx_j], val)

    return atomic_load_store


def test_atomic_load_store(target):
    A = randn(32, 32)
    B = np.zeros_like(A)
    atomic_load_store_program(32, 32, 16, 16)(A, B)
    np.testing.assert_array_equal(B, A)


def _build_atomic_load_with_memory_order(memory_order):
    @T.prim_func
    def kernel(source: T.Tensor((1,), T.int32), output: T.Tensor((1,), T.int32)):
        with T.Kernel(1, threads=1):
            output[0] = T.atomic_load(source[0], memory_order=memory_order)

    return kernel


def _build_atomic_store_with_memory_order(memory_order):
    @T.prim_func
    def kernel(destination: T.Tensor((1,), T.int32)):
        with T.Kernel(1, threads=1):
            T.atomic_store(destination[0], 1, memory_order=memory_order)

    return kernel


@pytest.mark.parametrize("memory_order", slow_beyond(["acquire", "relaxed", "consume", "seq_cst"], 1))
def test_atomic_load_accepts_valid_memory_orders(target, memory_order):
    out = np.zeros(1, np.int32)
    tilelang.compile(_build_atomic_load_with_memory_order(memory_order))(
        np.array([9], np.int32), out)
    assert out[0] == 9


@pytest.mark.parametrize("memory_order", slow_beyond(["release", "relaxed", "seq_cst"], 1))
def test_atomic_store_accepts_valid_memory_orders(target, memory_order):
    out = np.zeros(1, np.int32)
    tilelang.compile(_build_atomic_store_with_memory_order(memory_order))(out)
    assert out[0] == 1


@pytest.mark.parametrize("build,memory_order", [
    (_build_atomic_load_with_memory_order, "release"),
    (_build_atomic_load_with_memory_order, "acq_rel"),
    (_build_atomic_load_with_memory_order, "invalid"),
    (_build_atomic_store_with_memory_order, "consume"),
    (_build_atomic_store_with_memory_order, "acquire"),
    (_build_atomic_store_with_memory_order, "acq_rel"),
    (_build_atomic_store_with_memory_order, "invalid")])
def test_atomic_load_store_reject_memory_orders(build, memory_order):
    with pytest.raises(TileLangError) as info:
        tilelang.compile(build(memory_order))
    what = "atomic_load" if build is _build_atomic_load_with_memory_order else "atomic_store"
    assert f"T.{what} does not support memory_order" in info.value.diagnostics[0].message
    assert "memory_order=memory_order" in str(info.value)


def test_atomic_or_is_a_diagnostic():
    """TileLang's bitwise atomics are not supported here: a diagnostic at the call."""
    @T.prim_func
    def atomic_or_kernel(A: T.Tensor((1,), T.int32), mask: T.int32):
        with T.Kernel(1, threads=32):
            T.atomic_or(A[0], mask, memory_order="release")

    with pytest.raises(TileLangError) as info:
        tilelang.compile(atomic_or_kernel)
    diag = info.value.diagnostics[0]
    assert diag.code == "TL0316" and "`T.atomic_or` (a bitwise atomic)" in diag.message
    assert "T.atomic_or(A[0], mask" in str(info.value)
