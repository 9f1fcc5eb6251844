"""The kernel the target tests compile (a uniquely named module: every test directory
has its own conftest)."""

VADD = '''\
import tilelang.language as T

N = T.dynamic("N")


@T.prim_func
def vadd(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"),
         C: T.Tensor((N,), "float32")):
    with T.Kernel(T.ceildiv(N, 64), threads=64) as bx:
        A_f = T.alloc_fragment((64,), "float32")
        B_f = T.alloc_fragment((64,), "float32")
        T.copy(A[bx * 64], A_f)
        T.copy(B[bx * 64], B_f)
        for i in T.Parallel(64):
            A_f[i] = A_f[i] + B_f[i] * (2 - 1)
        T.copy(A_f, C[bx * 64])
'''
