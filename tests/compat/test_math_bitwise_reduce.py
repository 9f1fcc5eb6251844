"""Port of TileLang's bitwise reduction test (testing/python/math/test_math_bitwise_reduce.py):
T.reduce_bitand / bitor / bitxor of an int32 fragment, with and without `clear`, checked
against numpy on both targets. The kernel's lines are TileLang's."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.diagnostics import TileLangError

from .helpers import slow_beyond


@tilelang.jit(
    out_idx=[-1],
    pass_configs={
        tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: False,
    },
)
def bitwise_reduce(
    M,
    N,
    block_M,
    block_N,
    name,
    func,
    clear=True,
):
    @T.prim_func
    def reduce_func(
        A: T.Tensor((M, N), T.int32),
        B: T.Tensor((M), T.int32),
        Output: T.Tensor((M), T.int32),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), T.int32)
            A_fragment = T.alloc_fragment((block_M, block_N), T.int32)
            B_shared = T.alloc_shared((block_M,), T.int32)
            B_fragment = T.alloc_fragment((block_M), T.int32)
            T.copy(A[by * block_M, bx * block_N], A_shared)
            T.copy(A_shared, A_fragment)
            T.copy(B[by * block_M], B_shared)
            T.copy(B_shared, B_fragment)
            func(A_fragment, B_fragment, clear=clear)
            T.copy(B_fragment, Output[by * block_M])

    return reduce_func


def _input(M, N):
    """TileLang's input: row and column bit patterns, some rows with a bit cleared or set."""
    rows = np.arange(M, dtype=np.int64)[:, None]
    cols = np.arange(N, dtype=np.int64)[None, :]
    a = ((rows & 0xF) << (rows % 4)) ^ (np.ones_like(cols) << (cols % 31)) ^ ((rows * N + cols) % 256)
    clear_rows = (rows % 4) == 0
    a = np.where(clear_rows, a & ~(np.ones_like(rows) << (rows // 4)), a)
    set_rows = ((rows % 4) != 0) & ((rows % 2) == 0)
    a = np.where(set_rows, a | (np.ones_like(rows) << (rows // 2)), a)
    return a.astype(np.int32)


OPS = [("reduce_bitand", T.reduce_bitand, np.bitwise_and, -1),
       ("reduce_bitor", T.reduce_bitor, np.bitwise_or, 0),
       ("reduce_bitxor", T.reduce_bitxor, np.bitwise_xor, 0)]


@pytest.mark.parametrize("name,func,ufunc,identity", OPS, ids=[o[0] for o in OPS])
@pytest.mark.parametrize("clear", [True, False])
@pytest.mark.parametrize("M,N", slow_beyond([(8, 24), (32, 32)], 1))     # 24: a width not a power of 2
def test_bitwise_reduce_ops(target, name, func, ufunc, identity, clear, M, N):
    a = _input(M, N)
    kernel = bitwise_reduce(M, N, M, N, name, func, clear)
    out = kernel(a, np.full(M, identity, np.int32))
    np.testing.assert_array_equal(out, ufunc.reduce(a, axis=1))


def test_bitwise_reduce_of_floats_is_a_diagnostic():
    @T.prim_func
    def main(A: T.Tensor((4, 8), T.float32), B: T.Tensor((4,), T.float32)):
        with T.Kernel(1):
            a = T.alloc_fragment((4, 8), T.float32)
            b = T.alloc_fragment((4,), T.float32)
            T.copy(A, a)
            T.reduce_bitor(a, b)
            T.copy(b, B)

    with pytest.raises(TileLangError) as info:
        tilelang.compile(main)
    assert "T.reduce_bitor reduces an integer tile" in info.value.diagnostics[0].message
