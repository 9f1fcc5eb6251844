"""T.reduce_min / reduce_max / reduce_sum (and abssum / absmax, |x| being x) of bool
tiles, on both targets, against numpy: min is `all` (np.min), max is `any` (np.max), and
a sum into a bool buffer is `any` too (`x.sum(dtype=bool)`: the sum saturates at True, as
TileLang's C++ `bool` does), never the parity an `add` of one-bit integers would give.
Rows with an even number of Trues in a row tell a saturating sum from an XOR."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tilelang
import tilelang.language as T

_FNS = {"min": T.reduce_min, "max": T.reduce_max, "sum": T.reduce_sum,
        "abssum": T.reduce_abssum, "absmax": T.reduce_absmax}


def _ref(a: np.ndarray, op: str, dim: int) -> np.ndarray:
    return {"min": lambda: a.min(dim), "max": lambda: a.max(dim),
            "sum": lambda: a.sum(dim, dtype=bool),
            "abssum": lambda: np.abs(a).sum(dim, dtype=bool),
            "absmax": lambda: np.abs(a).max(dim)}[op]()


@tilelang.jit(out_idx=-1)
def _reduce_kernel(M, N, op, dim):
    fn = _FNS[op]
    out = M if dim == 1 else N

    @T.prim_func
    def main(A: T.Tensor((M, N), T.bool), B: T.Tensor((out,), T.bool)):
        with T.Kernel(1, threads=32):
            src = T.alloc_fragment((M, N), T.bool)
            dst = T.alloc_fragment((out,), T.bool)
            T.copy(A, src)
            fn(src, dst, dim=dim)
            T.copy(dst, B)

    return main


def _rows(N: int) -> np.ndarray:
    """Two, then four Trues in a row (XOR: False), all False, all True, one True last."""
    a = np.zeros((5, N), bool)
    a[0, :2] = True
    a[1, 1:5] = True
    a[3] = True
    a[4, -1] = True
    return a


@pytest.mark.parametrize("op", ["min", "max", "sum", "abssum", "absmax"])
@pytest.mark.parametrize("N", [5, 8, 33])
def test_bool_reduce_rows(target, op, N):
    A = _rows(N)
    got = _reduce_kernel(5, N, op, 1)(A)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, _ref(A, op, 1))


@pytest.mark.parametrize("op", ["min", "max", "sum"])
def test_bool_reduce_columns(target, op):
    A = _rows(6).T.copy()              # (6, 5): the same runs down the reduced dim 0
    np.testing.assert_array_equal(_reduce_kernel(6, 5, op, 0)(A), _ref(A, op, 0))


@pytest.mark.parametrize("op", ["max", "sum"])
def test_bool_reduce_accumulates_into_true(target, op):
    """clear=False: a dst already True stays True whatever the row holds (no wrap to
    False after an even number of Trues), one already False becomes `any(row)`."""
    fn = _FNS[op]

    @tilelang.jit(out_idx=-1)
    def kernel():
        @T.prim_func
        def main(A: T.Tensor((4, 6), T.bool), D: T.Tensor((4,), T.bool),
                 B: T.Tensor((4,), T.bool)):
            with T.Kernel(1, threads=32):
                src = T.alloc_fragment((4, 6), T.bool)
                dst = T.alloc_fragment((4,), T.bool)
                T.copy(A, src)
                T.copy(D, dst)
                fn(src, dst, dim=1, clear=False)
                T.copy(dst, B)

        return main

    A = np.array([[1, 1, 0, 0, 0, 0], [0] * 6, [1] * 6, [0, 0, 0, 1, 1, 0]], bool)
    D = np.array([True, True, False, False])
    np.testing.assert_array_equal(kernel()(A, D), D | A.any(1))


# `target` only sets the default target, the same for every example of one test
@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(M=st.integers(1, 6), N=st.integers(1, 40), dim=st.sampled_from([0, 1]),
       op=st.sampled_from(["min", "max", "sum"]), p=st.sampled_from([0.0, 0.5, 0.9, 1.0]),
       seed=st.integers(0, 2 ** 31 - 1))
def test_bool_reduce_property(target, M, N, dim, op, p, seed):
    A = np.random.default_rng(seed).random((M, N)) < p
    np.testing.assert_array_equal(_reduce_kernel(M, N, op, dim)(A), _ref(A, op, dim))
