"""The versioning pass, as before/after `.tl` text."""
from __future__ import annotations

from tilelang.passes.versioning import versioning

from . import passtext

HEADER = "import tilelang.language as T\n\nM = T.dynamic(\"M\")\n\n"


def check(before: str, after: str):
    passtext.check(versioning, before, after, HEADER)


def test_guarded_copy_gets_an_unguarded_version_for_in_bounds_tiles():
    before = """
    @T.prim_func
    def f(A: T.Tensor((M,), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, 8), threads=1) as bx:
            S = T.alloc_shared((8,), "float32")
            for i in T.Parallel(8):
                S[i] = T.if_then_else(bx * 8 + i < M, A[bx * 8 + i], 0.0)
            for j in T.Parallel(8):
                if bx * 8 + j < M:
                    B[bx * 8 + j] = S[j]
    """
    after = """
    @T.prim_func
    def f(A: T.Tensor((M,), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, 8), threads=1) as bx:
            S = T.alloc_shared((8,), "float32")
            if bx * 8 + 0 < M and bx * 8 + 7 < M:
                for i_0 in T.Parallel(8):
                    S[i_0] = A[bx * 8 + i_0]
            else:
                for i in T.Parallel(8):
                    S[i] = T.if_then_else(bx * 8 + i < M, A[bx * 8 + i], 0.0)
            if bx * 8 + 0 < M and bx * 8 + 7 < M:
                for j_0 in T.Parallel(8):
                    B[bx * 8 + j_0] = S[j_0]
            else:
                for j in T.Parallel(8):
                    if bx * 8 + j < M:
                        B[bx * 8 + j] = S[j]
    """
    check(before, after)


def test_guards_that_are_not_affine_or_read_memory_stay():
    src = """
    @T.prim_func
    def f(A: T.Tensor((M,), "float32"), L: T.Tensor((4,), "int32"),
          B: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.Parallel(8):
                if i * i < M:
                    B[i] = A[i]
            for j in T.Parallel(8):
                if j < L[0]:
                    B[j] = 0.0
            for k in T.serial(M):
                if k < M:
                    B[k] = 1.0
    """
    check(src, src)
