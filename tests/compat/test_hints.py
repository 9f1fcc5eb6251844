"""Layout and scheduling annotations are accepted as hints: layouts, GEMM policies,
copy flags, pipeline schedules and allocation scopes change nothing here (the result is
checked); T.use_swizzle sets tcsim's raster; num_stages=0 is no pipelining."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.diagnostics import TileLangError
from tilelang.layout import make_swizzled_layout

from .helpers import close, randn


def make_dq_layout(buf):
    return T.Layout(buf.shape, lambda i, j: [i // 8, j, i % 8])


@tilelang.jit(out_idx=[-1])
def gemm_with_hints(M, N, K, panel=4, stages=2):
    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
               C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 32), T.ceildiv(M, 32), threads=128) as (bx, by):
            A_s = T.alloc_shared((32, 32), "float16", scope="shared.dyn")
            B_s = T.alloc_shared((32, 32), "float16")
            C_f = T.alloc_fragment((32, 32), "float32")
            T.annotate_layout({A_s: make_swizzled_layout(A_s), C_f: make_dq_layout(C_f)})
            T.use_swizzle(panel_size=panel, enable=True)
            T.no_set_max_nreg()
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=stages, order=[0, 1, 2],
                                 stage=[0, 0, 1], group=[[0], [1], [2]]):
                T.copy(A[by * 32, k * 32], A_s, coalesced_width=8, disable_tma=True)
                T.copy(B[k * 32, bx * 32], B_s)
                T.gemm(A_s, B_s, C_f, policy=T.GemmWarpPolicy.FullRow, k_pack=2, wg_wait=0)
            T.copy(C_f, C[by * 32, bx * 32])
    return kernel


@pytest.mark.parametrize("stages", [0, 2])
def test_hints_change_no_result(target, stages):
    a, b = randn(70, 64, dtype=np.float16), randn(64, 50, dtype=np.float16)
    k = gemm_with_hints(70, 50, 64, stages=stages)
    close(k(a, b), a.astype(np.float64) @ b, 1e-2, 2e-2)


def test_use_swizzle_is_tcsims_raster(monkeypatch):
    monkeypatch.setenv("TILELANG_TARGET", "tcsim:tiny")
    k = gemm_with_hints(70, 50, 64, panel=3)
    assert "T.use_swizzle(3)" in k.ir()
    assert k.runtime_kernel.artifact.program.raster == 3


def test_negative_num_stages_is_an_error():
    with pytest.raises(TileLangError) as info:
        gemm_with_hints(32, 32, 32, stages=-1)
    assert "num_stages must be at least 0" in info.value.diagnostics[0].message
