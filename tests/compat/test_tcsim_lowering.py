"""What the CPU takes, tcsim runs too (lowered with whole tiles, slowly if need be):
ifs inside T.Parallel, element stores and atomics to global tensors, one on-chip
element read by a whole nest (`m[0]`), global-to-global T.copy, T.Parallel(1, N),
packed indices (`j // 2`), out_idx."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang
import tilelang.language as T

from .helpers import close, randn

N = T.dynamic("N")


@tilelang.jit(out_idx=[-1])
def rows(block):
    @T.prim_func
    def kernel(X: T.Tensor((N, 8), "float32"), Y: T.Tensor((N, 8), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=64) as bx:
            x = T.alloc_fragment((block, 8), "float32")
            m = T.alloc_fragment((1,), "float32")
            T.copy(X[bx * block, 0], x)
            T.fill(m, 0.5)
            for i, j in T.Parallel(block, 8):
                if j % 2 == 0:                                  # an if inside T.Parallel
                    x[i, j] = x[i, j] * m[0]                     # one on-chip element
                if bx * block + i < N:
                    Y[bx * block + i, j] = x[i, j]               # element store to global
    return kernel


@settings(max_examples=6, deadline=None)
@given(n=st.integers(1, 40))
def test_if_inside_parallel_and_element_stores(n):
    for target in ("cpu", "tcsim:tiny"):
        import os
        os.environ["TILELANG_TARGET"] = target
        try:
            x = randn(n, 8)
            want = x.copy()
            want[:, 0::2] *= 0.5
            close(rows(16)(x), want)
        finally:
            os.environ.pop("TILELANG_TARGET")


@tilelang.jit
def histogram_and_splitk(block):
    @T.prim_func
    def kernel(X: T.Tensor((N,), "float32"), total: T.Tensor((4,), "float32"),
               count: T.Tensor((1,), "int32")):
        with T.Kernel(T.ceildiv(N, block), threads=64) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    T.atomic_add(total[i % 4], X[bx * block + i])   # element atomics
            T.atomic_add(count[0], 1)                                # a scalar atomic
    return kernel


def test_element_and_scalar_atomics(target):
    x = randn(40)
    total, count = np.zeros(4, np.float32), np.zeros(1, np.int32)
    histogram_and_splitk(8)(x, total, count)
    close(total, [x[i::4].sum() for i in range(4)], 1e-5, 1e-5)
    assert count[0] == 5


@tilelang.jit(out_idx=[-1])
def packed(M):
    @T.prim_func
    def kernel(W: T.Tensor((M, 16), "float32"), S: T.Tensor((M, 8), "float32"),
               Y: T.Tensor((M, 16), "float32")):
        with T.Kernel(M, threads=32) as bx:
            w = T.alloc_fragment((1, 16), "float32")
            s = T.alloc_fragment((1, 8), "float32")
            T.copy(W[bx, 0], w)
            T.copy(S[bx, 0], s)
            for i, j in T.Parallel(1, 16):                   # a loop of extent 1
                w[i, j] = w[i, j] * s[i, j // 2]             # a packed index
            T.copy(w, Y[bx, 0])
    return kernel


def test_packed_indices_and_unit_parallel(target):
    w, s = randn(3, 16), randn(3, 8)
    close(packed(3)(w, s), w * np.repeat(s, 2, axis=1))


@tilelang.jit(out_idx=[-1])
def convert_copy(M):
    @T.prim_func
    def kernel(X: T.Tensor((M, 32), "float32"), Y: T.Tensor((M, 32), "float16")):
        with T.Kernel(T.ceildiv(M, 4), threads=32) as bx:
            T.copy(X[bx * 4:(bx + 1) * 4, :], Y[bx * 4:(bx + 1) * 4, :])   # global to global
    return kernel


def test_global_to_global_copy(target):
    x = randn(8, 32)
    close(convert_copy(8)(x), x.astype(np.float16), 1e-3, 1e-3)


@tilelang.jit
def masked_rows(R):
    @T.prim_func
    def kernel(M: T.Tensor((R,), "bool"), X: T.Tensor((R, 8), "float32"),
               Y: T.Tensor((R, 8), "float32")):
        with T.Kernel(1, threads=32) as bx:
            m = T.alloc_fragment((R,), "bool")
            x = T.alloc_fragment((8,), "float32")
            y = T.alloc_fragment((8,), "float32")
            T.copy(M, m)
            for k in T.serial(R):
                T.copy(X[k, 0], x)
                T.copy(x, y)
                if m[k] != 0:                                   # an on-chip value decides
                    for j in T.Parallel(8):
                        y[j] = x[j] * 2.0 + x[0]
                T.copy(y, Y[k, 0])
    return kernel


def test_on_chip_value_as_a_condition(target):
    m = np.array([True, False, True, False, True])
    x, y = randn(5, 8), np.zeros((5, 8), np.float32)
    masked_rows(5)(m, x, y)
    want = x.copy()
    want[m] = x[m] * 2 + x[m][:, :1]
    close(y, want)
