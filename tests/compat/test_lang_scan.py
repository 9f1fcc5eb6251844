"""Ports of TileLang's scan tests (testing/python/language/test_tilelang_language_scan.py):
T.cumsum and T.cummax (in place or into `dst=`) of shared and fragment tiles, along
either dim, forward and reversed, checked blockwise against numpy."""
import numpy as np
import pytest

import tilelang as tl
import tilelang.language as T

from .helpers import close, randn


def cumsum_smem_test(M, N, block_M, block_N, dim=0, reverse=False, dtype=T.float32):
    @T.prim_func
    def cumsum(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), dtype)
            T.copy(A[by * block_M, bx * block_N], A_shared)
            T.cumsum(src=A_shared, dim=dim, reverse=reverse)
            T.copy(A_shared, B[by * block_M, bx * block_N])
    return cumsum


def cumsum_fragment_test(M, N, block_M, block_N, dim=0, reverse=False, dtype=T.float32):
    @T.prim_func
    def cumsum(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), dtype)
            A_fragment = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(A[by * block_M, bx * block_N], A_shared)
            T.copy(A_shared, A_fragment)
            T.cumsum(src=A_fragment, dim=dim, reverse=reverse)
            T.copy(A_fragment, B[by * block_M, bx * block_N])
    return cumsum


def cummax_smem_test(M, N, block_M, block_N, dim=0, reverse=False, dtype=T.float32):
    @T.prim_func
    def cummax(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), dtype)
            T.copy(A[by * block_M, bx * block_N], A_shared)
            T.cummax(src=A_shared, dim=dim, reverse=reverse)
            T.copy(A_shared, B[by * block_M, bx * block_N])
    return cummax


def cummax_smem_out_test(M, N, block_M, block_N, dim=0, reverse=False, dtype=T.float32):
    @T.prim_func
    def cummax(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), dtype)
            B_shared = T.alloc_shared((block_M, block_N), dtype)
            T.copy(A[by * block_M, bx * block_N], A_shared)
            T.cummax(src=A_shared, dst=B_shared, dim=dim, reverse=reverse)
            T.copy(B_shared, B[by * block_M, bx * block_N])
    return cummax


def ref_scan(a, bm, bn, dim, reverse, kind):
    out = np.empty_like(a)
    f = np.cumsum if kind == "sum" else (lambda x, axis: np.maximum.accumulate(x, axis=axis))
    for i in range(0, a.shape[0], bm):
        for j in range(0, a.shape[1], bn):
            c = a[i:i + bm, j:j + bn]
            if reverse:
                c = np.flip(c, dim)
            c = f(c, axis=dim)
            if reverse:
                c = np.flip(c, dim)
            out[i:i + bm, j:j + bn] = c
    return out


CASES = [(64, 64, 32, 32, 1, False), (96, 64, 32, 16, 0, True)]


@pytest.mark.parametrize("M,N,bm,bn,dim,rev", CASES)
@pytest.mark.parametrize("prog,kind", [(cumsum_smem_test, "sum"), (cumsum_fragment_test, "sum"),
                                       (cummax_smem_test, "max"),
                                       (cummax_smem_out_test, "max")])
def test_scan(target, M, N, bm, bn, dim, rev, prog, kind):
    k = tl.compile(prog(M, N, bm, bn, dim, rev), out_idx=-1)
    a = randn(M, N)
    close(k(a), ref_scan(a, bm, bn, dim, rev, kind), 1e-4, 1e-4)


@T.prim_func
def cummax_ints(A: T.Tensor((4, 16), "int32"), B: T.Tensor((4, 16), "int32")):
    with T.Kernel(1, threads=64):
        s = T.alloc_shared((4, 16), "int32")
        T.copy(A, s)
        T.cummax(s, dim=1, reverse=True, annotations={"note": "a hint"})
        T.copy(s, B)


def test_cummax_of_negative_integers(target):
    a = -np.arange(64, dtype=np.int32).reshape(4, 16) - 5
    b = np.zeros_like(a)
    tl.compile(cummax_ints)(a, b)
    np.testing.assert_array_equal(b, np.flip(np.maximum.accumulate(np.flip(a, 1), 1), 1))


def cummax_fragment_test(M, N, block_M, block_N, dim=0, reverse=False, dtype=T.float32):
    @T.prim_func
    def cummax(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), dtype)
            A_fragment = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(A[by * block_M, bx * block_N], A_shared)
            T.copy(A_shared, A_fragment)
            T.cummax(src=A_fragment, dim=dim, reverse=reverse)
            T.copy(A_fragment, B[by * block_M, bx * block_N])
    return cummax


def test_cummax_fragment(target):
    k = tl.compile(cummax_fragment_test(64, 64, 32, 32, 1, True), out_idx=-1)
    a = randn(64, 64)
    close(k(a), ref_scan(a, 32, 32, 1, True, "max"), 0, 0)


def scan_smem_test_1d(N, block_N, reverse=False, dtype=T.float32, threads=None, kind="sum"):
    if threads is None:
        threads = block_N

    @T.prim_func
    def scan(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=threads) as bx:
            A_shared = T.alloc_shared((block_N,), dtype)
            T.copy(A[bx * block_N], A_shared)
            if kind == "sum":
                T.cumsum(src=A_shared, dim=0, reverse=reverse)
            else:
                T.cummax(src=A_shared, dim=0, reverse=reverse)
            T.copy(A_shared, B[bx * block_N])
    return scan


def scan_fragment_test_1d(N, block_N, reverse=False, dtype=T.float32, kind="sum"):
    @T.prim_func
    def scan(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=block_N) as bx:
            A_shared = T.alloc_shared((block_N,), dtype)
            A_fragment = T.alloc_fragment((block_N,), dtype)
            T.copy(A[bx * block_N], A_shared)
            T.copy(A_shared, A_fragment)
            if kind == "sum":
                T.cumsum(src=A_fragment, dim=0, reverse=reverse)
            else:
                T.cummax(src=A_fragment, dim=0, reverse=reverse)
            T.copy(A_fragment, B[bx * block_N])
    return scan


@pytest.mark.parametrize("kind", ["sum", "max"])
@pytest.mark.parametrize("scope", ["smem", "fragment"])
def test_scan_1d(target, kind, scope):
    N, block_N = 128, 32
    if scope == "smem":     # TileLang's 80 / 40 case: a ragged last block, negative data
        N, block_N = 80, 40
        program = scan_smem_test_1d(N, block_N, True, threads=64, kind=kind)
    else:
        program = scan_fragment_test_1d(N, block_N, True, kind=kind)
    k = tl.compile(program, out_idx=-1)
    a = -np.abs(randn(N))
    close(k(a), ref_scan(a[None, :], 1, block_N, 1, True, kind)[0], 1e-4, 1e-4)
