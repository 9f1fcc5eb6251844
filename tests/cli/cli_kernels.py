"""Small valid kernels the CLI tests compile, run and mutate (each with its numpy check)."""
from __future__ import annotations

import numpy as np

VECTOR_ADD = '''\
import tilelang.language as T

N = T.dynamic("N")
BLOCK = 64
dtype = "float32"


@T.prim_func
def vadd(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
    with T.Kernel(T.ceildiv(N, BLOCK), threads=64) as bx:
        A_f = T.alloc_fragment((BLOCK,), dtype)
        B_f = T.alloc_fragment((BLOCK,), dtype)
        T.copy(A[bx * BLOCK], A_f)
        T.copy(B[bx * BLOCK], B_f)
        for i in T.Parallel(BLOCK):
            A_f[i] = A_f[i] + B_f[i]
        T.copy(A_f, C[bx * BLOCK])
'''

SCALE_ROWS = '''\
import tilelang.language as T

M = T.dynamic("M")
N = 48
BLOCK_M = 8


@T.prim_func
def scale_rows(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32"),
               alpha: T.float32):
    with T.Kernel(T.ceildiv(M, BLOCK_M), threads=32) as bx:
        X_s = T.alloc_shared((BLOCK_M, N), "float32")
        T.copy(X[bx * BLOCK_M, 0], X_s)
        for i, j in T.Parallel(BLOCK_M, N):
            if X_s[i, j] > 0.0:
                X_s[i, j] = X_s[i, j] * alpha
            else:
                X_s[i, j] = T.exp(X_s[i, j])
        T.copy(X_s, Y[bx * BLOCK_M, 0])
'''

SMALL_GEMM = '''\
import tilelang.language as T

M = T.dynamic("M")
N = T.dynamic("N")
K = T.dynamic("K")
BM = 16
BN = 16
BK = 8


@T.prim_func
def mm(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"),
       C: T.Tensor((M, N), "float32")):
    with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=128) as (bx, by):
        A_s = T.alloc_shared((BM, BK), "float32")
        B_s = T.alloc_shared((BK, BN), "float32")
        C_f = T.alloc_fragment((BM, BN), "float32")
        T.clear(C_f)
        for k in T.Pipelined(T.ceildiv(K, BK), num_stages=2):
            T.copy(A[by * BM, k * BK], A_s)
            T.copy(B[k * BK, bx * BN], B_s)
            T.gemm(A_s, B_s, C_f)
        T.copy(C_f, C[by * BM, bx * BN])
'''

TWO_KERNELS = VECTOR_ADD + '''

@T.prim_func
def vsub(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
    with T.Kernel(T.ceildiv(N, BLOCK), threads=64) as bx:
        A_f = T.alloc_fragment((BLOCK,), dtype)
        B_f = T.alloc_fragment((BLOCK,), dtype)
        T.copy(A[bx * BLOCK], A_f)
        T.copy(B[bx * BLOCK], B_f)
        for i in T.Parallel(BLOCK):
            A_f[i] = A_f[i] - B_f[i]
        T.copy(A_f, C[bx * BLOCK])
'''

SOURCES = {"vadd": VECTOR_ADD, "scale_rows": SCALE_ROWS, "mm": SMALL_GEMM}


def check_vadd(kernel, n=200, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    c = np.zeros(n, np.float32)
    kernel(a, b, c)
    np.testing.assert_array_equal(c, a + b)


def check_mm(kernel, m=37, n=21, k=19, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
