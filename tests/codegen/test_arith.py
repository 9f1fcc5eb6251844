"""Scalar arithmetic, comparisons and logic vs numpy / Python semantics."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from .irb import Binary, Unary, build, kernel_func, load, loop, store, tensor, v

ARITH = ("+", "-", "*", "//", "%", "min", "max")
CMP = ("<", "<=", ">", ">=", "==", "!=")
INTS = ("int64", "int32", "int8", "uint8")
FLOATS = ("float64", "float32")
_NAMES = {"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floordiv", "%": "mod",
          "min": "min", "max": "max", "<": "lt", "<=": "le", ">": "gt", ">=": "ge",
          "==": "eq", "!=": "ne", "and": "and", "or": "or"}


def _binary_kernel(op, dt):
    N, i, bx = v("N"), v("i"), v("bx")
    out_dt = "bool" if op in CMP or op in ("and", "or") else dt
    X, Y, Z = tensor("X", [N], dt), tensor("Y", [N], dt), tensor("Z", [N], out_dt)
    body = loop(i, N, store(Z, [i], Binary(op, load(X, i), load(Y, i), out_dt)))
    return kernel_func(f"{_NAMES[op]}_{dt}", [X, Y, Z], [1], [bx], body, symbols=[N])


def _unary_kernel(op, dt):
    N, i, bx = v("N"), v("i"), v("bx")
    X, Z = tensor("X", [N], dt), tensor("Z", [N], dt)
    body = loop(i, N, store(Z, [i], Unary(op, load(X, i), dt)))
    return kernel_func(f"{'neg' if op == '-' else 'not'}_{dt}", [X, Z], [1], [bx], body,
                       symbols=[N])


@pytest.fixture(scope="module")
def mod():
    funcs = [_binary_kernel(op, dt) for dt in INTS + FLOATS for op in ARITH + CMP]
    funcs += [_binary_kernel("/", dt) for dt in FLOATS]
    funcs += [_binary_kernel(op, "bool") for op in ("and", "or") + CMP]
    funcs += [_unary_kernel("-", dt) for dt in INTS + FLOATS] + [_unary_kernel("not", "bool")]
    return build(*funcs)


def run(mod, name, *arrays, out_dtype):
    z = np.zeros(arrays[0].shape, out_dtype)
    mod.call(name, *arrays, z, arrays[0].size)
    return z


def reference(op, x, y):
    with np.errstate(all="ignore"):
        return {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide,
                "//": np.floor_divide, "%": np.remainder, "min": np.fmin, "max": np.fmax,
                "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
                "==": np.equal, "!=": np.not_equal}[op](x, y)


def _pairs(dt, rng, n=400):
    if dt in FLOATS:
        x = rng.standard_normal(n) * 10
        y = rng.standard_normal(n) * 3
        x[:8] = [7.0, -7.0, 7.0, -7.0, 1.0, 0.0, -0.0, np.nan]
        y[:8] = [2.0, 2.0, -2.0, -2.0, 0.1, 3.0, 0.0, 1.0]
        return x.astype(dt), y.astype(dt)
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    y = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    small = rng.integers(max(info.min, -9), 10, n, dtype=dt)
    y[: n // 2] = small[: n // 2]          # many small divisors, some zero
    edge_x = [7, 7, 0, 1, info.min, info.min, info.max, 5]
    edge_y = [2, 0, 3, 1, 1, 0, 1, 5]
    if info.min < 0:
        edge_x += [-7, -7, 7, -1, info.min, -6]
        edge_y += [2, -2, -2, 3, -1, 3]
    k = len(edge_x)
    x[:k], y[:k] = edge_x, edge_y
    return x, y


@pytest.mark.parametrize("dt", INTS + FLOATS)
@pytest.mark.parametrize("op", ARITH + CMP)
def test_binary_vs_numpy(mod, op, dt):
    x, y = _pairs(dt, np.random.default_rng(hash((op, dt)) % 2 ** 32))
    want = reference(op, x, y)
    got = run(mod, f"{_NAMES[op]}_{dt}", x, y, out_dtype=want.dtype)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt", FLOATS)
def test_float_true_division(mod, dt):
    x, y = _pairs(dt, np.random.default_rng(5))
    want = reference("/", x, y)
    np.testing.assert_array_equal(run(mod, f"div_{dt}", x, y, out_dtype=dt), want)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(-2 ** 31, 2 ** 31 - 1),
                          st.integers(-2 ** 31, 2 ** 31 - 1).filter(lambda d: d != 0)),
                min_size=1, max_size=32))
def test_floor_div_mod_match_python(mod, pairs):
    x = np.array([p[0] for p in pairs], np.int32)
    y = np.array([p[1] for p in pairs], np.int32)
    q = run(mod, "floordiv_int32", x, y, out_dtype=np.int32)
    r = run(mod, "mod_int32", x, y, out_dtype=np.int32)
    for a, b, qq, rr in zip(x.tolist(), y.tolist(), q.tolist(), r.tolist()):
        if (a, b) == (-2 ** 31, -1):
            continue   # the true quotient does not fit in int32
        assert (qq, rr) == (a // b, a % b), (a, b)


def test_integer_division_by_zero_gives_zero(mod):
    x = np.array([5, -5, 0, 2 ** 31 - 1], np.int32)
    y = np.zeros(4, np.int32)
    assert not run(mod, "floordiv_int32", x, y, out_dtype=np.int32).any()
    assert not run(mod, "mod_int32", x, y, out_dtype=np.int32).any()


@pytest.mark.parametrize("op", ("and", "or") + CMP)
def test_bool_logic(mod, op):
    x = np.array([False, False, True, True])
    y = np.array([False, True, False, True])
    want = {"and": x & y, "or": x | y}.get(op)
    if want is None:
        want = reference(op, x, y)
    np.testing.assert_array_equal(run(mod, f"{_NAMES[op]}_bool", x, y, out_dtype=bool), want)


@pytest.mark.parametrize("dt", INTS + FLOATS)
def test_negation(mod, dt):
    x, _ = _pairs(dt, np.random.default_rng(9))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(run(mod, f"neg_{dt}", x, out_dtype=dt), -x)


def test_not(mod):
    x = np.array([True, False, True])
    np.testing.assert_array_equal(run(mod, "not_bool", x, out_dtype=bool), ~x)


def test_mixed_dtype_comparison_widens():
    """A comparison the IR left mixed (int32 vs int64) is done in the wider type."""
    N, i, bx = v("N"), v("i"), v("bx")
    X, Y, Z = tensor("X", [N], "int32"), tensor("Y", [N], "int64"), tensor("Z", [N], "bool")
    body = loop(i, N, store(Z, [i], Binary("<", load(X, i), load(Y, i), "bool")))
    mod = build(kernel_func("lt_mixed", [X, Y, Z], [1], [bx], body, symbols=[N]))
    x = np.array([0, -1, 5], np.int32)
    y = np.array([2 ** 40, -2 ** 40, 4], np.int64)
    z = np.zeros(3, bool)
    mod.call("lt_mixed", x, y, z, 3)
    np.testing.assert_array_equal(z, x < y)
