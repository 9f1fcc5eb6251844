"""Ports of TileLang's math tests (testing/python/math/test_math_fast_math.py and
test_math_ieee_math.py): every one-argument function, `T.round`'s two modes, the
two-argument ones, the fast-math spellings (`T.__exp`, ...) and the `T.ieee_*`
operations, each applied elementwise in TileLang's kernel and checked against numpy on
both targets. TileLang checks which CUDA function its code calls (`expf` or `__expf`);
here the values are checked instead. The kernels' lines are TileLang's."""
import math

import ml_dtypes
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.diagnostics import TileLangError
from tilelang.dtypes import numpy_dtype

from .helpers import RNG, close, slow_beyond


def single_arg_kernel(mathop_func, M=32, N=32, block_M=32, block_N=32, dtype=T.float32):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                B[by * block_M + i, bx * block_N + j] = mathop_func(A[by * block_M + i, bx * block_N + j])

    return main


def two_arg_kernel(mathop_func, M=32, N=32, block_M=32, block_N=32, dtype=T.float32):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((M, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                C[by * block_M + i, bx * block_N + j] = mathop_func(
                    A[by * block_M + i, bx * block_N + j], B[by * block_M + i, bx * block_N + j]
                )

    return main


def _compile(program, out_idx):
    return tilelang.compile(program, out_idx=out_idx, target="cuda", pass_configs={
        tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: False})


def _round_half_even(x):
    return np.rint(x)


# name, T function, numpy reference, input range
SINGLE_ARG_MATHOPS = [
    ("exp", T.exp, np.exp, (-4, 4)), ("exp2", T.exp2, np.exp2, (-4, 4)),
    ("exp10", T.exp10, lambda x: np.power(10.0, x), (-2, 2)),
    ("log", T.log, np.log, (0.1, 8)), ("log2", T.log2, np.log2, (0.1, 8)),
    ("log10", T.log10, np.log10, (0.1, 8)),
    ("sin", T.sin, np.sin, (-3, 3)), ("cos", T.cos, np.cos, (-3, 3)),
    ("tan", T.tan, np.tan, (-1, 1)), ("sinh", T.sinh, np.sinh, (-3, 3)),
    ("cosh", T.cosh, np.cosh, (-3, 3)), ("tanh", T.tanh, np.tanh, (-3, 3)),
    ("sqrt", T.sqrt, np.sqrt, (0, 8)), ("rsqrt", T.rsqrt, lambda x: 1 / np.sqrt(x), (0.1, 8)),
    ("erf", T.erf, np.vectorize(math.erf), (-3, 3)), ("floor", T.floor, np.floor, (-8, 8)),
    ("ceil", T.ceil, np.ceil, (-8, 8)), ("trunc", T.trunc, np.trunc, (-8, 8)),
    ("nearbyint", T.nearbyint, _round_half_even, (-8, 8)),
]
FASTMATH_MATHOPS = [
    ("__exp", T.__exp, np.exp, (-4, 4)), ("__exp10", T.__exp10, lambda x: np.power(10.0, x), (-2, 2)),
    ("__log", T.__log, np.log, (0.1, 8)), ("__log2", T.__log2, np.log2, (0.1, 8)),
    ("__log10", T.__log10, np.log10, (0.1, 8)), ("__tan", T.__tan, np.tan, (-1, 1)),
    ("__cos", T.__cos, np.cos, (-3, 3)), ("__sin", T.__sin, np.sin, (-3, 3)),
]


def _uniform(lo, hi, shape=(32, 32)):
    x = RNG.uniform(lo, hi, shape).astype(np.float32)
    x.flat[:4] = [lo, hi, (lo + hi) / 2, 0.5 if lo < 0.5 < hi else lo]   # ties for rounding
    return x


# the functions written with others (mathfns.py) first: `make test` runs those
_DERIVED = ("exp10", "log10", "sinh", "cosh", "nearbyint", "__exp10", "__log10")
_ORDERED = sorted(SINGLE_ARG_MATHOPS + FASTMATH_MATHOPS, key=lambda o: o[0] not in _DERIVED)


@pytest.mark.parametrize("name,func,ref,domain", slow_beyond(_ORDERED, len(_DERIVED)),
                         ids=[o[0] for o in _ORDERED])
def test_single_arg_mathops(target, name, func, ref, domain):
    a = _uniform(*domain)
    b = _compile(single_arg_kernel(func), [1])(a)
    close(b, ref(a.astype(np.float64)), 2e-5, 2e-5)


@pytest.mark.parametrize("dtype", [T.float32, T.float64])
def test_atan(target, dtype):
    a = np.concatenate([np.linspace(-30, 30, 512), np.linspace(-1.5, 1.5, 512)]).reshape(32, 32)
    a = a.astype(np.float32 if str(dtype) == "float32" else np.float64)
    b = _compile(single_arg_kernel(T.atan, dtype=dtype), [1])(a)
    close(b, np.arctan(a.astype(np.float64)), 1e-6 if str(dtype) == "float32" else 1e-9, 1e-7)


@pytest.mark.parametrize("rounding_mode,func,ref", [
    ("ties-to-even", lambda x: T.round(x), np.rint),
    ("ties-away-from-zero", lambda x: T.round(x, "ties-away-from-zero"),
     lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5))])
def test_round_modes(target, rounding_mode, func, ref):
    a = (np.arange(-16, 16, dtype=np.float32).reshape(1, 32) / 4 + np.zeros((32, 1), np.float32))
    a[1] = np.array([0.49999997, -0.49999997, 2.5, -2.5] * 8, np.float32)
    b = _compile(single_arg_kernel(func), [1])(a)
    np.testing.assert_array_equal(b, ref(a.astype(np.float64)))


@pytest.mark.parametrize("name,func,ref", [("pow", T.pow, np.power), ("fmod", T.fmod, np.fmod)])
def test_two_arg_mathops(target, name, func, ref):
    a = RNG.uniform(0.5, 4, (32, 32)).astype(np.float32)
    b = RNG.uniform(0.5, 3, (32, 32)).astype(np.float32)
    c = _compile(two_arg_kernel(func), [2])(a, b)
    close(c, ref(a.astype(np.float64), b.astype(np.float64)), 1e-5, 1e-5)


def test_abs(target):
    a = RNG.standard_normal((32, 32)).astype(np.float32)
    np.testing.assert_array_equal(_compile(single_arg_kernel(T.abs), [1])(a), np.abs(a))


@pytest.mark.parametrize("func", [T.tan, T.__tan], ids=["tan", "__tan"])
@pytest.mark.parametrize("dtype", [T.float16, T.bfloat16])
def test_tan_16bit(target, func, dtype):
    n = 32

    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(n):
                B[i] = func(A[i])

    np_dtype = np.float16 if str(dtype) == "float16" else ml_dtypes.bfloat16
    x = np.linspace(-1, 1, n).astype(np.float32).astype(np_dtype)
    y = tilelang.compile(main, out_idx=[1], target="cuda")(x)
    close(y, np.tan(x.astype(np.float64)), 1e-2, 1e-2)


# ---- T.ieee_* (test_math_ieee_math.py)

def ieee_kernel(mathop_name, mathop_func, rounding_mode, M=32, N=32, block_M=32, block_N=32,
                dtype=T.float32):
    if mathop_name == "ieee_fmaf":
        @T.prim_func
        def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype),
                 C: T.Tensor((M, N), dtype), D: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
                for i, j in T.Parallel(block_M, block_N):
                    D[by * block_M + i, bx * block_N + j] = mathop_func(
                        A[by * block_M + i, bx * block_N + j],
                        B[by * block_M + i, bx * block_N + j],
                        C[by * block_M + i, bx * block_N + j],
                        rounding_mode,
                    )
        return main, 3
    if mathop_name in ["ieee_add", "ieee_sub", "ieee_mul", "ieee_fdiv"]:
        @T.prim_func
        def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype),
                 C: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
                for i, j in T.Parallel(block_M, block_N):
                    C[by * block_M + i, bx * block_N + j] = mathop_func(
                        A[by * block_M + i, bx * block_N + j],
                        B[by * block_M + i, bx * block_N + j],
                        rounding_mode,
                    )
        return main, 2
    if mathop_name == "ieee_frsqrt":
        @T.prim_func
        def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
                for i, j in T.Parallel(block_M, block_N):
                    B[by * block_M + i, bx * block_N + j] = mathop_func(A[by * block_M + i, bx * block_N + j])
        return main, 1

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                B[by * block_M + i, bx * block_N + j] = mathop_func(A[by * block_M + i, bx * block_N + j], rounding_mode)
    return main, 1


IEEE_OPS = [("ieee_add", T.ieee_add, lambda a, b, c: a + b), ("ieee_sub", T.ieee_sub, lambda a, b, c: a - b),
            ("ieee_mul", T.ieee_mul, lambda a, b, c: a * b),
            ("ieee_fmaf", T.ieee_fmaf, lambda a, b, c: a * b + c),
            ("ieee_frcp", T.ieee_frcp, lambda a, b, c: 1 / a),
            ("ieee_fsqrt", T.ieee_fsqrt, lambda a, b, c: np.sqrt(a)),
            ("ieee_fdiv", T.ieee_fdiv, lambda a, b, c: a / b),
            ("ieee_frsqrt", T.ieee_frsqrt, lambda a, b, c: 1 / np.sqrt(a))]


@pytest.mark.parametrize("op_name,op_func,ref", IEEE_OPS, ids=[o[0] for o in IEEE_OPS])
@pytest.mark.parametrize("dtype", slow_beyond([T.float32, T.bfloat16, T.float64, T.float16], 2))
def test_ieee_round_to_nearest(target, op_name, op_func, ref, dtype):
    program, n = ieee_kernel(op_name, op_func, "rn", dtype=dtype)
    kernel = tilelang.compile(program, out_idx=[n], target="cuda")
    ins = [RNG.standard_normal((32, 32)) for _ in range(n)]
    if op_name in ("ieee_frcp", "ieee_fsqrt", "ieee_frsqrt"):
        ins[0] = np.abs(ins[0]) + 0.1
    if op_name == "ieee_fdiv":
        ins[1] = np.abs(ins[1]) + 0.1
    ins = [x.astype(numpy_dtype(str(dtype))) for x in ins]
    wide = [x.astype(np.float64) for x in ins] + [None] * (3 - n)
    tol = {"float64": 1e-12, "float32": 1e-5}.get(str(dtype), 2e-2)
    close(kernel(*ins), ref(*wide), tol, tol)


@pytest.mark.parametrize("mode", ["rz", "ru", "rd"])
def test_ieee_directed_rounding_is_a_diagnostic(mode):
    program, _ = ieee_kernel("ieee_add", T.ieee_add, mode)
    with pytest.raises(TileLangError) as info:
        tilelang.compile(program, out_idx=[2])
    assert f'rounding mode "{mode}"' in info.value.diagnostics[0].message


def test_ieee_invalid_rounding_mode():
    program, _ = ieee_kernel("ieee_mul", T.ieee_mul, "xy")
    with pytest.raises(TileLangError) as info:
        tilelang.compile(program, out_idx=[2])
    assert "invalid rounding mode of T.ieee_mul: xy" in info.value.diagnostics[0].message
