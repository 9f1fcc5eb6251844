"""Evaluation of operators and intrinsics on constants (used by the simplifier).

Every function returns a `Const` of the node's own dtype, or None when the operation
must be left to run time (division by zero, a NaN cast to an integer, an operator whose
result the target defines differently). Floats are computed in float64 and rounded to
the node's dtype, which is what the generated code stores.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..dtypes import int_range
from ..ir import Const, Binary, Unary, Call, Cast
from ..ir.nodes import BIT_INTRINSICS

_float_types: dict[str, type] = {}


def make_const(value, dtype: str, span=None) -> Const:
    """A constant of `dtype` holding `value` converted to that dtype's Python kind."""
    if dtypes.is_bool(dtype):
        value = bool(value)
    elif dtypes.is_int(dtype):
        value = int(value)
    else:
        value = _round_float(_to_float(value), dtype)
    if span is None:
        return Const(value, dtype)
    return Const(value, dtype, span=span)


def _to_float(value) -> float:
    try:
        return float(value)
    except OverflowError:       # an integer beyond float64's range
        return math.inf if value > 0 else -math.inf


def _round_float(value: float, dtype: str) -> float:
    if dtype == "float64" or math.isnan(value) or math.isinf(value):
        return value
    t = _float_types.get(dtype)
    if t is None:
        t = _float_types[dtype] = dtypes.numpy_dtype(dtype).type
    with np.errstate(all="ignore"):
        return float(t(value))


def zero(dtype: str) -> Const:
    return make_const(0, dtype)


def is_const(e, value=None) -> bool:
    return isinstance(e, Const) and (value is None or e.value == value)


# ----------------------------------------------------------------------------- binary

def _floordiv(a, b):
    if b == 0:
        return None
    return a // b


def _mod(a, b):
    if b == 0:
        return None
    return a % b


def _truediv(a, b, is_int: bool):
    if is_int:
        # `/` on integers: fold only an exact quotient, on which every rounding agrees.
        if b == 0 or a % b != 0:
            return None
        return a // b
    with np.errstate(all="ignore"):
        return float(np.float64(a) / np.float64(b))


_ARITH = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "min": min,
    "max": max,
}
_COMPARE = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
}


def fold_binary(e: Binary) -> Const | None:
    a, b = e.lhs.value, e.rhs.value
    is_int = dtypes.is_int(e.lhs.dtype) or dtypes.is_bool(e.lhs.dtype)
    if e.op in _COMPARE:
        return make_const(_COMPARE[e.op](a, b), "bool", e.span)
    if e.op == "and":
        return make_const(bool(a) and bool(b), "bool", e.span)
    if e.op == "or":
        return make_const(bool(a) or bool(b), "bool", e.span)
    if e.op in _ARITH:
        if not is_int and e.op in ("min", "max") and (math.isnan(a) or math.isnan(b)):
            return None            # NaN propagation of min/max is the target's business
        result = _ARITH[e.op](a, b)
    elif e.op == "/":
        result = _truediv(a, b, is_int)
    elif e.op == "//":
        result = _floordiv(a, b) if is_int else _float_floor_op(a, b, _floordiv)
    elif e.op == "%":
        result = _mod(a, b) if is_int else _float_floor_op(a, b, _mod)
    else:
        return None
    if result is None:
        return None
    return make_const(result, e.dtype, e.span)


def _float_floor_op(a, b, op):
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b):
        return None
    return op(a, b)


# ----------------------------------------------------------------------------- unary / calls

def fold_unary(e: Unary) -> Const | None:
    v = e.operand.value
    if e.op == "not":
        return make_const(not v, "bool", e.span)
    if e.op == "-":
        return make_const(-v, e.dtype, e.span)
    return None


def _np1(fn):
    def apply(x):
        with np.errstate(all="ignore"):
            return float(fn(np.float64(x)))
    return apply


def _sigmoid(x):
    with np.errstate(all="ignore"):
        return float(1.0 / (1.0 + np.exp(-np.float64(x))))


def _rsqrt(x):
    with np.errstate(all="ignore"):
        return float(1.0 / np.sqrt(np.float64(x)))


def _erf(x):
    return x if math.isnan(x) else math.erf(x)


_FLOAT_CALLS = {
    "exp": _np1(np.exp), "exp2": _np1(np.exp2), "log": _np1(np.log), "log2": _np1(np.log2),
    "sqrt": _np1(np.sqrt), "rsqrt": _rsqrt, "tanh": _np1(np.tanh), "sigmoid": _sigmoid,
    "abs": abs, "floor": _np1(np.floor), "ceil": _np1(np.ceil), "erf": _erf,
    "sin": _np1(np.sin), "cos": _np1(np.cos), "tan": _np1(np.tan), "round": _np1(np.rint),
    "trunc": _np1(np.trunc),
}


def fold_call(e: Call) -> Const | None:
    args = [a.value for a in e.args]
    if e.name == "ceildiv":
        a, b = args
        if not dtypes.is_int(e.dtype) or b == 0:
            return None
        return make_const(-(-a // b), e.dtype, e.span)
    if e.name in BIT_INTRINSICS:
        return _fold_bits(e, args)
    if dtypes.is_int(e.dtype):
        if e.name == "abs":
            return make_const(abs(args[0]), e.dtype, e.span)
        if e.name in ("floor", "ceil"):
            return make_const(args[0], e.dtype, e.span)
        return None
    fn = _FLOAT_CALLS.get(e.name)
    if fn is None or not dtypes.is_float(e.dtype):
        return None
    return make_const(fn(float(args[0])), e.dtype, e.span)


def _fold_bits(e: Call, args) -> Const | None:
    """The bit functions on constants, wrapped to the dtype like the target's integers."""
    bits = dtypes.bits(e.dtype)
    if e.name == "bitwise_not":
        value = ~args[0]
    elif e.name in ("shift_left", "shift_right"):
        a, n = args
        if not 0 <= n < bits:
            value = -1 if e.name == "shift_right" and a < 0 else 0
        else:
            value = a << n if e.name == "shift_left" else a >> n
    else:
        a, b = args
        value = {"bitwise_and": a & b, "bitwise_or": a | b, "bitwise_xor": a ^ b}[e.name]
    value &= (1 << bits) - 1
    if dtypes.is_signed(e.dtype) and value >= 1 << (bits - 1):
        value -= 1 << bits
    return make_const(value, e.dtype, e.span)


def fold_cast(e: Cast) -> Const | None:
    v = e.value.value
    if dtypes.is_bool(e.dtype):
        return make_const(v != 0, "bool", e.span)
    if dtypes.is_int(e.dtype):
        if isinstance(v, float):
            if math.isnan(v) or math.isinf(v):
                return None
            v = math.trunc(v)
        lo, hi = int_range(e.dtype)
        if not lo <= v <= hi:
            return None            # out-of-range conversions are left to the target
        return make_const(v, e.dtype, e.span)
    return make_const(v, e.dtype, e.span)


def fold_bitcast(e) -> Const | None:
    """T.reinterpret of a constant: its bits read as the other dtype (None for a NaN or
    an infinity, which stay run-time values)."""
    import numpy as np
    bits = np.asarray(e.value.value).astype(dtypes.numpy_dtype(e.value.dtype))
    out = bits.view(dtypes.numpy_dtype(e.dtype)).item()
    value = float(out) if dtypes.is_float(e.dtype) else int(out)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return make_const(value, e.dtype, e.span)


