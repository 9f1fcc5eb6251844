"""What the CPU takes, tcsim runs too (lowered with whole tiles, slowly if need be):
ifs inside T.Parallel, element stores and atomics to global tensors, one on-chip
element read by a whole nest (`m[0]`), global-to-global T.copy, T.Parallel(1, N),
packed indices (`j // 2`), out_idx."""
import os

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


@tilelang.jit(out_idx=[-1])
def gathers(N):
    @T.prim_func
    def kernel(X: T.Tensor((N, N), "float32"), I: T.Tensor((N,), "int32"),
               Y: T.Tensor((3, N), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(N):
                Y[0, i] = X[i, i]                       # one loop variable, two dims
                Y[1, i] = X[0, N - 1 - i]               # a falling index
                Y[2, i] = X[i, I[i]]                    # an index loaded from a tensor
    return kernel


def test_global_loads_at_computed_indices(target):
    x = randn(6, 6)
    idx = np.array([0, 5, 6, -1, 3, 2], np.int32)     # 6, -1: outside X's row, read as 0
    want = [np.diag(x), x[0, ::-1], [x[i, k] if 0 <= k < 6 else 0 for i, k in enumerate(idx)]]
    close(gathers(6)(x, idx), want)


def _conv_ref(img, w, K, S, D, P):
    n, h, wd, c = img.shape
    oh, ow = (h + 2 * P - D * (K - 1) - 1) // S + 1, (wd + 2 * P - D * (K - 1) - 1) // S + 1
    pad = np.pad(img.astype(np.float64), ((0, 0), (P, P), (P, P), (0, 0)))
    out = np.zeros((n, oh, ow, w.shape[-1]))
    for kh in range(K):
        for kw in range(K):
            tap = pad[:, kh * D:kh * D + S * (oh - 1) + 1:S, kw * D:kw * D + S * (ow - 1) + 1:S]
            out += tap @ w.reshape(K, K, c, -1)[kh, kw].astype(np.float64)
    return out.reshape(n * oh * ow, -1)


@tilelang.jit(out_idx=[-1])
def conv2d(N, H, W, C, F, K, S, D, P, block_M=16, block_N=16, block_K=16, old_name=False):
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1

    @T.prim_func
    def kernel(img: T.Tensor((N, H, W, C), "float16"), wt: T.Tensor((K * K * C, F), "float16"),
               out: T.Tensor((N * OH * OW, F), "float32")):
        with T.Kernel(T.ceildiv(F, block_N), T.ceildiv(N * OH * OW, block_M),
                      threads=128) as (bx, by):
            col = T.alloc_shared((block_M, block_K), "float16")
            w = T.alloc_shared((block_K, block_N), "float16")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K * K * C, block_K), num_stages=2):
                if old_name:
                    T.c2d_im2col(img, col, by, ko, K, S, D, P)
                else:
                    T.im2col(img, col, by, ko, K, S, D, P)
                T.copy(wt[ko * block_K, bx * block_N], w)
                T.gemm(col, w, acc)
            T.copy(acc, out[by * block_M, bx * block_N])
    return kernel


@settings(max_examples=4, deadline=None)
@given(hw=st.tuples(st.integers(3, 7), st.integers(3, 7)), c=st.sampled_from([4, 8]),
       k=st.sampled_from([1, 3]), s=st.sampled_from([1, 2]), d=st.sampled_from([1, 2]),
       p=st.sampled_from([0, 1]), old_name=st.booleans())
def test_im2col_convolution(hw, c, k, s, d, p, old_name):
    """T.im2col's gathered image reads (padding, stride, dilation, a ragged last K tile)
    give the convolution on both targets."""
    (h, w), n, f = hw, 2, 16
    if h + 2 * p < d * (k - 1) + 1 or w + 2 * p < d * (k - 1) + 1:
        return                                       # no output pixel
    img, wt = randn(n, h, w, c, dtype=np.float16), randn(k * k * c, f, dtype=np.float16)
    want = _conv_ref(img, wt, k, s, d, p)
    for target in ("cpu", "tcsim:tiny"):
        os.environ["TILELANG_TARGET"] = target
        try:
            got = conv2d(n, h, w, c, f, k, s, d, p, old_name=old_name)(img, wt)
        finally:
            os.environ.pop("TILELANG_TARGET")
        close(got, want, 1e-2, 1e-2)


@tilelang.jit
def histogram(bins, block=16):
    @T.prim_func
    def kernel(X: T.Tensor((N,), "int32"), hist: T.Tensor((bins,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=64) as bx:
            for i in T.Parallel(block):
                b = X[bx * block + i] % bins
                if bx * block + i < N:
                    T.atomic_add(hist[b], 1.0)          # an index loaded per element
    return kernel


def test_scattered_atomics(target):
    x = np.random.default_rng(3).integers(0, 50, 37).astype(np.int32)
    hist = np.zeros(5, np.float32)
    histogram(5)(x, hist)
    close(hist, np.bincount(x % 5, minlength=5))


@tilelang.jit
def total(block=8):
    @T.prim_func
    def kernel(X: T.Tensor((N,), "float32"), S: T.Tensor((1,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    T.atomic_add(S[0], X[bx * block + i])   # every element into one
    return kernel


def test_atomics_into_one_element(target):
    x, s = randn(21), np.zeros(1, np.float32)
    total()(x, s)
    close(s, [x.sum()], 1e-5, 1e-5)


@tilelang.jit
def scatters(N):
    @T.prim_func
    def kernel(X: T.Tensor((N,), "float32"), I: T.Tensor((N,), "int32"),
               R: T.Tensor((N,), "float32"), P: T.Tensor((N,), "float32"),
               M: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(N):
                R[N - 1 - i] = X[i]                         # a falling store index
                if X[i] > 0:
                    P[I[i]] = X[i]                          # a guarded permutation
                T.atomic_max(M[i % 4], X[i])                # atomic_max at i % 4
    return kernel


def test_scattered_stores_and_atomic_max(target):
    x = randn(12)
    perm = np.random.default_rng(5).permutation(12).astype(np.int32)
    r, p = np.zeros(12, np.float32), np.full(12, -7.0, np.float32)
    m = np.full(4, -np.inf, np.float32)
    scatters(12)(x, perm, r, p, m)
    want_p = np.full(12, -7.0)
    want_p[perm[x > 0]] = x[x > 0]
    close(r, x[::-1])
    close(p, want_p)
    close(m, x.reshape(3, 4).max(0))


@tilelang.jit(out_idx=[-1])
def gemv(M, N, block_M=8, block_N=16):
    @T.prim_func
    def kernel(A: T.Tensor((M, N), "float16"), x: T.Tensor((N,), "float16"),
               y: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=64) as bm:
            acc = T.alloc_reducer((block_M,), "float32", op="sum", replication="all")
            T.clear(acc)
            for kn in T.Pipelined(T.ceildiv(N, block_N), num_stages=2):
                a = T.alloc_fragment((block_M, block_N), "float16")
                xv = T.alloc_fragment((block_N,), "float16")
                T.copy(A[bm * block_M, kn * block_N], a)
                T.copy(x[kn * block_N], xv)
                for i, j in T.Parallel(block_M, block_N):
                    acc[i] += a[i, j] * xv[j]               # every j into acc[i]
            T.finalize_reducer(acc)
            T.copy(acc, y[bm * block_M])
    return kernel


def test_alloc_reducer_gemv(target):
    a, x = randn(24, 40, dtype=np.float16), randn(40, dtype=np.float16)
    # the products are float16 (TVM: float16 * float16), summed in float32
    close(gemv(24, 40)(a, x), a.astype(np.float64) @ x.astype(np.float64), 1e-2, 1e-2)


@tilelang.jit(out_idx=[-2, -1])
def column_stats(M, N):
    @T.prim_func
    def kernel(X: T.Tensor((M, N), "float32"), I: T.Tensor((M, N), "int32"),
               S: T.Tensor((N,), "float32"), B: T.Tensor((N,), "int32")):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((M, N), "float32")
            k = T.alloc_fragment((M, N), "int32")
            s = T.alloc_reducer((N,), "float32", op="sum")
            b = T.alloc_reducer((N,), "int32", op="max")
            T.copy(X, x)
            T.copy(I, k)
            T.clear(s)
            T.fill(b, -1000)
            for i, j in T.Parallel(M, N):
                if x[i, j] > 0:
                    s[j] += x[i, j]                         # a guarded sum over rows
                b[j] = T.max(b[j], k[i, j])                 # an integer max over rows
            T.finalize_reducer(s)
            T.finalize_reducer(b)
            T.copy(s, S)
            T.copy(b, B)
    return kernel


def test_accumulations_inside_parallel(target):
    x = randn(6, 5)
    k = np.random.default_rng(9).integers(-50, 50, (6, 5)).astype(np.int32)
    s, b = column_stats(6, 5)(x, k)
    close(s, np.where(x > 0, x, 0).sum(0))
    np.testing.assert_array_equal(b, k.max(0))


@tilelang.jit
def guarded_int_max(N):
    @T.prim_func
    def kernel(K: T.Tensor((N,), "int32"), M: T.Tensor((N,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(N):
                if K[i] > 0:
                    T.atomic_max(M[i], K[i])                # an integer atomic under a guard
    return kernel


def test_guarded_integer_atomic_max(target):
    k = np.array([5, -3, 9, 0, 2, -8], np.int32)
    m = np.full(6, 4, np.int32)
    guarded_int_max(6)(k, m)
    np.testing.assert_array_equal(m, np.where(k > 0, np.maximum(k, 4), 4))
