"""TVM's rules for operands of different dtypes, which TileLang programs rely on.

    promote("float16", "float32") -> "float32"      promote("int32", "float16") -> "float16"

| operands                                  | result                         |
|-------------------------------------------|--------------------------------|
| two IEEE floats (float16/32/64)           | the wider                      |
| an IEEE float and bfloat16 or a float8    | the IEEE float                 |
| bfloat16 and a float8                     | bfloat16                       |
| two different float8 formats              | error (no rule, as in TVM)     |
| an integer or bool and any float          | the float                      |
| two signed or two unsigned integers       | the wider                      |
| a signed and an unsigned integer          | the wider; same width: unsigned|
| bool and an integer                       | the integer                    |

A store converts the value to the buffer's dtype. An untyped literal takes the dtype of
the other operand, except a float literal with an integer operand, which makes both
float32 (TVM reads a Python float as float32).

`strict_dtypes()` (the `--strict-dtypes` option) turns every such implicit conversion
back into an error that suggests `T.cast`.
"""
from __future__ import annotations

import contextvars
from contextlib import contextmanager

from .. import dtypes

_STRICT = contextvars.ContextVar("tilelang_strict_dtypes", default=False)
IEEE_FLOATS = ("float16", "float32", "float64")


def is_strict() -> bool:
    return _STRICT.get()


@contextmanager
def strict_dtypes(on: bool):
    """Check dtypes strictly (no implicit conversions) while building."""
    token = _STRICT.set(bool(on))
    try:
        yield
    finally:
        _STRICT.reset(token)


def promote(a: str, b: str) -> str | None:
    """The dtype both operands are converted to, or None when there is no rule."""
    if a == b:
        return a
    fa, fb = dtypes.is_float(a), dtypes.is_float(b)
    if fa and fb:
        return _promote_floats(a, b)
    if fa or fb:
        return a if fa else b
    if dtypes.is_bool(a) or dtypes.is_bool(b):
        return b if dtypes.is_bool(a) else a
    ba, bb = dtypes.bits(a), dtypes.bits(b)
    if ba != bb:
        return a if ba > bb else b
    return a if not dtypes.is_signed(a) else b      # same width: the unsigned one


def _promote_floats(a: str, b: str) -> str | None:
    ia, ib = a in IEEE_FLOATS, b in IEEE_FLOATS
    if ia and ib:
        return a if dtypes.bits(a) >= dtypes.bits(b) else b
    if ia or ib:
        return a if ia else b
    if "bfloat16" in (a, b):
        return "bfloat16"
    return None                                     # two float8 formats


__all__ = ["promote", "strict_dtypes", "is_strict", "IEEE_FLOATS"]
