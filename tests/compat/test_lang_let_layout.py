"""Port of TileLang's let-layout test (testing/python/language/test_tilelang_language_let_layout.py):
a block-sparse copy whose source row is a value loaded from a fragment and bound by a
let inside a pipelined loop (`a = block_mask_f[i]`; `T.copy(A[a, 0], A_shared)`),
with and without TileLang's warp-specialisation pass config, checked against numpy on
both targets. The kernel's lines are TileLang's; shapes are smaller."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T

from .helpers import RNG


def blocksparse_copy_kernel(M, N, N_S, block_M, block_N, dtype=T.float16):
    """BlockSparse copy kernel using fragment for block mask indices."""
    block_mask_shape = (M // block_M, N_S)

    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((M, N), dtype),
        BlockMask: T.Tensor(block_mask_shape, T.int32),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), dtype)
            B_shared = T.alloc_shared((block_M, block_N), dtype)
            block_mask_f = T.alloc_fragment((N_S,), T.int32)

            T.clear(B_shared)
            T.copy(BlockMask[by, :], block_mask_f)
            for i in T.Pipelined(N_S):
                a = block_mask_f[i]  # LetStmt: fragment buffer access
                if a >= 0:
                    T.copy(A[a, 0], A_shared)
                    T.copy(A_shared, B[by * block_M : (by + 1) * block_M, i * block_N : (i + 1) * block_N])

    return main


@pytest.mark.parametrize("pass_configs", [{}, {
    tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True}], ids=["tma", "cp_async"])
def test_blocksparse_copy(target, pass_configs):
    M = N = 128
    block_M = block_N = 32
    N_S = N // block_N
    kernel = tilelang.compile(blocksparse_copy_kernel(M, N, N_S, block_M, block_N),
                              out_idx=[1], target="cuda", pass_configs=pass_configs)
    a = RNG.standard_normal((M, N)).astype(np.float16)
    mask = RNG.integers(0, (M - block_M) // block_M + 1, (M // block_M, N_S)).astype(np.int32)
    mask *= block_M
    mask[0, 1] = -1                                   # a skipped block stays zero
    c = kernel(a, mask)
    ref = np.zeros_like(a)
    for by in range(M // block_M):
        for i in range(N_S):
            r = mask[by, i]
            if r >= 0:
                ref[by * block_M:(by + 1) * block_M, i * block_N:(i + 1) * block_N] = \
                    a[r:r + block_M, 0:block_N]
    np.testing.assert_array_equal(c, ref)
