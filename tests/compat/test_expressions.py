"""Expression forms of TileLang kernels: `a if c else b`, bit operators, T.Cast, T.clamp,
T.floordiv / floormod / truncdiv / truncmod, .astype(), T.sin / cos / pow and `**`,
`in` / `is` on compile-time values."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang
import tilelang.language as T
from tilelang.diagnostics import TileLangError

from .helpers import close, randn


@tilelang.jit(out_idx=[-1])
def select_and_math(N, mode="abs"):
    sign = -1.0 if mode == "neg" else 1.0          # a compile-time conditional
    @T.prim_func
    def kernel(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(N):
                x = X[i]
                Y[i] = (x if x > 0 else -x) * sign + T.sin(x) ** 2 + T.cos(x) ** 2 \
                    + T.pow(T.abs(x), 0.5) + T.clamp(x, -0.5, 0.5)
    return kernel


@pytest.mark.parametrize("mode", ["abs", "neg"])
def test_conditional_expressions_and_float_functions(target, mode):
    x = randn(40)
    sign = -1.0 if mode == "neg" else 1.0
    want = np.abs(x) * sign + 1.0 + np.sqrt(np.abs(x)) + np.clip(x, -0.5, 0.5)
    close(select_and_math(40, mode)(x), want, 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def bits(N):
    @T.prim_func
    def kernel(A: T.Tensor((N,), "int32"), B: T.Tensor((N,), "int32"),
               Y: T.Tensor((N,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(N):
                a = A[i]
                Y[i] = ((a & 0xF0) | (B[i] << 2)) ^ (~a >> 1) + T.shift_right(a, 28) \
                    + T.bitwise_and(a, 7)
    return kernel


def test_bit_operators(target):
    rng = np.random.default_rng(1)
    a = rng.integers(-2**30, 2**30, 64).astype(np.int32)
    b = rng.integers(0, 1000, 64).astype(np.int32)
    want = ((a & 0xF0) | (b << 2)) ^ ((~a >> 1) + (a >> 28) + (a & 7))
    np.testing.assert_array_equal(bits(64)(a, b), want)


@tilelang.jit(out_idx=[-1])
def int_division(N):
    @T.prim_func
    def kernel(A: T.Tensor((N,), "int32"), Y: T.Tensor((N, 4), "int32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(N):
                Y[i, 0] = T.floordiv(A[i], 7)
                Y[i, 1] = T.floormod(A[i], 7)
                Y[i, 2] = T.truncdiv(A[i], 7)
                Y[i, 3] = T.truncmod(A[i], -7)
    return kernel


def test_floor_and_truncating_division(target):
    a = np.arange(-20, 20, dtype=np.int32)
    got = int_division(40)(a)
    np.testing.assert_array_equal(got[:, 0], a // 7)
    np.testing.assert_array_equal(got[:, 1], a % 7)
    np.testing.assert_array_equal(got[:, 2], np.trunc(a / 7).astype(np.int32))
    np.testing.assert_array_equal(got[:, 3], np.fmod(a, -7))


@tilelang.jit(out_idx=[-1])
def casts(N, accum_dtype="float32"):
    @T.prim_func
    def kernel(H: T.Tensor((N,), "float16"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(N):
                Y[i] = T.Cast(accum_dtype, H[i]) + H[i].astype(accum_dtype) * 2 \
                    + T.cast(T.Cast("int32", H[i] * 4), accum_dtype)
    return kernel


def test_cast_spellings(target):
    h = randn(32, dtype=np.float16)
    f = h.astype(np.float32)
    close(casts(32)(h), 3 * f + np.trunc(f * 4), 1e-3, 1e-3)


@settings(max_examples=8, deadline=None)
@given(n=st.integers(1, 70), lo=st.integers(-5, 5))
def test_clamp_over_ragged_sizes(n, lo):
    @tilelang.jit(out_idx=[-1])
    def clamp(N, lo, hi):
        @T.prim_func
        def kernel(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, 16), threads=32) as bx:
                for i in T.Parallel(16):
                    if bx * 16 + i < N:
                        Y[bx * 16 + i] = T.clamp(X[bx * 16 + i], lo, hi)
        return kernel
    x = randn(n) * 4
    close(clamp(n, float(lo), float(lo + 2))(x), np.clip(x, lo, lo + 2))


def test_in_and_is_on_compile_time_values():
    src = '''
import tilelang.language as T
dt = "float16"
@T.prim_func
def k(X: T.Tensor((8,), "float32")):
    with T.Kernel(1) as bx:
        assert dt in ("float16", "bfloat16") and dt not in ("float32",)
        assert T.float16 == dt and None is None
        for i in T.Parallel(8):
            X[i] = 1.0 if dt is not None else 2.0
'''
    k = tilelang.compile(src)
    x = np.zeros(8, np.float32)
    k(x)
    np.testing.assert_array_equal(x, 1.0)


def test_break_and_continue_are_clear_errors():
    # (`while` with a run-time condition is supported: tests/compat/test_while.py)
    for line, what in (("for i in range(3):\n            continue", "`continue`"),
                       ("for i in range(3):\n            break", "`break`")):
        src = f'''
import tilelang.language as T
@T.prim_func
def k(x: T.Tensor((8,), "float32")):
    with T.Kernel(1) as bx:
        {line}
'''
        with pytest.raises(TileLangError) as info:
            tilelang.compile(src)
        assert what in info.value.diagnostics[0].message
