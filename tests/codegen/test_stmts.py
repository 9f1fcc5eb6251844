"""Statements and constants: If/else, Let, var buffers with init, loop kinds, constants."""
import math

import numpy as np
import pytest

from tilelang import dtypes
from .guarded import guarded_empty
from .irb import (Alloc, Cast, If, Let, Select, bin, build, c, kernel_func, load, loop, seq,
                 store, tensor, v)

FLOATS = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e4m3", "float8_e5m2")


def test_if_else_and_let():
    """Y[i] = (t = X[i] * 2; t if t > 0 else -t - 1)."""
    N, i, bx, t = v("N"), v("i"), v("bx"), v("t", "int32")
    X, Y = tensor("X", [N], "int32"), tensor("Y", [N], "int32")
    body = loop(i, N, seq(Let(t, bin("*", load(X, i), 2)),
                          If(bin(">", t, 0), store(Y, [i], t),
                             store(Y, [i], bin("-", bin("*", t, -1), 1)))))
    mod = build(kernel_func("k", [X, Y], [1], [bx], body, symbols=[N]))
    x = np.arange(-5, 6, dtype=np.int32)
    y = np.zeros_like(x)
    mod.call("k", x, y, x.size)
    t = 2 * x
    np.testing.assert_array_equal(y, np.where(t > 0, t, -t - 1))


@pytest.mark.parametrize("dt", FLOATS)
def test_special_constants(dt):
    values = [math.inf, -math.inf, math.nan, -0.0, 0.1, 1e6, -3.5]
    N, bx = v("N"), v("bx")
    Y = tensor("Y", [len(values)], dt)
    body = seq(*[store(Y, [k], c(val, dt)) for k, val in enumerate(values)])
    mod = build(kernel_func("k", [Y], [1], [bx], body))
    y = np.zeros(len(values), dtypes.numpy_dtype(dt))
    mod.call("k", y)
    with np.errstate(over="ignore", invalid="ignore"):
        want = np.array(values, np.float64).astype(dtypes.numpy_dtype(dt))
    np.testing.assert_array_equal(np.isnan(y.astype(np.float64)), np.isnan(want.astype(np.float64)))
    keep = ~np.isnan(want.astype(np.float64))
    assert (y.view(f"u{y.itemsize}")[keep] == want.view(f"u{y.itemsize}")[keep]).all()


@pytest.mark.parametrize("dt", ["float16", "int8", "bool", "float8_e4m3fn", "float8_e4m3"])
def test_var_buffer_with_init_is_reset_each_block(dt):
    """acc = init at the Alloc; every block starts from it again."""
    NB, b = v("NB"), v("b")
    Y = tensor("Y", [NB], dt)
    acc = tensor("acc", [], dt, "var")
    one = c(True) if dt == "bool" else c(1, dt) if dt == "int8" else c(1.0, dt)
    combine = "or" if dt == "bool" else "+"
    body = seq(Alloc(acc, one), store(acc, [], bin(combine, load(acc), one)),
               store(Y, [b], load(acc)))
    mod = build(kernel_func("k", [Y], [NB], [b], body, symbols=[NB]))
    y = np.zeros(5, dtypes.numpy_dtype(dt))
    mod.call("k", y, 5)
    want = np.ones(5, bool) if dt == "bool" else np.full(5, 2, dtypes.numpy_dtype(dt))
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("kind", ["serial", "parallel", "pipelined", "unroll", "vectorized"])
def test_every_loop_kind_with_offset_start(kind):
    N, i, bx = v("N"), v("i"), v("bx")
    Y = tensor("Y", [N], "int64")
    body = loop(i, bin("-", N, 3), store(Y, [i], Cast(bin("*", i, i), "int64")), kind=kind,
                start=3, annotations=(("unroll_factor", 4),) if kind == "unroll" else ())
    mod = build(kernel_func("k", [Y], [1], [bx], body, symbols=[N]))
    for n in (0, 3, 4, 37):
        y = np.full(max(n, 1), -1, np.int64)
        mod.call("k", y, n)
        want = np.full(max(n, 1), -1, np.int64)
        want[3:n] = np.arange(3, n) ** 2
        np.testing.assert_array_equal(y, want)


def test_nested_select_chooses_arms_lazily():
    """A Select inside a Select arm, both guarding loads."""
    N, i, bx = v("N"), v("i"), v("bx")
    X, Y = tensor("X", [N]), tensor("Y", [N])
    inner = Select(bin("<", bin("+", i, 2), N), load(X, bin("+", i, 2)), c(-1.0), "float32")
    outer = Select(bin("<", bin("+", i, 1), N), bin("+", load(X, bin("+", i, 1)), inner),
                   c(-2.0), "float32")
    mod = build(kernel_func("k", [X, Y], [1], [bx], loop(i, N, store(Y, [i], outer)),
                            symbols=[N]))
    x = guarded_empty((9,), np.float32)
    x[...] = np.arange(9)
    y = np.zeros(9, np.float32)
    mod.call("k", x, y, 9)
    want = [x[k + 1] + (x[k + 2] if k + 2 < 9 else -1) if k + 1 < 9 else -2 for k in range(9)]
    np.testing.assert_array_equal(y, np.array(want, np.float32))
