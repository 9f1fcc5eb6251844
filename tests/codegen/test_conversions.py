"""Loads and stores of every dtype against numpy / ml_dtypes, bit for bit."""
import platform

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tilelang import dtypes
from .irb import Cast, build, kernel_func, load, loop, store, tensor, v

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")   # NaN/overflow casts

LOW = ("float16", "bfloat16", "float8_e4m3fn", "float8_e4m3", "float8_e5m2")


def _convert_kernel(name, src, dst):
    """Y[i] = cast(X[i]) over a 1-D grid of one block."""
    N, i, bx = v("N"), v("i"), v("bx")
    X, Y = tensor("X", [N], src), tensor("Y", [N], dst)
    body = loop(i, N, store(Y, [i], Cast(load(X, i), dst)))
    return kernel_func(name, [X, Y], [1], [bx], body, symbols=[N])


@pytest.fixture(scope="module")
def conv():
    funcs = [_convert_kernel(f"{a}_to_{b}", a, b) for a in dtypes.DTYPES for b in dtypes.DTYPES]
    return build(*funcs)


def run(conv, src, dst, x):
    x = np.ascontiguousarray(x, dtype=dtypes.numpy_dtype(src))
    y = np.zeros(x.shape, dtype=dtypes.numpy_dtype(dst))
    conv.call(f"{src}_to_{dst}", x, y, x.size)
    return y


def assert_same_bits(got, want):
    """Equal bit patterns, except that any NaN matches any NaN."""
    gf, wf = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(wf)
    assert np.array_equal(np.isnan(gf), nan), "NaN positions differ"
    ib = np.dtype(f"u{got.dtype.itemsize}")
    bad = (got.view(ib) != want.view(ib)) & ~nan
    assert not bad.any(), (f"{bad.sum()} mismatches, first at {np.argmax(bad)}: "
                          f"got {got[bad][:4]} want {want[bad][:4]}")


def _float32_corpus(seed=0):
    """Specials, every bf16/fp16 value and the midpoints between neighbours (ties), and
    random float32 bit patterns (subnormals, huge values, NaNs included)."""
    rng = np.random.default_rng(seed)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 448, 464, 465, 480, 57344,
                         61440, 61439, 65504, 65520, 1e-45, -1e-45, 2 ** -9, 2 ** -10,
                         1.5 * 2 ** -9, 2 ** -16, 3 * 2 ** -17, 1e30, -1e30], np.float32)
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)
    bf = (np.arange(1 << 16, dtype=np.uint32) << 16).view(np.float32)
    mids = (bf.view(np.uint32) + (1 << 15)).view(np.float32)
    rand = rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([specials, halves, bf, mids, rand])


@pytest.mark.parametrize("dt", LOW)
def test_load_every_bit_pattern(conv, dt):
    width = dtypes.bits(dt)
    raw = np.arange(1 << width, dtype=np.uint16 if width == 16 else np.uint8)
    x = raw.view(dtypes.numpy_dtype(dt))
    assert_same_bits(run(conv, dt, "float32", x), x.astype(np.float32))
    assert_same_bits(run(conv, dt, "float64", x), x.astype(np.float64))


@pytest.mark.parametrize("dt", LOW)
def test_store_from_float32_rounds_like_ml_dtypes(conv, dt):
    x = _float32_corpus()
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(dtypes.numpy_dtype(dt))
    assert_same_bits(run(conv, "float32", dt, x), want)


@pytest.mark.parametrize("dt", ["float16"])
def test_store_from_float64_rounds_once(conv, dt):
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(10_000) * 1e3,
                        (np.arange(1 << 16, dtype=np.uint16).view(np.float16)
                         .astype(np.float64) * (1 + 2 ** -12))])
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(np.float16)
    assert_same_bits(run(conv, "float64", dt, x), want)


@pytest.mark.parametrize("a,b", [(a, b) for a in LOW for b in LOW if a != b])
def test_low_precision_to_low_precision(conv, a, b):
    raw = np.arange(1 << dtypes.bits(a), dtype=np.uint16 if dtypes.bits(a) == 16 else np.uint8)
    x = raw.view(dtypes.numpy_dtype(a))
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(np.float32).astype(dtypes.numpy_dtype(b))
    assert_same_bits(run(conv, a, b, x), want)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True), min_size=1,
                max_size=64))
def test_store_random_floats(conv, values):
    x = np.array(values, np.float32)
    for dt in LOW:
        with np.errstate(over="ignore", invalid="ignore"):
            want = x.astype(dtypes.numpy_dtype(dt))
        assert_same_bits(run(conv, "float32", dt, x), want)


INTS = ("int64", "int32", "int8", "uint8")


def _int_values(dt, rng):
    info = np.iinfo(dt)
    edge = [info.min, info.max, 0, 1, -1 if info.min < 0 else 2, info.min + 1, info.max - 1]
    rand = rng.integers(info.min, info.max, 500, dtype=dt, endpoint=True)
    return np.concatenate([np.array(edge, dt), rand])


@pytest.mark.parametrize("src", INTS + ("bool",))
@pytest.mark.parametrize("dst", dtypes.DTYPES)
def test_int_and_bool_sources(conv, src, dst):
    rng = np.random.default_rng(2)
    x = rng.integers(0, 2, 300).astype(bool) if src == "bool" else _int_values(src, rng)
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(dtypes.numpy_dtype(dst))
    if dst in ("bfloat16", "float8_e4m3fn", "float8_e4m3", "float8_e5m2") and src in ("int64", "int32"):
        # we round through float64 (exact for int32); numpy goes through float32 for
        # ml_dtypes targets; compare only where that intermediate step is exact
        keep = np.abs(x.astype(np.float64)) < 2 ** 24
        x, want = x[keep], want[keep]
    assert_same_bits(run(conv, src, dst, x), want)


@pytest.mark.parametrize("src", ("float64", "float32") + LOW)
@pytest.mark.parametrize("dst", INTS + ("bool",))
def test_float_to_int_truncates_in_range(conv, src, dst):
    rng = np.random.default_rng(3)
    info = np.iinfo(dst) if dst != "bool" else None
    lo, hi = (info.min, info.max) if info else (-3, 3)
    hi = min(hi, 200) if src.startswith("float8") else min(hi, 2 ** 20)
    lo = max(lo, -200) if src.startswith("float8") else max(lo, -2 ** 20)
    f = rng.uniform(lo, hi, 2000)
    f = np.concatenate([f, [0.0, -0.0, 0.5, -0.5, 0.999, -0.999, lo, hi]])
    x = f.astype(dtypes.numpy_dtype(src))
    x = x[(x.astype(np.float64) >= lo) & (x.astype(np.float64) <= hi)]
    want = x.astype(np.float64).astype(dtypes.numpy_dtype(dst))
    assert_same_bits(run(conv, src, dst, x), want)
    if dst == "bool":
        nan = np.array([np.nan], dtype=dtypes.numpy_dtype(src))
        assert run(conv, src, dst, nan)[0]   # NaN is truthy, as in numpy


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 baseline CPU")
def test_float16_without_f16c_uses_runtime_helpers():
    """For a baseline x86-64 (no F16C) LLVM calls libgcc's half conversions; the
    linked library still converts exactly."""
    mod = build(_convert_kernel("to_half", "float32", "float16"),
                _convert_kernel("from_half", "float16", "float32"), cpu="x86-64")
    assert "cvtps2ph" not in mod.compiled.asm
    x = _float32_corpus()
    y = np.zeros(x.size, np.float16)
    mod.call("to_half", x, y, x.size)
    assert_same_bits(y, x.astype(np.float16))
    h = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    z = np.zeros(h.size, np.float32)
    mod.call("from_half", h, z, h.size)
    assert_same_bits(z, h.astype(np.float32))
