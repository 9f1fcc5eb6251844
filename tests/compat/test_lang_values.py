"""Ports of TileLang's language tests on scalar values (testing/python/language: clamp,
alloc_var_cmp, var_init, ternary, select): kernel lines as TileLang writes them, checked
against numpy. Select kernels that read the thread index are run over a serial loop
instead (thread-level programming is out of scope, docs/compat.md)."""
import warnings

import numpy as np
import pytest

import tilelang
import tilelang.language as T

from .helpers import RNG, close, randn


def clamp_within_bounds(N, block_N, dtype, min_val=None, max_val=None):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=block_N) as bx:
            A_shared = T.alloc_shared([block_N], dtype)
            T.copy(A[bx * block_N], A_shared)
            for i in T.Parallel(block_N):
                A_shared[i] = T.clamp(A_shared[i], min_val=min_val, max_val=max_val)
            T.copy(A_shared, B[bx * block_N])
    return main


@pytest.mark.parametrize("dtype,lo,hi", [("float16", -0.05, 0.05), ("float32", -0.06, 0.05),
                                         ("float32", None, 0.05), ("float32", -0.06, None)])
def test_clamp_keywords_and_open_bounds(target, dtype, lo, hi):
    kernel = tilelang.compile(clamp_within_bounds(256, 64, dtype, lo, hi), out_idx=[1])
    kernel.get_profiler().assert_allclose(lambda A: np.clip(A, lo, hi), atol=1e-2, rtol=1e-2)


def clamp_value_range(N, block_N, dtype):
    @T.prim_func
    def main(A: T.Tensor((1, N), dtype), B: T.Tensor((1, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=block_N) as bx:
            A_frag = T.alloc_fragment([1, block_N], dtype=dtype)
            min_frag = T.alloc_fragment([1], dtype=dtype)
            max_frag = T.alloc_fragment([1], dtype=dtype)
            T.copy(A[0, bx * block_N], A_frag)
            T.reduce_min(A_frag, min_frag, dim=1)
            T.reduce_max(A_frag, max_frag, dim=1)
            for i in T.Parallel(block_N):
                A_frag[0, i] = T.clamp(A_frag[0, i], min_frag[0] * 0.5, max_frag[0] * 0.5)
            T.copy(A_frag, B[0, bx * block_N])
    return main


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_clamp_to_a_reduced_range(target, dtype):
    kernel = tilelang.compile(clamp_value_range(128, 128, dtype), out_idx=[1])
    a = RNG.integers(-5, 5, (1, 128)).astype(dtype)
    close(kernel(a), np.clip(a, a.min() * 0.5, a.max() * 0.5), 0, 0)


@tilelang.jit
def kernel_alloc_var_eq(data):
    N = T.dynamic("N")
    data: T.Tensor[[N], T.int32]
    out = T.empty([N], T.int32)
    with T.Kernel(1) as _:
        for i in T.serial(N):
            cond = T.alloc_var(T.bool)
            cond = data[i] == 2
            if cond:
                out[i] = 1
            else:
                out[i] = 0
    return out


@tilelang.jit
def kernel_alloc_var_not(data):
    N = T.dynamic("N")
    data: T.Tensor[[N], T.int32]
    out = T.empty([N], T.int32)
    with T.Kernel(1) as _:
        for i in T.serial(N):
            cond = T.alloc_var(T.bool)
            cond = data[i] != 0
            out[i] = 0
            if not cond:
                out[i] = 1
    return out


def test_alloc_var_bool_is_tested_at_run_time(target):
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Immutable value.*is re-bound")
        data = np.array([0, 1, 2, 3, 2], np.int32)
        assert list(kernel_alloc_var_eq(data)) == [0, 0, 1, 0, 1]
        data = np.array([0, 1, 2, 3, 0], np.int32)
        assert list(kernel_alloc_var_not(data)) == [1, 0, 0, 0, 1]


@tilelang.jit(out_idx=-1)
def var_assign():
    @T.prim_func
    def test_var_assign(A: T.Tensor((2,), T.int32)):
        with T.Kernel(1) as _:
            a = T.alloc_var(T.int32, init=1)
            b = T.alloc_var(T.int32, init=a)
            a = 2
            d = T.alloc_var(T.int32, init=a)
            A[0] = b
            A[1] = d
    return test_var_assign


def test_alloc_var_initialised_from_another(target):
    assert list(var_assign()()) == [1, 2]


@T.prim_func
def float64_init(A: T.Tensor((1,), T.float64)):
    with T.Kernel(1):
        value = T.alloc_var(T.float64, init=1e300)
        A[0] = value


def test_float64_initialiser_keeps_its_value(target):
    a = np.zeros(1)
    tilelang.compile(float64_init)(a)
    assert a[0] == 1e300


@tilelang.jit(out_idx=[1])
def tilelang_ternary(M, N, block_M, block_N, dtype=T.float16):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                B[by * block_M + i, bx * block_N + j] = A[by * block_M + i, bx * block_N + j] if (by * block_M + i) < (M // 2) else 0
    return main


def test_ternary(target):
    a = randn(64, 32).astype(np.float16)
    want = a.copy()
    want[32:] = 0
    close(tilelang_ternary(64, 32, 32, 32)(a), want)


@tilelang.jit
def parallel_select():
    @T.prim_func
    def main(A: T.Tensor[(1024,), T.float32], B: T.Tensor[(1024,), T.float32]):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(1024):
                B[i] = T.Select(i < 512, A[i], 0.0)
    return main


def test_select_in_a_parallel_loop(target):
    a = randn(1024)
    b = np.empty_like(a)
    parallel_select()(a, b)
    want = np.zeros_like(a)
    want[:512] = a[:512]
    close(b, want)


@tilelang.jit
def nested_selects():
    @T.prim_func
    def main(A: T.Tensor[(128, 8), T.float32], B: T.Tensor[(128, 8), T.float32]):
        with T.Kernel(1, threads=128):
            for tx in T.serial(128):
                tmp = T.alloc_var(T.bfloat16)
                tmp = A[tx, 3]
                B[tx, 0] = T.Select(True, A[tx, 0], 0.0)
                B[tx, 1] = T.Select(False, 1.0, A[tx, 1])
                B[tx, 2] = T.Select(T.cast(A[tx, 3], T.bfloat16) == tmp, A[tx, 2], T.cast(tmp, T.float32))
                B[tx, 3] = T.Select(B[tx, 0] != 0.0, T.if_then_else(B[tx, 1] != 0.0, A[tx, 3], 0.0), 0.0)
                for i in T.serial(4):
                    B[tx, i + 4] = T.Select(
                        A[tx, 0] == 0, T.if_then_else(T.Select(True, False, True), 1.0, 2.0), T.Select(True, A[tx, i + 4], 3.0)
                    )
    return main


def test_nested_selects(target):
    a = np.maximum(randn(128, 8), 1e-4)
    b = np.empty_like(a)
    nested_selects()(a, b)
    close(b, a, 0, 0)


@tilelang.jit(pass_configs={tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True})
def chain_equal(N, block_size, dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_size), threads=block_size) as bx:
            for lane in T.Parallel(block_size):
                idx = bx * block_size + lane
                A[idx] = B[idx] = C[idx] = 1
    return main


def test_chained_assignment(target):
    A, B, C = (np.zeros(128, np.float32) for _ in range(3))
    chain_equal(128, 64)(A, B, C)
    for x in (A, B, C):
        close(x, np.ones(128), 0, 0)


@T.prim_func
def chain_reads_its_target(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
    with T.Kernel(1):
        for i in T.serial(8):
            A[i] = B[i] = A[i] + 1.0


def test_chained_assignment_computes_the_value_once(target):
    a, b = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    tilelang.compile(chain_reads_its_target)(a, b)
    close(a, np.arange(1, 9), 0, 0)
    close(b, np.arange(1, 9), 0, 0)
