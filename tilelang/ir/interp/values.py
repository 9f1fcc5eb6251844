"""The numerics of the reference interpreter: values, rounding, magnitudes.

A value `V` is a numpy array of its dtype (0-d, or shaped like the active lanes of the
parallel loops around it) plus two optional companions:

* `poison`: a bool array, True where the value depends on memory that was never written
  (or whose bytes another buffer reused since). Poison flows through arithmetic and
  stores; it is an error only where it decides something (an index, a condition) or
  reaches a kernel's output (docs/semantics.md, "Undefined behaviour").
* `mag`: a float64 array bounding the magnitude of every term that went into a float
  value (Σ|terms| of a sum, the product of magnitudes of a product...), kept when the
  caller asks for magnitudes. Two correct implementations with different rounding
  points or summation orders differ by at most about eps · mag (docs/semantics.md, "When
  two results agree").

Every operation computes exactly (float64, int64) and rounds the result to the node's
dtype: to nearest even for floats (ml_dtypes for bfloat16 / float8), wrapping for
integers.
"""
from __future__ import annotations

import math

import numpy as np

from ... import dtypes


class UndefinedBehavior(Exception):
    """The program does something docs/semantics.md leaves undefined: `.kind` names it
    ("out-of-bounds", "uninitialized", "parallel-conflict", "block-race", "bad-cast",
    "poison"), `.span` is where (an IR span, possibly NO_SPAN)."""

    def __init__(self, kind: str, message: str, span=None):
        super().__init__(f"{message}" + (f" ({span})" if span is not None and
                                         getattr(span, "line", 0) else ""))
        self.kind, self.span = kind, span


class NotSupported(Exception):
    """An IR construct the interpreter does not execute."""


_NP: dict = {}


def npdt(dtype: str):
    d = _NP.get(dtype)
    if d is None:
        d = _NP[dtype] = np.dtype(dtypes.numpy_dtype(dtype))
    return d


_FLOAT: dict = {}


def is_float(dtype: str) -> bool:
    f = _FLOAT.get(dtype)
    if f is None:
        f = _FLOAT[dtype] = dtypes.is_float(dtype)
    return f


def eps(dtype: str) -> float:
    """Unit roundoff of a float dtype (half the distance from 1 to the next value)."""
    import ml_dtypes
    return float(ml_dtypes.finfo(npdt(dtype)).eps) / 2


def tiny(dtype: str) -> float:
    """The smallest positive subnormal of a float dtype (absolute rounding floor)."""
    import ml_dtypes
    return float(ml_dtypes.finfo(npdt(dtype)).smallest_subnormal)


class V:
    """A value: `a` (numpy array of the dtype), `poison`, `mag` (None: none / exact)."""
    __slots__ = ("a", "dtype", "poison", "mag")

    def __init__(self, a, dtype: str, poison=None, mag=None):
        self.a, self.dtype, self.poison, self.mag = a, dtype, poison, mag

    @property
    def shape(self):
        return np.shape(self.a)


def const(value, dtype: str, magnitudes: bool) -> V:
    a = np.asarray(value).astype(npdt(dtype)) if not dtypes.is_bool(dtype) else np.asarray(bool(value))
    mag = np.abs(a.astype(np.float64)) if magnitudes and is_float(dtype) else None
    return V(a, dtype, None, mag)


def either(p, q):
    """The union of two poison masks (None: nothing poisoned)."""
    if p is None:
        return q
    if q is None:
        return p
    return np.logical_or(p, q)


def wide(v: V):
    """The value in the type exact arithmetic is done in (float64 / int64 / bool)."""
    if v.dtype == "bool":
        return v.a.astype(bool, copy=False)
    if is_float(v.dtype):
        return v.a.astype(np.float64, copy=False)
    return v.a.astype(np.int64, copy=False)


def round_to(x, dtype: str, span=None):
    """Exact result `x` rounded (floats) or wrapped (integers) to `dtype`."""
    x = np.asarray(x)
    if dtypes.is_bool(dtype):
        return x.astype(bool) if x.dtype == bool else (x != 0)
    if is_float(dtype):
        return x.astype(np.float64, copy=False).astype(npdt(dtype))
    if x.dtype.kind == "f":
        return float_to_int(x, dtype, span)
    return x.astype(np.int64, copy=False).astype(npdt(dtype))


def float_to_int(x, dtype: str, span=None, mask=None):
    """Truncation toward zero; NaN or a value outside the dtype's range is undefined."""
    info = np.iinfo(npdt(dtype))
    t = np.trunc(x)
    bad = ~np.isfinite(t) | (t < info.min) | (t > info.max)
    if mask is not None:
        bad &= np.broadcast_to(mask, bad.shape)
    if np.any(bad):
        raise UndefinedBehavior("bad-cast", f"converting {x[bad].flat[0]} to {dtype}: out "
                                            f"of its range", span)
    return np.where(np.isfinite(t), t, 0).astype(npdt(dtype))


# ----------------------------------------------------------------------------- operators

def _floordiv_int(a, b):
    safe = np.where(b == 0, 1, b)
    q = np.floor_divide(a, safe)
    return np.where(b == 0, 0, q)


def _mod_int(a, b):
    safe = np.where(b == 0, 1, b)
    r = np.mod(a, safe)
    return np.where(b == 0, 0, r)


_FLOAT_BIN = {
    "+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide,
    "//": np.floor_divide, "%": np.mod, "min": np.fmin, "max": np.fmax,
}
_INT_BIN = {
    "+": np.add, "-": np.subtract, "*": np.multiply, "//": _floordiv_int,
    "/": _floordiv_int, "%": _mod_int, "min": np.minimum, "max": np.maximum,
}
_BOOL_BIN = {"+": np.logical_or, "max": np.logical_or, "*": np.logical_and,
             "min": np.logical_and, "-": np.logical_xor}
_CMP = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
        "==": np.equal, "!=": np.not_equal}


def common(a: str, b: str) -> str:
    """The dtype two compared operands meet in (the CPU code generator's rule)."""
    if a == b:
        return a
    if is_float(a) or is_float(b):
        return "float64" if "float64" in (a, b) else "float32"
    if dtypes.bits(a) != dtypes.bits(b):
        return a if dtypes.bits(a) > dtypes.bits(b) else b
    return a if dtypes.is_signed(a) and a != "bool" else b


def convert(v: V, dtype: str, span=None, mask=None) -> V:
    """`T.cast(v, dtype)` (also a store's conversion to the buffer's dtype)."""
    if v.dtype == dtype:
        return v
    x = wide(v)
    if dtypes.is_int(dtype) and not dtypes.is_bool(dtype) and x.dtype.kind == "f":
        if v.poison is not None:
            mask = ~v.poison if mask is None else (mask & ~v.poison)
        a = float_to_int(x, dtype, span, mask)
    else:
        a = round_to(x, dtype, span)
    mag = None
    if v.mag is not None and is_float(dtype):
        mag = v.mag
    elif is_float(dtype) and not is_float(v.dtype):
        mag = None      # an exact integer: the result's own rounding is all
    return V(a, dtype, v.poison, mag)


def bitcast(v: V, dtype: str) -> V:
    """`T.reinterpret(dtype, v)`: v's bits read as `dtype` (one width); exact."""
    a = np.asarray(v.a).astype(npdt(v.dtype), copy=False)
    return V(np.ascontiguousarray(a).view(npdt(dtype)), dtype, v.poison)


def binary(op: str, x: V, y: V, dtype: str, magnitudes: bool) -> V:
    poison = either(x.poison, y.poison)
    if op in _CMP:
        dt = common(x.dtype, y.dtype)
        a, b = wide(convert(x, dt)), wide(convert(y, dt))
        return V(_CMP[op](a, b), "bool", poison)
    if op in ("and", "or"):
        fn = np.logical_and if op == "and" else np.logical_or
        return V(fn(x.a.astype(bool), y.a.astype(bool)), "bool", poison)
    a, b = wide(convert(x, dtype)), wide(convert(y, dtype))
    if dtypes.is_bool(dtype):
        return V(_BOOL_BIN[op](a, b), dtype, poison)
    if is_float(dtype):
        r = _FLOAT_BIN[op](a, b)
        out = V(round_to(r, dtype), dtype, poison)
        if magnitudes:
            out.mag = _binary_mag(op, x, y, a, b, r)
        return out
    r = _INT_BIN[op](a, b)
    return V(round_to(r, dtype), dtype, poison)


def _mag(v: V, wide_value):
    """The magnitude of an operand: its own, or |value| for an exact one. Infinities
    are exact (no rounding moves them): their magnitude is 0, not inf."""
    if v.mag is not None:
        return v.mag
    a = np.abs(np.asarray(wide_value, dtype=np.float64))
    return np.where(np.isfinite(a), a, 0.0)


def _times(a, b):
    """a * b for magnitudes, with 0 * inf = 0 (an exact zero stays exact)."""
    return np.where((a == 0) | (b == 0), 0.0, a * b)


def _binary_mag(op, x, y, a, b, r):
    ma, mb = _mag(x, a), _mag(y, b)
    if op in ("+", "-"):
        return ma + mb
    if op == "*":
        return _times(ma, mb)
    if op == "/":
        return (ma + _times(np.abs(r), mb)) / np.abs(b)
    if op in ("min", "max"):
        return np.maximum(ma, mb)
    return np.abs(r) + ma + mb      # // and %: discontinuous, rarely float


def unary(op: str, x: V, dtype: str) -> V:
    if op == "not":
        return V(np.logical_not(x.a.astype(bool)), "bool", x.poison)
    a = wide(convert(x, dtype))
    r = np.negative(a)
    return V(round_to(r, dtype), dtype, x.poison, x.mag)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


_ERF = np.frompyfunc(math.erf, 1, 1)

_CALLS = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x), "tanh": np.tanh, "sigmoid": _sigmoid,
    "floor": np.floor, "ceil": np.ceil, "erf": lambda x: _ERF(x).astype(np.float64),
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "round": np.rint, "trunc": np.trunc,
    "bitwise_not": np.invert,
}


def _shift(a, n, bits: int, left: bool):
    """a << n / a >> n (a exact in int64, the result wrapped by the caller): a count
    outside [0, bits) gives 0, or -1 for a negative value shifted right."""
    ok = (n >= 0) & (n < bits)
    safe = np.where(ok, n, 0)
    if left:
        return np.where(ok, np.left_shift(a, safe), 0)
    return np.where(ok, np.right_shift(a, safe), np.where(a < 0, -1, 0))


# two-argument intrinsics: (a, b, bits of the dtype) -> exact result
_CALLS2 = {
    "pow": lambda a, b, bits: np.power(a, b),
    "bitwise_and": lambda a, b, bits: np.bitwise_and(a, b),
    "bitwise_or": lambda a, b, bits: np.bitwise_or(a, b),
    "bitwise_xor": lambda a, b, bits: np.bitwise_xor(a, b),
    "shift_left": lambda a, b, bits: _shift(a, b, bits, True),
    "shift_right": lambda a, b, bits: _shift(a, b, bits, False),
}


def call(name: str, args: list, dtype: str, magnitudes: bool) -> V:
    poison = None
    for v in args:
        poison = either(poison, v.poison)
    if name == "ceildiv":
        a, b = (wide(convert(v, dtype)) for v in args)
        if is_float(dtype):
            return V(round_to(np.ceil(a / b), dtype), dtype, poison)
        return V(round_to(-_floordiv_int(-a, b), dtype), dtype, poison)
    if name in _CALLS2:
        a, b = (wide(convert(v, dtype)) for v in args)
        with np.errstate(all="ignore"):
            r = _CALLS2[name](a, b, dtypes.bits(dtype))
        return V(round_to(r, dtype), dtype, poison)
    (x,) = args
    a = wide(convert(x, dtype))
    if name == "abs":
        r = np.abs(a)
        return V(round_to(r, dtype), dtype, poison, x.mag)
    r = _CALLS[name](a)
    out = V(round_to(r, dtype), dtype, poison)
    if magnitudes:
        out.mag = _call_mag(name, x, a, r)
    return out


def _call_mag(name, x, a, r):
    """|f(x)| plus how far an error of mag(x) in x can move f(x) (first order)."""
    m = _mag(x, a)
    fr = np.abs(r)
    if name in ("exp", "exp2"):
        return _times(fr, 1.0 + (np.log(2.0) if name == "exp2" else 1.0) * m)
    if name in ("log", "log2"):
        return fr + _times(m, 1 / np.abs(a))
    if name == "sqrt":
        return fr + _times(m, 1 / (2 * np.sqrt(np.abs(a))))
    if name == "rsqrt":
        return fr + _times(m, fr / (2 * np.abs(a)))
    if name in ("floor", "ceil"):
        return np.where(m > 0, np.inf, fr)       # discontinuous: exact inputs only
    return fr + 1.2 * m                          # tanh, sigmoid, erf: slope <= 1.13


def select(cond, t: V, f: V, dtype: str) -> V:
    a = np.where(cond, t.a, f.a)
    poison = None
    if t.poison is not None or f.poison is not None:
        tp = t.poison if t.poison is not None else False
        fp = f.poison if f.poison is not None else False
        poison = np.where(cond, tp, fp)
    mag = None
    if t.mag is not None or f.mag is not None:
        mag = np.where(cond, _mag(t, wide(t)), _mag(f, wide(f)))
    return V(a, dtype, poison, mag)
