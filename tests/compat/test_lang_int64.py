"""Ports of TileLang's int64 tests (testing/python/language/test_tilelang_language_int64.py):
a fill over a tensor whose size is a symbolic `T.symbolic("n", "int64")` or a constant,
with `T.Tensor[n, dtype]`, checked on both targets. TileLang sizes them past 2^31
elements (8 GiB) to stress int64 indexing; these run a few thousand elements, and a
tensor past 2^31 elements is a launch error here (32-bit index arithmetic)."""
import ml_dtypes
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.runtime.errors import LaunchValueError


@tilelang.jit
def fill_symbolic(value: float, dtype=T.bfloat16):
    n = T.symbolic("n", "int64")
    block_n = 512

    @T.prim_func
    def main(x: T.Tensor[n, dtype]):
        # Initialize Kernel Context
        with T.Kernel(T.ceildiv(n, block_n), threads=128) as bx:
            # Doesn't yet work with int64-shaped global tensor
            # T.fill(x[bx * block_n : (bx + 1) * block_n], value)
            for i in T.Parallel(block_n):
                x[bx * block_n + i] = value

    return main


@tilelang.jit
def fill_static(n: int, value: float, dtype=T.bfloat16):
    block_n = 512

    @T.prim_func
    def main(x: T.Tensor[n, dtype]):
        # Initialize Kernel Context
        with T.Kernel(T.ceildiv(n, block_n), threads=128) as bx:
            # Doesn't yet work with int64-shaped global tensor
            # T.fill(x[bx * block_n : (bx + 1) * block_n], value)
            for i in T.Parallel(block_n):
                x[bx * block_n + i] = value

    return main


@pytest.mark.parametrize("n", [4096, 3000])
def test_fill_symbolic(target, n):
    x = np.zeros(n, ml_dtypes.bfloat16)
    fill_symbolic(1.0)(x)
    assert x.astype(np.float32).min() == 1.0 and x.astype(np.float32).max() == 1.0


@pytest.mark.parametrize("n", [4096, 3000])
def test_fill_static(target, n):
    x = np.zeros(n, ml_dtypes.bfloat16)
    fill_static(n, 1.0)(x)
    assert x.astype(np.float32).min() == 1.0 and x.astype(np.float32).max() == 1.0


def test_fill_past_int32_is_a_launch_error():
    """Past 2^31 elements (TileLang's point here): this compiler indexes with 32-bit
    arithmetic, and the launch says so, naming the argument (a zero-stride view stands
    for the 4 GiB tensor)."""
    n = 2 ** 31 + 1024
    x = np.lib.stride_tricks.as_strided(np.zeros(1, ml_dtypes.bfloat16), (n,), (0,))
    with pytest.raises(LaunchValueError, match="argument 'x': dimension 0 is 2147484672"):
        fill_symbolic(1.0)(x)
