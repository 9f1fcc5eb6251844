"""Port of TileLang's isfinite test (testing/python/language/test_tilelang_language_isfinite_codegen.py):
T.isfinite of an element assigned to a T.alloc_var and selected on, checked on values
(TileLang checks that its CUDA calls `isfinite`), with T.isnan and T.isinf beside it."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T


def isfinite_kernel(n):
    @T.prim_func
    def main(
        x: T.Tensor((n,), T.float32),
        y: T.Tensor((n,), T.int32),
    ):
        with T.Kernel(1, threads=1):
            pred = T.alloc_var(T.bool)
            pred = T.isfinite(x[0])
            y[0] = T.if_then_else(pred, 1, 0)

    return main


@pytest.mark.parametrize("value,want", [(1.5, 1), (np.inf, 0), (-np.inf, 0), (np.nan, 0),
                                        (3e38, 1)])
def test_isfinite(target, value, want):
    y = np.full(1, 7, np.int32)
    tilelang.compile(isfinite_kernel(1))(np.array([value], np.float32), y)
    assert y[0] == want


@T.prim_func
def classify(x: T.Tensor((8,), T.float16), y: T.Tensor((3, 8), T.int32)):
    with T.Kernel(1):
        for i in T.Parallel(8):
            y[0, i] = T.if_then_else(T.isfinite(x[i]), 1, 0)
            y[1, i] = T.if_then_else(T.isnan(x[i]), 1, 0)
            y[2, i] = T.if_then_else(T.isinf(x[i]), 1, 0)


def test_classify_tile(target):
    x = np.array([0, -1, np.inf, -np.inf, np.nan, 65504, 1e-7, 2], np.float16)
    y = np.zeros((3, 8), np.int32)
    tilelang.compile(classify)(x, y)
    np.testing.assert_array_equal(y, np.stack([np.isfinite(x), np.isnan(x), np.isinf(x)]))
