"""Python-level argument building in kernels: dict literals, `f(*args, **kwargs)` and
T functions passed as values (`reduce_fn=T.reduce_max`), as TileLang's tests write
them; and float max / min ignoring NaN on both targets."""
import numpy as np
import pytest

import tilelang as tl
import tilelang.language as T
from tilelang.diagnostics import TileLangError


def _tile_op_args(T, src, dst, dims, clear):
    kw = {"dim": dims[0], "clear": True}
    if not clear:
        kw = {"clear": False, "dim": dims[0]}      # a later key replaces the earlier one
    args = (src, dst)
    T.reduce_sum(*args, **kw)


def spread_kernel(clear, fn=T.reduce_max):
    @T.prim_func
    def main(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4,), "float32"),
             C: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            a = T.alloc_fragment((4, 8), "float32")
            b = T.alloc_fragment((4,), "float32")
            c = T.alloc_fragment((4,), "float32")
            T.copy(A, a)
            T.fill(b, 1.0)
            _tile_op_args(T, a, b, (1,), clear)
            fn(a, c, **{"dim": 1})
            T.copy(b, B)
            T.copy(c, C)
    return main


@pytest.mark.parametrize("clear", [True, False])
def test_spread_arguments(target, clear):
    a = np.arange(32, dtype=np.float32).reshape(4, 8) - 9
    b, c = np.zeros(4, np.float32), np.zeros(4, np.float32)
    tl.compile(spread_kernel(clear))(a, b, c)
    np.testing.assert_allclose(b, a.sum(1) + (0 if clear else 1))
    np.testing.assert_array_equal(c, a.max(1))


def _bad_spread(T, src, dst):
    T.reduce_sum(src, dst, **src)


@T.prim_func
def bad_spread(A: T.Tensor((4,), "float32"), B: T.Tensor((1,), "float32")):
    with T.Kernel(1):
        a = T.alloc_fragment((4,), "float32")
        b = T.alloc_fragment((1,), "float32")
        T.copy(A, a)
        _bad_spread(T, a, b)
        T.copy(b, B)


def test_spread_of_a_buffer_is_a_diagnostic():
    with pytest.raises(TileLangError) as info:
        tl.compile(bad_spread)
    diag = info.value.diagnostics[0]
    assert diag.code == "TL0009" and "`**` spreads a dict" in diag.message
    assert "^" in str(info.value) and "test_spread.py" in str(info.value)


@T.prim_func
def int_key(A: T.Tensor((4,), "float32"), B: T.Tensor((1,), "float32")):
    with T.Kernel(1):
        a = T.alloc_fragment((4,), "float32")
        b = T.alloc_fragment((1,), "float32")
        T.copy(A, a)
        T.reduce_sum(a, b, **{0: 1})
        T.copy(b, B)


def test_dict_with_a_number_key_is_a_diagnostic():
    with pytest.raises(TileLangError) as info:
        tl.compile(int_key)
    assert "string keys" in info.value.diagnostics[0].message


@T.prim_func
def elementwise_max(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32"),
                    C: T.Tensor((8,), "float32")):
    with T.Kernel(1, threads=32):
        for i in T.Parallel(8):
            C[i] = T.max(A[i], B[i]) + T.min(A[i], B[i])


def test_max_and_min_ignore_nan(target):
    """maxnum on both targets (tcsim's vector unit used to return the NaN)."""
    a = np.array([np.nan, 1, 2, np.nan, -1, 0, 5, 3], np.float32)
    b = np.array([4, np.nan, 1, np.nan, -2, 0, 6, 3], np.float32)
    c = np.zeros(8, np.float32)
    tl.compile(elementwise_max)(a, b, c)
    np.testing.assert_array_equal(c, np.fmax(a, b) + np.fmin(a, b))
