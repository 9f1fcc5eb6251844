"""What each instruction computes, with numpy: scalar ALU, VEC elementwise/reductions,
MMA, DMA boxes with zero fill, casts with the rounding of the destination dtype.

Low-precision floats (bf16, fp16, fp8) are widened to float32 to compute and rounded to
nearest-even when stored (ml_dtypes' astype), as the machine's engines do; float64 stays
float64; integers compute in int64 and wrap when stored.
"""
from __future__ import annotations

import math

import numpy as np

from ...dtypes import is_float, numpy_dtype

_NP = {}


def npdt(dtype: str):
    d = _NP.get(dtype)
    if d is None:
        d = _NP[dtype] = numpy_dtype(dtype)
    return d


# ----------------------------------------------------------------------------- scalar ALU

def _floordiv(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a // b if b else 0
    return math.floor(a / b) if b else math.copysign(math.inf, a) if a else math.nan


def _div(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a // b if b else 0
    try:
        return a / b
    except ZeroDivisionError:
        return math.copysign(math.inf, a) if a else math.nan


def _mod(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a % b if b else 0
    return a - b * math.floor(a / b) if b else math.nan


def _maxnum(pick):
    """Float min / max ignore a NaN operand (maxnum), as on the CPU (docs/semantics.md)."""
    return lambda a, b: b if a != a else a if b != b else pick(a, b)


SCALAR_BIN = {
    "ADD": lambda a, b: a + b, "SUB": lambda a, b: a - b, "MUL": lambda a, b: a * b,
    "DIV": _div, "FDIV": _floordiv, "MOD": _mod, "MIN": _maxnum(min), "MAX": _maxnum(max),
    "LT": lambda a, b: int(a < b), "LE": lambda a, b: int(a <= b),
    "GT": lambda a, b: int(a > b), "GE": lambda a, b: int(a >= b),
    "EQ": lambda a, b: int(a == b), "NE": lambda a, b: int(a != b),
    "AND": lambda a, b: int(bool(a) and bool(b)), "OR": lambda a, b: int(bool(a) or bool(b)),
    "ADDI": lambda a, b: a + b, "MULI": lambda a, b: a * b,
    "BAND": lambda a, b: int(a) & int(b), "BOR": lambda a, b: int(a) | int(b),
    "BXOR": lambda a, b: int(a) ^ int(b),
    "SHL": lambda a, b: int(a) << int(b) if 0 <= b < 64 else 0,
    "SHR": lambda a, b: int(a) >> int(b) if 0 <= b < 64 else (-1 if a < 0 else 0),
    "POW": lambda a, b: _safe(lambda x: x ** b)(float(a)),
}


def _safe(fn):
    def f(x):
        try:
            return fn(x)
        except (ValueError, OverflowError, ZeroDivisionError):
            return math.nan
    return f


SCALAR_UN = {
    "MOV": lambda a: a, "NEG": lambda a: -a, "NOT": lambda a: int(not a),
    "CVTI": lambda a: int(a) if math.isfinite(a) else 0, "CVTF": float,
    "EXP": _safe(math.exp), "EXP2": _safe(lambda x: 2.0 ** x), "LOG": _safe(math.log),
    "LOG2": _safe(math.log2), "SQRT": _safe(math.sqrt),
    "RSQRT": _safe(lambda x: 1.0 / math.sqrt(x)), "TANH": math.tanh,
    "SIGMOID": _safe(lambda x: 1.0 / (1.0 + math.exp(-x))), "ABS": abs,
    "FLOOR": lambda x: float(math.floor(x)), "CEIL": lambda x: float(math.ceil(x)),
    "ERF": math.erf,
    "BNOT": lambda a: ~int(a), "SIN": _safe(math.sin), "COS": _safe(math.cos),
    "TAN": _safe(math.tan), "ROUND": lambda x: float(round(x)) if math.isfinite(x) else x,
    "TRUNC": lambda x: float(math.trunc(x)) if math.isfinite(x) else x,
}


def scalar_bitcast(src: str, dst: str):
    """The BITCAST function: a register's value rounded (or wrapped) to `src`, its bits
    read as `dst` of the same width (a numpy view, so every bit pattern is exact)."""
    to_dst = float if is_float(dst) else int

    def bitcast(a):
        with np.errstate(all="ignore"):
            raw = store_cast(np.asarray([a]), src)
        return to_dst(raw.view(npdt(dst))[0])
    return bitcast


# ----------------------------------------------------------------------------- VEC

def _erf(x):
    return np.vectorize(math.erf, otypes=[x.dtype])(x)


def _vfloordiv(a, b):
    if a.dtype.kind == "f":
        return np.floor(a / b)
    with np.errstate(divide="ignore"):
        return np.where(b == 0, 0, a // np.where(b == 0, 1, b))


def _vmod(a, b):
    if a.dtype.kind == "f":
        return a - b * np.floor(a / b)
    return np.where(b == 0, 0, a % np.where(b == 0, 1, b))


def _vdiv(a, b):
    return a / b if a.dtype.kind == "f" else _vfloordiv(a, b)


def _shift(a, n, left: bool):
    """a << n / a >> n on the int64 compute type; a count outside [0, 64) gives 0 (or
    -1 for a negative a shifted right); the store wraps to the buffer's width."""
    ok = (n >= 0) & (n < 64)
    safe = np.where(ok, n, 0).astype(a.dtype)
    if left:
        return np.where(ok, np.left_shift(a, safe), 0)
    return np.where(ok, np.right_shift(a, safe), np.where(a < 0, -1, 0))


VEC_BIN = {
    "ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "DIV": _vdiv,
    "FDIV": _vfloordiv, "MOD": _vmod, "MIN": np.fmin, "MAX": np.fmax,     # maxnum
    "LT": np.less, "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal,
    "EQ": np.equal, "NE": np.not_equal, "AND": np.logical_and, "OR": np.logical_or,
    "BAND": np.bitwise_and, "BOR": np.bitwise_or, "BXOR": np.bitwise_xor,
    "SHL": lambda a, n: _shift(a, n, True), "SHR": lambda a, n: _shift(a, n, False),
    "POW": np.power,
}

VEC_UN = {
    "MOV": lambda x: x, "NEG": np.negative, "NOT": np.logical_not, "ABS": np.abs,
    "EXP": np.exp, "EXP2": np.exp2, "LOG": np.log, "LOG2": np.log2, "SQRT": np.sqrt,
    "RSQRT": lambda x: 1 / np.sqrt(x), "TANH": np.tanh,
    "SIGMOID": lambda x: 1 / (1 + np.exp(-x)), "ERF": _erf,
    "FLOOR": np.floor, "CEIL": np.ceil,
    "BNOT": np.invert, "SIN": np.sin, "COS": np.cos, "TAN": np.tan, "ROUND": np.rint,
    "TRUNC": np.trunc,
}


def compute_dtype(values) -> np.dtype:
    """float64 if any operand is float64, float32 if any is a float, else int64 (bools
    only: bool)."""
    kinds = set()
    for v in values:
        if isinstance(v, np.ndarray):
            if v.dtype == np.float64:
                return np.dtype(np.float64)
            kinds.add("b" if v.dtype == np.bool_ else ("i" if v.dtype.kind in "iu" else "f"))
        elif isinstance(v, float):
            kinds.add("f")
        elif isinstance(v, bool):
            kinds.add("b")
        else:
            kinds.add("i")
    if "f" in kinds:
        return np.dtype(np.float32)
    if kinds == {"b"}:
        return np.dtype(np.bool_)
    return np.dtype(np.int64)


def widen(values, dt):
    out = []
    for v in values:
        if isinstance(v, np.ndarray):
            out.append(v.astype(dt, copy=False))
        else:
            out.append(np.asarray(v, dtype=dt) if dt != np.bool_ else np.asarray(bool(v)))
    return out


def domain_view(arr: np.ndarray, dims, domain: tuple[int, ...]) -> np.ndarray:
    """`arr` (buffer dims) as an array of the iteration domain's shape: buffer dim i is
    indexed by domain dim dims[i]; domain dims it does not use are broadcast."""
    if dims is None:
        dims = tuple(range(arr.ndim))
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    moved = arr.transpose(order)
    shape = [1] * len(domain)
    for i in order:
        shape[dims[i]] = arr.shape[i]
    return np.broadcast_to(moved.reshape(shape), domain)


def from_domain(value: np.ndarray, dims, buf_shape) -> np.ndarray:
    """The inverse of domain_view for a destination that uses every domain dim."""
    if dims is None:
        return value.reshape(buf_shape)
    return value.transpose(dims).reshape(buf_shape)


def store_cast(value, dtype: str) -> np.ndarray:
    """Round (floats) or wrap (integers) to the destination dtype."""
    dt = npdt(dtype)
    value = np.asarray(value)
    if dt.kind in "iu" and value.dtype.kind == "f":
        value = np.where(np.isfinite(value), value, 0)
        value = np.trunc(value).astype(np.int64)
    if dt == np.bool_:
        return value.astype(bool)
    with np.errstate(over="ignore", invalid="ignore"):
        return value.astype(dt)


def reduce(kind: str, src: np.ndarray, dim: int) -> np.ndarray:
    x = src.astype(np.float64 if src.dtype == np.float64 else
                   (np.float32 if src.dtype.kind not in "iub" else np.int64))
    if kind in ("ABSSUM", "ABSMAX"):
        x = np.abs(x)
    if kind in ("SUM", "ABSSUM"):
        return x.sum(axis=dim)
    if kind in ("MAX", "ABSMAX"):                   # NaN ignored (maxnum), as by VEC.MAX
        return np.fmax.reduce(x, axis=dim)
    return np.fmin.reduce(x, axis=dim)


def combine(kind: str, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    old = old.astype(new.dtype)
    if kind in ("SUM", "ABSSUM"):
        return old + new
    if kind in ("MAX", "ABSMAX"):
        return np.fmax(old, new)
    return np.fmin(old, new)


# ----------------------------------------------------------------------------- MMA

def mma(c: np.ndarray, a: np.ndarray, b: np.ndarray, ta: bool, tb: bool) -> np.ndarray:
    """c + op(a) @ op(b): float inputs multiply in float32 (float64 for float64 inputs),
    integer inputs exactly in int64; the result is rounded to c's dtype by the caller."""
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        dt = np.int64
    elif a.dtype == np.float64 or b.dtype == np.float64:
        dt = np.float64
    else:
        dt = np.float32
    aa = a.astype(dt)
    bb = b.astype(dt)
    if ta:
        aa = aa.T
    if tb:
        bb = bb.T
    acc = c.astype(np.float64 if dt == np.float64 else (np.int64 if dt == np.int64 else
                                                         np.float32))
    return acc + aa @ bb


# ----------------------------------------------------------------------------- DMA boxes

def clip_box(starts, box, shape):
    """(src slices in the global tensor, dst slices in the box) of the in-bounds part,
    or None when the box lies wholly outside."""
    gs, bs = [], []
    for s, e, n in zip(starts, box, shape):
        lo, hi = max(s, 0), min(s + e, n)
        if hi <= lo:
            return None
        gs.append(slice(lo, hi))
        bs.append(slice(lo - s, hi - s))
    return tuple(gs), tuple(bs)


def inbounds_elems(starts, box, shape) -> int:
    n = 1
    for s, e, d in zip(starts, box, shape):
        if 0 <= s and 0 < e and s + e <= d:     # inside along this dim (the usual case)
            n *= e
            continue
        lo, hi = max(s, 0), min(s + e, d)
        if hi <= lo:
            return 0
        n *= hi - lo
    return n


def stopped_box(starts, box, stops) -> tuple:
    """A DMA's box cut at its `stop=` bounds (the extent it moves along each dim)."""
    if stops is None:
        return tuple(box)
    return tuple(e if s is None else max(0, min(e, s - st))
                 for st, e, s in zip(starts, box, stops))


def clip_shape(shape, stops) -> tuple:
    """The tensor's shape with a DMA's `stop=` bounds applied (its masked tails)."""
    if stops is None:
        return tuple(shape)
    return tuple(n if s is None else max(0, min(n, s)) for n, s in zip(shape, stops))


def dma_load(g: np.ndarray, starts, box, dst_dtype: str, stops=None) -> np.ndarray:
    out = np.zeros(box, dtype=g.dtype)
    clip = clip_box(starts, box, clip_shape(g.shape, stops))
    if clip is not None:
        out[clip[1]] = g[clip[0]]
    return store_cast(out, dst_dtype) if out.dtype != npdt(dst_dtype) else out


def dma_store(g: np.ndarray, starts, box, value: np.ndarray, reduce_op: str | None,
              stops=None) -> None:
    clip = clip_box(starts, box, clip_shape(g.shape, stops))
    if clip is None:
        return
    v = value.reshape(box)[clip[1]]
    if reduce_op is None:
        g[clip[0]] = store_cast(v, str_dtype(g.dtype))
        return
    # an atomic read-modify-write in the destination's dtype: the tile is converted to
    # it first (an int8 -1 is 255 to a uint8 min), then combined; float min / max
    # ignore NaN, as everywhere (maxnum)
    dst = str_dtype(g.dtype)
    is_int = g.dtype.kind in "iu"
    wide = np.int64 if is_int else np.float64
    old = g[clip[0]].astype(wide)
    new = store_cast(v, dst).astype(wide)
    if reduce_op == "add":
        res = old + new
    elif is_int:
        res = np.maximum(old, new) if reduce_op == "max" else np.minimum(old, new)
    else:
        res = np.fmax(old, new) if reduce_op == "max" else np.fmin(old, new)
    g[clip[0]] = store_cast(res, dst)


def str_dtype(dt) -> str:
    from ...dtypes import from_numpy
    return from_numpy(dt)
