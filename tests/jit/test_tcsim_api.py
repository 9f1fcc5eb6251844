"""The Python entry points with `target="tcsim:CONFIG"`: kernels that run the simulator."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.diagnostics import TileLangError

ROOT = Path(__file__).resolve().parents[2]
N = T.dynamic("N")
BLOCK = 64


@tilelang.kernel(target="tcsim:tiny")
def vadd(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"),
         C: T.Tensor((N,), "float32")):
    with T.Kernel(T.ceildiv(N, BLOCK), threads=64) as bx:
        A_f = T.alloc_fragment((BLOCK,), "float32")
        B_f = T.alloc_fragment((BLOCK,), "float32")
        T.copy(A[bx * BLOCK], A_f)
        T.copy(B[bx * BLOCK], B_f)
        for i in T.Parallel(BLOCK):
            A_f[i] = A_f[i] + B_f[i]
        T.copy(A_f, C[bx * BLOCK])


def gemm_args(m=100, n=90, k=70, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    return a, b, np.zeros((m, n), np.float32)


def test_compile_path_runs_the_simulator():
    k = tilelang.compile(ROOT / "examples" / "gemm.tl", target="tcsim:tiny")
    assert k.last_report is None
    a, b, c = gemm_args()
    assert k(a, b, c) is None                          # results land in place
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    report = k.last_report
    assert report.config == "tiny" and report.cycles > 0
    assert 0 < report.mma_utilization <= 1 and report.flops > 0
    assert "MMA utilisation" in report.summary()


def test_timing_mode_takes_shapes():
    k = tilelang.compile(ROOT / "examples" / "gemm.tl", target="tcsim:h100_like", raster=8,
                         defines={"in_dtype": "bfloat16"})
    shapes = [((1024, 512), "bfloat16"), ((512, 1024), "bfloat16"), ((1024, 1024), "float32")]
    k(*shapes, mode="timing")
    assert k.last_report.config == "h100_like" and k.last_report.blocks == 64
    assert k.runtime_kernel.artifact.program.raster == 8


def test_decorated_function_on_tcsim():
    a = np.arange(200, dtype=np.float32)
    b = np.ones(200, np.float32)
    c = np.zeros(200, np.float32)
    vadd(a, b, c)
    np.testing.assert_array_equal(c, a + 1)
    assert vadd.last_report.blocks == 4


TWO_KERNELS = """\
import tilelang.language as T

N = T.dynamic("N")


@T.prim_func
def scale(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
    with T.Kernel(T.ceildiv(N, 32), threads=32) as bx:
        X_f = T.alloc_fragment((32,), "float32")
        T.copy(X[bx * 32], X_f)
        for i in T.Parallel(32):
            X_f[i] = X_f[i] * 3.0
        T.copy(X_f, Y[bx * 32])


@T.prim_func
def shift(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
    with T.Kernel(T.ceildiv(N, 32), threads=32) as bx:
        X_f = T.alloc_fragment((32,), "float32")
        T.copy(X[bx * 32], X_f)
        for i in T.Parallel(32):
            X_f[i] = X_f[i] + 1.0
        T.copy(X_f, Y[bx * 32])
"""


def test_library_of_several_kernels():
    lib = tilelang.compile(TWO_KERNELS, target="tcsim:tiny")
    assert sorted(kern.name for kern in lib) == ["scale", "shift"] and "shift" in lib
    x = np.arange(50, dtype=np.float32)
    y = np.zeros(50, np.float32)
    lib["scale"](x, y)
    np.testing.assert_array_equal(y, x * 3)
    lib.shift(x, y)
    np.testing.assert_array_equal(y, x + 1)
    assert lib.shift.last_report.blocks == 2 and lib["scale"].last_report.blocks == 2


def test_out_idx_allocates_and_returns_the_outputs_as_on_the_cpu():
    k = tilelang.compile(ROOT / "examples" / "gemm.tl", target="tcsim:tiny", out_idx=[-1])
    a = np.random.default_rng(0).standard_normal((40, 24)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((24, 56)).astype(np.float32)
    c = k(a, b)
    assert c.shape == (40, 56) and c.dtype == np.float32
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    assert k.last_report.blocks >= 1


def test_unknown_config_is_a_user_error():
    with pytest.raises(TileLangError) as info:
        tilelang.compile(ROOT / "examples" / "gemm.tl", target="tcsim:gpu")
    assert info.value.code == "TL0805"


def test_bad_launch_raises_the_runtimes_argument_error():
    k = tilelang.compile(ROOT / "examples" / "gemm.tl", target="tcsim:tiny")
    a, b, c = gemm_args()
    with pytest.raises(TypeError) as info:
        k(a, b)
    assert info.value.code == "TL0601" and info.value.argument == "C"
