"""The dtypes of the tile language: one table shared by every layer.

A leaf module (imports only numpy / ml_dtypes, lazily) so that the IR, the compiler
and the compiler-free runtime all agree on names, sizes and numpy equivalents.
"""
from __future__ import annotations

import math

# name -> (bits, kind) ; kind: "float" | "int" | "uint" | "bool"
_TABLE = {
    "float64": (64, "float"),
    "float32": (32, "float"),
    "float16": (16, "float"),
    "bfloat16": (16, "float"),
    "float8_e4m3fn": (8, "float"),     # DeepGEMM / FlashMLA / DeepEP's fp8: finite, max 448
    "float8_e4m3": (8, "float"),       # IEEE-style e4m3: with infinities, max 240
    "float8_e5m2": (8, "float"),
    "int64": (64, "int"),
    "int32": (32, "int"),
    "int16": (16, "int"),
    "int8": (8, "int"),
    "uint32": (32, "uint"),
    "uint16": (16, "uint"),
    "uint8": (8, "uint"),
    "bool": (8, "bool"),
}

DTYPES = tuple(_TABLE)

# Spellings users write (TileLang, numpy, torch habits) -> canonical name.
ALIASES = {
    "float": "float32", "half": "float16", "fp16": "float16", "fp32": "float32",
    "fp64": "float64", "double": "float64", "bf16": "bfloat16",
    "e4m3fn": "float8_e4m3fn", "fp8_e4m3fn": "float8_e4m3fn", "e4m3": "float8_e4m3",
    "fp8_e4m3": "float8_e4m3", "e5m2": "float8_e5m2", "fp8_e5m2": "float8_e5m2",
    "int": "int32", "uint": "uint32",
}

# The float formats numpy has no type for (they come from ml_dtypes, same names).
_ML_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e4m3", "float8_e5m2")


def canonical(name: str) -> str | None:
    """The canonical dtype name for `name`, or None if it is not a dtype."""
    if name in _TABLE:
        return name
    return ALIASES.get(name)


def bits(dtype: str) -> int:
    return _TABLE[dtype][0]


def nbytes(dtype: str) -> int:
    return max(1, _TABLE[dtype][0] // 8)


def is_float(dtype: str) -> bool:
    return _TABLE[dtype][1] == "float"


def is_int(dtype: str) -> bool:
    """Integer types, signed or unsigned (not bool)."""
    return _TABLE[dtype][1] in ("int", "uint")


def is_signed(dtype: str) -> bool:
    return _TABLE[dtype][1] in ("int", "float")


def is_bool(dtype: str) -> bool:
    return dtype == "bool"


def is_low_precision_float(dtype: str) -> bool:
    """Floats that the CPU computes in float32 (loaded and stored by conversion)."""
    return dtype in ("float16",) + _ML_DTYPES


def int_range(dtype: str) -> tuple[int, int]:
    """The smallest and largest value of an integer (or bool) dtype."""
    if dtype == "bool":
        return 0, 1
    n = bits(dtype)
    if is_signed(dtype):
        return -(1 << (n - 1)), (1 << (n - 1)) - 1
    return 0, (1 << n) - 1


# A reduction's combine -> what it reduces (sums / maxima of magnitudes start at zero too).
_REDUCTION_KINDS = {"sum": "sum", "+": "sum", "add": "sum", "abssum": "sum", "absmax": "sum",
                    "max": "max", "min": "min"}


def reduction_identity(op: str, dtype: str) -> int | float:
    """The value a reduction `op` (sum / + / add, abssum, absmax, max, min) over `dtype`
    starts from, which every combine leaves unchanged: zero for the sums (0.0 for a
    float), the dtype's lowest value for max (-inf for a float) and its highest for min
    (bool: False for sum and max, True for min). One table for the frontend, the passes,
    the reference interpreter and the code generators."""
    kind = _REDUCTION_KINDS[op]
    if kind == "sum":
        return 0.0 if is_float(dtype) else 0
    if is_float(dtype):
        return -math.inf if kind == "max" else math.inf
    lo, hi = int_range(dtype)
    return lo if kind == "max" else hi


def numpy_dtype(dtype: str):
    """The numpy dtype object for `dtype` (bf16 and fp8 through ml_dtypes)."""
    import numpy as np
    if dtype in _ML_DTYPES:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, dtype))
    return np.dtype(dtype)


def from_numpy(np_dtype) -> str | None:
    """The tile-language dtype name of a numpy dtype, or None if it has none."""
    name = str(np_dtype)
    return name if name in _TABLE else None


# C spelling used by generated headers: storage types for the low-precision floats.
C_TYPES = {
    "float64": "double", "float32": "float", "float16": "uint16_t", "bfloat16": "uint16_t",
    "float8_e4m3fn": "uint8_t", "float8_e4m3": "uint8_t", "float8_e5m2": "uint8_t", "int64": "int64_t",
    "int32": "int32_t", "int16": "int16_t", "int8": "int8_t", "uint32": "uint32_t",
    "uint16": "uint16_t", "uint8": "uint8_t", "bool": "bool",
}
