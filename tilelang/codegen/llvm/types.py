"""Dtype -> LLVM type, in registers ("compute") and in memory ("storage").

The low-precision floats (float16, bfloat16, float8_*) are stored in their own format
and computed in float32; bool is i1 in registers and one byte in memory.
"""
from __future__ import annotations

from llvmlite import ir

from ... import dtypes

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
PTR = ir.PointerType()   # opaque pointer (LLVM 22)
VOID = ir.VoidType()

_COMPUTE = {
    "float64": F64, "float32": F32, "float16": F32, "bfloat16": F32,
    "float8_e4m3fn": F32, "float8_e4m3": F32, "float8_e5m2": F32,
    "int64": I64, "int32": I32, "int16": I16, "int8": I8, "uint32": I32, "uint16": I16,
    "uint8": I8, "bool": I1,
}

_STORAGE = {
    "float64": F64, "float32": F32, "float16": F16, "bfloat16": I16,
    "float8_e4m3fn": I8, "float8_e4m3": I8, "float8_e5m2": I8,
    "int64": I64, "int32": I32, "int16": I16, "int8": I8, "uint32": I32, "uint16": I16,
    "uint8": I8, "bool": I8,
}


def compute_type(dtype: str) -> ir.Type:
    """The register type a value of `dtype` is computed in."""
    return _COMPUTE[dtype]


def storage_type(dtype: str) -> ir.Type:
    """The in-memory element type of a buffer of `dtype`."""
    return _STORAGE[dtype]


def is_unsigned(dtype: str) -> bool:
    """Integers compared, divided and widened without sign (the uints and bool)."""
    return dtype == "bool" or (dtypes.is_int(dtype) and not dtypes.is_signed(dtype))


def round_const(value, dtype: str) -> float:
    """A Python float rounded to `dtype`'s precision (the value a typed constant has)."""
    import numpy as np
    if dtype == "float64":
        return float(value)
    with np.errstate(over="ignore", invalid="ignore"):   # fp8 overflow is a NaN by design
        return float(np.asarray(value, dtype=np.float64).astype(dtypes.numpy_dtype(dtype))
                     .astype(np.float64))


def constant(value, dtype: str) -> ir.Constant:
    """An LLVM constant of `dtype`'s compute type holding `value`."""
    ty = compute_type(dtype)
    if dtypes.is_float(dtype):
        return ir.Constant(ty, round_const(value, dtype))
    if dtype == "bool":
        return ir.Constant(I1, 1 if value else 0)
    width = ty.width
    v = int(value) & ((1 << width) - 1)   # two's complement wrap, as numpy does
    return ir.Constant(ty, v)
