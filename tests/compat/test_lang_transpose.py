"""Port of TileLang's T.transpose test (testing/python/language/
test_tilelang_language_transpose.py): a shared tile transposed into another, shapes
shrunk, square and not; buffers whose shapes do not transpose are an error."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.diagnostics import TileLangError

from .helpers import close, randn

PC = {tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True}


def tilelang_transpose(M, N, block_M, block_N, dtype=T.float16):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((N, M), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            tile = T.alloc_shared((block_M, block_N), dtype)
            tile_T = T.alloc_shared((block_N, block_M), dtype)
            T.copy(
                A[by * block_M : (by + 1) * block_M, bx * block_N : (bx + 1) * block_N],
                tile,
            )
            T.transpose(tile, tile_T)
            T.copy(
                tile_T,
                B[bx * block_N : (bx + 1) * block_N, by * block_M : (by + 1) * block_M],
            )
    return main


@pytest.mark.parametrize("M,N,block_M,block_N", [(32, 32, 32, 32), (64, 64, 32, 32),
                                                 (64, 32, 32, 16), (32, 64, 16, 32)])
def test_transpose_through_shared_tiles(target, M, N, block_M, block_N):
    kernel = tilelang.compile(tilelang_transpose(M, N, block_M, block_N), out_idx=[1],
                              pass_configs=PC)
    a = randn(M, N).astype(np.float16)
    close(kernel(a), a.T, 0, 0)


@T.prim_func
def not_transposed(A: T.Tensor((16, 8), "float32")):
    with T.Kernel(1):
        s = T.alloc_shared((16, 8), "float32")
        t = T.alloc_shared((16, 8), "float32")
        T.copy(A, s)
        T.transpose(s, t)


def test_shapes_that_do_not_transpose_are_an_error():
    with pytest.raises(TileLangError, match=r"\(16, 8\).*\(16, 8\)"):
        tilelang.compile(not_transposed).library()
