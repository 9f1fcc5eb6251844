"""Every intrinsic (T.exp, T.sqrt, ...) vs numpy, in float32, float64, float16 and ints."""
import math

import numpy as np
import pytest

from tilelang import dtypes
from .irb import Call, build, kernel_func, load, loop, store, tensor, v

FLOAT_UNARY = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "abs",
               "floor", "ceil", "erf")
DTS = ("float64", "float32", "float16", "bfloat16")


def _kernel(name, dt, nargs=1):
    N, i, bx = v("N"), v("i"), v("bx")
    ins = [tensor(f"X{k}", [N], dt) for k in range(nargs)]
    Z = tensor("Z", [N], dt)
    body = loop(i, N, store(Z, [i], Call(name, tuple(load(x, i) for x in ins), dt)))
    return kernel_func(f"{name}_{dt}", ins + [Z], [1], [bx], body, symbols=[N])


@pytest.fixture(scope="module")
def mod():
    funcs = [_kernel(n, dt) for n in FLOAT_UNARY for dt in DTS]
    funcs += [_kernel("ceildiv", dt, 2) for dt in DTS + ("int32", "int64", "int8", "uint8")]
    funcs += [_kernel(n, dt) for n in ("abs", "floor", "ceil")
              for dt in ("int32", "int64", "int8", "uint8")]
    return build(*funcs)


def run(mod, name, dt, *xs):
    z = np.zeros(xs[0].shape, dtypes.numpy_dtype(dt))
    mod.call(f"{name}_{dt}", *xs, z, xs[0].size)
    return z


_REF = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "abs": np.abs, "floor": np.floor,
    "ceil": np.ceil, "erf": np.vectorize(math.erf),
}
_RTOL = {"float64": 1e-13, "float32": 2e-6, "float16": 1e-3, "bfloat16": 8e-3}


def _inputs(name, rng):
    x = rng.standard_normal(500) * 4
    if name in ("log", "log2", "sqrt", "rsqrt"):
        x = np.abs(x) + 1e-3
    if name in ("exp", "exp2", "sigmoid"):
        x = np.clip(x, -30, 30)
    return np.concatenate([x, [0.5, -0.5, 1.0, 2.5, -2.5, 3.0]])


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("name", FLOAT_UNARY)
def test_float_intrinsic(mod, name, dt):
    npdt = dtypes.numpy_dtype(dt)
    x = _inputs(name, np.random.default_rng(len(name))).astype(npdt)
    with np.errstate(all="ignore"):
        want = _REF[name](x.astype(np.float64)).astype(npdt)   # exact, then rounded
    got = run(mod, name, dt, x)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                               rtol=_RTOL[dt], atol=_RTOL[dt] * 1e-3)


@pytest.mark.parametrize("name", ["exp", "exp2"])
def test_float32_exp_over_its_whole_range(mod, name):
    """The inline float32 exp/exp2: overflow to inf, gradual underflow, ~2 ulp."""
    hi = 89.0 if name == "exp" else 129.0
    x = np.concatenate([np.linspace(-hi - 20, hi, 200_001), [-87.5, 88.7, 88.8, -149, -126.5,
                                                             127.99, 128.0]]).astype(np.float32)
    with np.errstate(all="ignore"):
        want = _REF[name](x.astype(np.float64)).astype(np.float32)
    got = run(mod, name, "float32", x)
    assert np.array_equal(np.isinf(got), np.isinf(want))
    normal = np.abs(want) >= np.finfo(np.float32).tiny
    np.testing.assert_allclose(got[normal], want[normal], rtol=3e-7)
    sub = ~normal
    np.testing.assert_allclose(got[sub], want[sub], rtol=0, atol=2 * 2.0 ** -149)


def test_float32_tanh_accuracy(mod):
    """The inline float32 tanh, near zero (no cancellation), mid-range and saturated."""
    x = np.concatenate([np.linspace(-12, 12, 100_001), np.geomspace(1e-30, 1, 2000),
                        -np.geomspace(1e-30, 1, 2000), [0.0, -0.0, 40.0, -40.0, np.inf,
                                                        -np.inf, np.nan]]).astype(np.float32)
    want = np.tanh(x.astype(np.float64)).astype(np.float32)
    got = run(mod, "tanh", "float32", x)
    np.testing.assert_allclose(got, want, rtol=4e-7, atol=0)
    assert np.signbit(got[x == 0]).tolist() == np.signbit(x[x == 0]).tolist()


def test_exp_loop_is_vector_code():
    asm = build(_kernel("exp", "float32"), cpu="znver3", features="+avx2,+fma,+f16c").compiled.asm
    assert "vfmadd" in asm and "ymm" in asm and "expf" not in asm
    asm = build(_kernel("tanh", "float32"), cpu="znver3", features="+avx2,+fma").compiled.asm
    assert "ymm" in asm and "tanhf" not in asm


def test_special_values(mod):
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0], np.float32)
    with np.errstate(all="ignore"):
        for name in ("exp", "sqrt", "tanh", "abs", "floor", "erf"):
            np.testing.assert_array_equal(run(mod, name, "float32", x),
                                          _REF[name](x).astype(np.float32))
        assert np.isnan(run(mod, "log", "float32", np.array([-1.0], np.float32)))[0]


@pytest.mark.parametrize("dt", ("int32", "int64", "int8", "uint8"))
def test_int_intrinsics(mod, dt):
    info = np.iinfo(dt)
    rng = np.random.default_rng(4)
    a = rng.integers(max(info.min, -100), min(info.max, 100), 300, dtype=dt)
    b = rng.integers(1, min(info.max, 20), 300, dtype=dt)
    if info.min < 0:
        b[::3] = -b[::3]
    want = np.array([-(-int(p) // int(q)) for p, q in zip(a, b)]).astype(dt)
    np.testing.assert_array_equal(run(mod, "ceildiv", dt, a, b), want)
    np.testing.assert_array_equal(run(mod, "abs", dt, a), np.abs(a))
    np.testing.assert_array_equal(run(mod, "floor", dt, a), a)
    np.testing.assert_array_equal(run(mod, "ceil", dt, a), a)


@pytest.mark.parametrize("dt", ("float32", "float64"))
def test_float_ceildiv(mod, dt):
    a = np.array([7.0, -7.0, 6.0, 0.5], dt)
    b = np.array([2.0, 2.0, 3.0, 0.25], dt)
    np.testing.assert_array_equal(run(mod, "ceildiv", dt, a, b), np.ceil(a / b))
