"""TVM's promotion rules: operands of two dtypes meet in the wider or the float one, a
store converts to the buffer's dtype; `strict_dtypes` keeps the old errors."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import tilelang
import tilelang.language as T
from tilelang import dtypes
from tilelang.diagnostics import TileLangError
from tilelang.frontend.promotion import promote

from .helpers import close, randn

RULES = [  # (a, b, result): the rule table of docs/compat.md
    ("float16", "float32", "float32"), ("float32", "float64", "float64"),
    ("bfloat16", "float32", "float32"), ("bfloat16", "float16", "float16"),
    ("float8_e4m3fn", "float16", "float16"), ("float8_e5m2", "bfloat16", "bfloat16"),
    ("float8_e4m3fn", "float8_e5m2", None), ("int32", "float16", "float16"),
    ("int8", "int32", "int32"), ("uint8", "int8", "uint8"), ("uint8", "int32", "int32"),
    ("bool", "int8", "int8"), ("bool", "float32", "float32"), ("int64", "bfloat16", "bfloat16"),
]


@pytest.mark.parametrize("a, b, want", RULES)
def test_rule_table(a, b, want):
    assert promote(a, b) == want and promote(b, a) == want


@given(st.sampled_from(dtypes.DTYPES), st.sampled_from(dtypes.DTYPES))
def test_promotion_is_symmetric_and_keeps_floats(a, b):
    p = promote(a, b)
    assert p == promote(b, a)
    if p is not None:
        assert p in (a, b)
        assert dtypes.is_float(p) or not (dtypes.is_float(a) or dtypes.is_float(b))


@tilelang.jit(out_idx=[-1])
def mixed(N):
    @T.prim_func
    def kernel(H: T.Tensor((N,), "float16"), F: T.Tensor((N,), "float32"),
               I: T.Tensor((N,), "int32"), Y: T.Tensor((N,), "float16")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(N):
                Y[i] = H[i] * F[i] + I[i] * 0.5      # fp32 arithmetic, stored as fp16
    return kernel


def test_mixed_arithmetic_promotes_and_the_store_converts(target):
    h, f = randn(32, dtype=np.float16), randn(32)
    i = np.arange(32, dtype=np.int32)
    want = h.astype(np.float32) * f + i * np.float32(0.5)
    close(mixed(32)(h, f, i), want.astype(np.float16), 1e-3, 1e-3)


def test_strict_dtypes_keeps_the_error_with_its_fix():
    @tilelang.jit(out_idx=[-1], strict_dtypes=True)
    def strict(N):
        return mixed.factory(N)
    with pytest.raises(TileLangError) as info:
        strict(32)
    assert info.value.code == "TL0201" and "T.cast" in info.value.diagnostics[0].help


MIXED_TL = '''
import tilelang.language as T
N = T.dynamic("N")

@T.prim_func
def mixed(H: T.Tensor((N,), "float16"), F: T.Tensor((N,), "float32")):
    with T.Kernel(1) as bx:
        for i in T.Parallel(4):
            F[i] = H[i] * F[i]
'''


def test_tilec_strict_dtypes_flag(tmp_path):
    from click.testing import CliRunner
    from tilelang.cli import main
    path = tmp_path / "mixed.tl"
    path.write_text(MIXED_TL)
    ok = CliRunner().invoke(main, ["ir", str(path)])
    assert ok.exit_code == 0 and "T.cast(H[i], \"float32\")" in ok.output
    strict = CliRunner().invoke(main, ["ir", str(path), "--strict-dtypes"])
    assert strict.exit_code == 1 and "TL0201" in strict.output and "T.cast" in strict.output
