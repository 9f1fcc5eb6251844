"""Ports of TileLang's language tests on scalar helpers (testing/python/language:
ceildiv / align_up, infinity, if_range, chained comparisons): kernel lines as TileLang
writes them, results checked against Python's own arithmetic or numpy."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T

from .helpers import close, randn


@tilelang.jit(out_idx=[-1])
def ceildiv_const(a: int, b: int):
    @T.prim_func
    def ceildiv_kernel(A: T.Tensor((1,), T.int32)):
        with T.Kernel(1, threads=1) as _:
            A[0] = T.ceildiv(T.int32(a), T.int32(b))
    return ceildiv_kernel


@tilelang.jit(out_idx=[-1])
def align_up_const(a: int, b: int):
    @T.prim_func
    def align_up_kernel(A: T.Tensor((1,), T.int32)):
        with T.Kernel(1, threads=1) as _:
            A[0] = T.align_up(T.int32(a), T.int32(b))
    return align_up_kernel


@tilelang.jit
def ceildiv_runtime(b: int):
    @T.prim_func
    def ceildiv_kernel(A: T.Tensor((1,), T.int32), a: T.int32):
        with T.Kernel(1, threads=1) as _:
            A[0] = T.ceildiv(T.int32(a), T.int32(b))
    return ceildiv_kernel


@tilelang.jit
def align_up_runtime(b: int):
    @T.prim_func
    def align_up_kernel(A: T.Tensor((1,), T.int32), a: T.int32):
        with T.Kernel(1, threads=1) as _:
            A[0] = T.align_up(T.int32(a), T.int32(b))
    return align_up_kernel


@pytest.mark.parametrize("a", [128, 1, -1, -2, 33])
def test_ceildiv_and_align_up(target, a):
    up = -(-a // 32)
    assert ceildiv_const(a, 32)()[0] == up
    assert align_up_const(a, 32)()[0] == up * 32
    out = np.zeros(1, np.int32)
    ceildiv_runtime(32)(out, a)
    assert out[0] == up
    align_up_runtime(32)(out, a)
    assert out[0] == up * 32


def test_align_up_on_python_numbers():
    assert T.align_up(100, 32) == 128 and T.align_up(128, 32) == 128


@tilelang.jit(out_idx=-1)
def get_inf_kernel(dtype: str):
    @T.prim_func
    def main(A: T.Tensor((32,), dtype)):
        with T.Kernel(1, threads=32):
            T.fill(A, T.infinity(dtype))
    return main


@pytest.mark.parametrize("dtype", [T.float16, T.bfloat16, T.float32, T.float64,
                                   T.float8_e5m2])
def test_infinity_fills_a_global_tensor(target, dtype):
    out = get_inf_kernel(dtype)()
    assert np.all(np.asarray(out, np.float64) == np.inf)


@tilelang.jit
def fill_part(N, lo, hi):
    @T.prim_func
    def main(A: T.Tensor((N, 8), "float32")):
        T.func_attr({"tir.noalias": True})           # a TVM function attribute: a hint
        with T.Kernel(1, threads=32):
            T.fill(A[lo:hi, 2:6], -1.5)
    return main


def test_fill_of_a_global_sub_region(target):
    a = randn(12, 8)
    want = a.copy()
    want[3:9, 2:6] = -1.5
    fill_part(12, 3, 9)(a)
    close(a, want)


@T.prim_func
def negative_index(A: T.Buffer((16,), T.float32), B: T.Buffer((16,), T.float32)):
    T.func_attr({"tir.noalias": True})
    with T.Kernel(1):
        B[0] = A[T.int32(-1)]
        B[1] = A[-2]
        B[-1] = A[3]


def test_constant_negative_index_counts_from_the_end(target):
    a, b = randn(16), np.zeros(16, np.float32)
    tilelang.compile(negative_index)(a, b)
    assert (b[0], b[1], b[15]) == (a[15], a[14], a[3])
