"""Kernels written as decorated Python functions, for parse_function tests.
The line numbers of this file are checked by the tests: append, do not insert."""
import tilelang.language as T

M = T.dynamic("M")
N = T.dynamic("N")
BLOCK = 64
DTYPE = "float32"


@T.macro
def scale_row(X_s, factor):
    for j in T.Parallel(BLOCK):
        X_s[j] = X_s[j] * factor


@T.prim_func
def vec_scale(A: T.Tensor((M,), DTYPE), B: T.Tensor((M,), DTYPE), alpha: T.float32):
    with T.Kernel(T.ceildiv(M, BLOCK), threads=128) as bx:
        A_s = T.alloc_shared((BLOCK,), DTYPE)
        T.copy(A[bx * BLOCK], A_s)
        scale_row(A_s, alpha)
        T.copy(A_s, B[bx * BLOCK])


@T.prim_func
def bad_mixed(A: T.Tensor((M,), "float16"), B: T.Tensor((M,), "float32")):
    with T.Kernel(T.ceildiv(M, BLOCK)) as bx:
        for i in T.Parallel(BLOCK):
            B[bx * BLOCK + i] = A[bx * BLOCK + i] + B[bx * BLOCK + i]


def make_scaled_copy(block):
    @T.prim_func
    def scaled_copy(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block)) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * 2.0
    return scaled_copy
