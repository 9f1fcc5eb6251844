"""Scalar arguments: Python / numpy numbers checked against a scalar parameter's dtype
and packed into an ABI slot (integers and bools as their value, floats as the bits of a
float64)."""
from __future__ import annotations

import numbers
import struct

import numpy as np

from .errors import LaunchTypeError, LaunchValueError, codes
from .manifest import ParamSpec
from .. import dtypes

_F64 = struct.Struct("<d")
_I64 = struct.Struct("<q")
_INT_RANGE = {"int64": (-2**63, 2**63 - 1), "int32": (-2**31, 2**31 - 1),
              "int16": (-2**15, 2**15 - 1), "int8": (-128, 127), "uint32": (0, 2**32 - 1),
              "uint16": (0, 2**16 - 1), "uint8": (0, 255)}


def scalar_step(p: ParamSpec, slot: int):
    if dtypes.is_float(p.dtype):
        convert = _float_converter(p)
    elif dtypes.is_bool(p.dtype):
        convert = _bool_converter(p)
    else:
        convert = _int_converter(p)

    def step(a, slots, syms, arrays, starts):
        slots[slot] = convert(a)

    return step


def _scalar_type_error(p: ParamSpec, want: str, v):
    return LaunchTypeError(f"argument {p.name!r} expects {want} ({p.dtype}), got "
                           f"{_shown(v)}", codes.ARG_SCALAR, p.name)


def _shown(v) -> str:
    """The wrong value, short: an array by its shape and dtype, not its elements."""
    shape, dtype = getattr(v, "shape", None), getattr(v, "dtype", None)
    if shape is not None and dtype is not None:
        return f"{type(v).__name__} of shape {tuple(shape)} ({dtype})"
    text = repr(v)
    return f"{type(v).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _unwrap_0d(v):
    # A 0-d array (e.g. from a reduction) stands for its element.
    return v.item() if isinstance(v, np.ndarray) and v.ndim == 0 else v


def _int_converter(p: ParamSpec):
    lo, hi = _INT_RANGE[p.dtype]

    def convert(v):
        if type(v) is not int:
            v = _unwrap_0d(v)
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
                raise _scalar_type_error(p, "an integer", v)
            v = int(v)
        if v < lo or v > hi:
            raise LaunchValueError(f"argument {p.name!r} = {v} is out of range for {p.dtype} "
                                   f"[{lo}, {hi}]", codes.ARG_SCALAR, p.name)
        return v

    return convert


def _float_converter(p: ParamSpec):
    pack, unpack = _F64.pack, _I64.unpack

    def convert(v):
        if type(v) is not float:
            v = _unwrap_0d(v)
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
                raise _scalar_type_error(p, "a number", v)
            v = float(v)
        return unpack(pack(v))[0]     # the ABI passes float scalars as float64 bits

    return convert


def _bool_converter(p: ParamSpec):
    def convert(v):
        v = _unwrap_0d(v)
        if not isinstance(v, (bool, np.bool_)):
            raise _scalar_type_error(p, "a bool", v)
        return 1 if v else 0

    return convert
