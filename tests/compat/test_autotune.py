"""The autotuning decorators of TileLang's examples, with tuning on: `from
tilelang.autotuner import *`, `@autotune(configs=..., warmup=, rep=)` over
`@tilelang.jit(out_idx=[-1])`, and `@tilelang.autotune` over a current-style kernel.
Each tunes on the default target ($TILELANG_TARGET: the simulator's time on tcsim) and
returns a kernel called as TileLang calls it."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.autotuner import *  # noqa: F401,F403 - the examples' import

from .helpers import close, randn

TARGET_CLASS = {"cpu": "CpuTarget", "tcsim:tiny": "TcsimTarget"}


@pytest.fixture(autouse=True)
def tuning_on(monkeypatch):
    monkeypatch.setenv("TILELANG_AUTOTUNE", "1")


def row_configs(M, N):
    return [{"block_M": b} for b in (8, 16) if b <= M]


@autotune(configs=row_configs, warmup=1, rep=2)                      # noqa: F405
@tilelang.jit(out_idx=[-1])
def double_rows(M, N, block_M=8):
    @T.prim_func
    def kernel(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=64) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            T.copy(X[bx * block_M, 0], x)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] * 2.0
            T.copy(x, Y[bx * block_M, 0])
    return kernel


def test_autotune_over_a_jit_factory(target):
    x = randn(32, 16)
    kernel = double_rows(32, 16)
    close(kernel(x), 2 * x)                          # outputs allocated and returned
    assert kernel.config in ({"block_M": 8}, {"block_M": 16})
    assert kernel.latency is not None and kernel.latency > 0
    assert type(kernel.options.target).__name__ == TARGET_CLASS[target]


@tilelang.autotune(configs=[{"block": 4}, {"block": 8}], warmup=1, rep=2)
@tilelang.jit
def tuned_add(X, Z, block):
    N = T.const("N")
    X: T.Tensor((N,), "float32")
    Z: T.Tensor((N,), "float32")
    Y = T.empty((N,), "float32")
    with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
        for i in T.Parallel(block):
            Y[bx * block + i] = X[bx * block + i] + Z[bx * block + i]
    return Y


def test_autotune_over_the_current_style_tunes_and_runs(target):
    x, z = randn(24), randn(24)
    close(tuned_add(x, z), x + z)                    # tuned, then run with the best
    result = tuned_add.result(x, z)
    assert result.config in ({"block": 4}, {"block": 8}) and result.latency > 0
    assert type(result.kernel.options.target).__name__ == TARGET_CLASS[target]


def test_each_target_tunes_for_itself(monkeypatch):
    # the tuning of one target (its timings, its kernel) is not the other's
    x = randn(16, 8)
    seen = {}
    for spec in ("cpu", "tcsim:tiny"):
        monkeypatch.setenv("TILELANG_TARGET", spec)
        kernel = double_rows(16, 8)
        close(kernel(x), 2 * x)
        seen[spec] = kernel
        assert type(kernel.options.target).__name__ == TARGET_CLASS[spec]
    assert seen["cpu"] is not seen["tcsim:tiny"]
