"""Port of TileLang's alias test (testing/python/language/test_tilelang_language_alias.py):
names bound to regions of on-chip buffers (`X_shared = A_shared[:block_M, :block_K]`)
used by T.copy, T.clear and T.gemm, and an offset bound with `T.let`. Shapes shrunk;
checked against numpy."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.diagnostics import TileLangError

from .helpers import close, randn


def matmul(M, N, K, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((N, K), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            X_shared = A_shared[:block_M, :block_K]
            X_local = C_local[:block_M, :block_K]
            T.clear(X_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=0):
                aliased_offset = T.int32()
                T.let(aliased_offset, ko * block_K)
                T.copy(A[by * block_M, aliased_offset], X_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared[:block_N, :block_K])
                T.gemm(X_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])
    return main


def test_matmul_through_region_aliases(target):
    kernel = tilelang.compile(matmul(64, 64, 64, 32, 32, 16), out_idx=[2])
    kernel.run_once()
    a = randn(64, 64).astype(np.float16)
    b = randn(64, 64).astype(np.float16)
    close(kernel(a, b), a.astype(np.float32) @ b.astype(np.float32).T, 1e-2, 1e-2)


@T.prim_func
def partial_clear(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32")):
    with T.Kernel(1, threads=32):
        s = T.alloc_shared((8, 8), "float32")
        T.copy(A, s)
        corner = s[2:6, 4:8]
        T.clear(corner)
        T.copy(s, B)


def test_a_tile_op_on_an_alias_touches_only_its_region(target):
    a, b = randn(8, 8), np.zeros((8, 8), np.float32)
    tilelang.compile(partial_clear)(a, b)
    want = a.copy()
    want[2:6, 4:8] = 0
    close(b, want, 0, 0)


@T.prim_func
def alias_as_value(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
    with T.Kernel(1, threads=32):
        s = T.alloc_shared((8,), "float32")
        T.copy(A, s)
        head = s[0:4]
        B[0] = head[1]


def test_an_alias_is_not_indexed():
    with pytest.raises(TileLangError, match="cannot index"):
        tilelang.compile(alias_as_value).library()


@T.prim_func
def let_of_a_buffer(A: T.Tensor((8,), "float32")):
    with T.Kernel(1, threads=32):
        T.let(A, 1)


@T.prim_func
def read_before_let(A: T.Tensor((8,), "int32")):
    with T.Kernel(1, threads=32):
        offset = T.int32()
        A[0] = offset


@pytest.mark.parametrize("program,message", [
    (let_of_a_buffer, re.escape("T.let binds a name declared with `x = T.int32()`")),
    (read_before_let, "offset"),
])
def test_let_misuse_is_an_error(program, message):
    with pytest.raises(TileLangError, match=message):
        tilelang.compile(program).library()
