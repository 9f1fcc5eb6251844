"""The compiled scalar runs (runtime/tcsim/runs.py) write each ALU operation as a Python
expression: every one must compute exactly what the interpreter's numerics function
does — the same value and the same type — or compiled and interpreted units diverge."""
from __future__ import annotations

import math

from hypothesis import given, strategies as st

from tilelang.runtime.tcsim import runs
from tilelang.runtime.tcsim.numerics import SCALAR_BIN, SCALAR_UN

VALUES = st.one_of(st.integers(-5, 5), st.sampled_from([0.0, -0.0, 1.5, -2.25, math.nan,
                                                        math.inf, -math.inf, True, False]))


def _same(x, y) -> bool:
    if isinstance(x, float) and math.isnan(x):
        return isinstance(y, float) and math.isnan(y)
    return x == y and type(x) is type(y)


@given(a=VALUES, b=VALUES)
def test_binary_expressions_are_the_numerics_functions(a, b):
    for op, form in runs._BIN.items():
        got = eval(form.format(a="a", b="b"), {}, {"a": a, "b": b})
        assert _same(got, SCALAR_BIN[op](a, b)), (op, a, b)


@given(a=VALUES)
def test_unary_expressions_are_the_numerics_functions(a):
    for op, form in runs._UN.items():
        got = eval(form.format(a="a"), {}, {"a": a})
        assert _same(got, SCALAR_UN[op](a)), (op, a)
