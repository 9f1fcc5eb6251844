"""T.floordiv / T.floormod, TileLang's spellings of `//` and `%` (the paged MLA example
uses them to split a request's blocks): floor semantics on both signs."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang

KERNEL = '''import tilelang.language as T

N = T.dynamic("N")


@T.prim_func
def floor_ops(a: T.Tensor((N,), "int32"), b: T.Tensor((N,), "int32"),
              q: T.Tensor((N,), "int32"), r: T.Tensor((N,), "int32")):
    with T.Kernel(1, threads=32) as bx:
        for i in T.serial(N):
            x = a[i]
            y = b[i]
            q[i] = T.floordiv(x, y)
            r[i] = T.floormod(x, y)
'''


@pytest.mark.parametrize("target", ["cpu"])
def test_floordiv_floormod(target):
    k = tilelang.compile(KERNEL, target=target)
    a = np.array([7, -7, 7, -7, 0, 13], np.int32)
    b = np.array([2, 2, -2, -2, 5, 4], np.int32)
    q = np.zeros_like(a)
    r = np.zeros_like(a)
    k(a, b, q, r)
    np.testing.assert_array_equal(q, a // b)
    np.testing.assert_array_equal(r, a % b)
