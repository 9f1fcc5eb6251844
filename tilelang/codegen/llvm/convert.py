"""Conversions between dtypes: memory <-> registers, and `Cast` between every pair.

Low-precision floats are computed in float32. Loading widens exactly; storing rounds to
nearest-even exactly like ml_dtypes' `astype` (float8_e4m3fn has no infinity: overflow and
infinities become NaN; float8_e4m3 and float8_e5m2 overflow to infinity). float16 uses LLVM `half`
(F16C on x86); bfloat16 and the float8 formats are done with integer bit manipulation,
branch-free so that loops containing them still vectorise.
"""
from __future__ import annotations

from llvmlite import ir

from ... import dtypes
from .types import I8, I16, I32, F16, F32, F64, compute_type, is_unsigned


def intrinsic(module: ir.Module, name: str, ret: ir.Type, args) -> ir.Function:
    """Declare (once) an intrinsic or libm function by its full name."""
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, list(args)), name=name)
    return fn


def _c32(v: int) -> ir.Constant:
    return ir.Constant(I32, v & 0xFFFFFFFF)


# ----------------------------------------------------------------------------- loads

def from_storage(b: ir.IRBuilder, dtype: str, raw: ir.Value) -> ir.Value:
    """A value loaded from memory (storage type) -> its compute type."""
    if dtype == "bool":
        return b.icmp_unsigned("!=", raw, ir.Constant(I8, 0))
    if dtype == "float16":
        return b.fpext(raw, F32)
    if dtype == "bfloat16":
        return b.bitcast(b.shl(b.zext(raw, I32), _c32(16)), F32)
    if dtype == "float8_e5m2":
        # e5m2 is the upper byte of an IEEE half: widening by 8 bits is exact.
        return b.fpext(b.bitcast(b.shl(b.zext(raw, I16), ir.Constant(I16, 8)), F16), F32)
    if dtype in ("float8_e4m3fn", "float8_e4m3"):
        return _e4m3_to_f32(b, raw, ieee=dtype == "float8_e4m3")
    return raw


def _e4m3_to_f32(b: ir.IRBuilder, raw: ir.Value, ieee: bool) -> ir.Value:
    """e4m3fn: only S.1111.111 is NaN; IEEE-style e4m3: exponent 15 is infinity (mantissa
    0) or NaN."""
    x = b.zext(raw, I32)
    sign = b.shl(b.and_(x, _c32(0x80)), _c32(24))
    exp = b.and_(b.lshr(x, _c32(3)), _c32(0xF))
    man = b.and_(x, _c32(7))
    # normal: rebias the exponent (7 -> 127) and move the 3 mantissa bits to the top
    normal = b.or_(b.shl(b.add(exp, _c32(120)), _c32(23)), b.shl(man, _c32(20)))
    # subnormal: man * 2^-9, exact in float32
    sub = b.bitcast(b.fmul(b.uitofp(man, F32), ir.Constant(F32, 2.0 ** -9)), I32)
    mag = b.select(b.icmp_unsigned("==", exp, _c32(0)), sub, normal)
    if ieee:
        top = b.icmp_unsigned("==", exp, _c32(0xF))
        special = b.select(b.icmp_unsigned("==", man, _c32(0)), _c32(0x7F800000),
                           _c32(0x7FC00000))
        mag = b.select(top, special, mag)
    else:
        is_nan = b.icmp_unsigned("==", b.and_(x, _c32(0x7F)), _c32(0x7F))
        mag = b.select(is_nan, _c32(0x7FC00000), mag)
    return b.bitcast(b.or_(sign, mag), F32)


# ----------------------------------------------------------------------------- stores

def to_storage(b: ir.IRBuilder, dtype: str, value: ir.Value) -> ir.Value:
    """A compute-type value -> the storage type of `dtype` (rounding to nearest even)."""
    if dtype == "bool":
        return b.zext(value, I8)
    if dtype == "float16":
        return b.fptrunc(value, F16)
    if dtype in ("bfloat16", "float8_e4m3fn", "float8_e4m3", "float8_e5m2"):
        if value.type == F64:
            value = b.fptrunc(value, F32)
        if dtype == "bfloat16":
            return _f32_to_bf16(b, value)
        return _f32_to_fp8(b, value, dtype)
    return value


def _f32_to_bf16(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    u = b.bitcast(value, I32)
    lsb = b.and_(b.lshr(u, _c32(16)), _c32(1))
    rounded = b.lshr(b.add(u, b.add(_c32(0x7FFF), lsb)), _c32(16))
    quiet_nan = b.or_(b.lshr(u, _c32(16)), _c32(0x40))
    is_nan = b.fcmp_unordered("uno", value, value)
    return b.trunc(b.select(is_nan, quiet_nan, rounded), I16)


# format -> (exponent bias, mantissa bits, largest finite encoding, overflow encoding,
#            NaN encoding)
_FP8 = {
    "float8_e4m3fn": (7, 3, 0x7E, 0x7F, 0x7F),
    "float8_e4m3": (7, 3, 0x77, 0x78, 0x7C),
    "float8_e5m2": (15, 2, 0x7B, 0x7C, 0x7E),
}


def _f32_to_fp8(b: ir.IRBuilder, value: ir.Value, dtype: str) -> ir.Value:
    bias, mbits, max_finite, overflow, nan = _FP8[dtype]
    u = b.bitcast(value, I32)
    mag = b.and_(u, _c32(0x7FFFFFFF))
    sign = b.and_(b.lshr(u, _c32(24)), _c32(0x80))
    # normal range: rebias, then round the mantissa from 23 to `mbits` bits (nearest
    # even); a carry out of the mantissa correctly bumps the exponent
    shift = 23 - mbits
    t = b.sub(mag, _c32((127 - bias) << 23))
    odd = b.and_(b.lshr(t, _c32(shift)), _c32(1))
    normal = b.lshr(b.add(t, b.add(_c32((1 << (shift - 1)) - 1), odd)), _c32(shift))
    normal = b.select(b.icmp_unsigned(">", normal, _c32(max_finite)), _c32(overflow), normal)
    # subnormal range: adding 2^(24-bias-mbits) makes the FPU round |x| to a multiple of
    # the smallest subnormal; its mantissa bits are then the encoding (2^mbits = the
    # smallest normal, also correct)
    magic = ir.Constant(F32, 2.0 ** (24 - bias - mbits))
    absval = b.bitcast(mag, F32)
    sub = b.sub(b.bitcast(b.fadd(absval, magic), I32), magic.bitcast(I32))
    is_sub = b.icmp_unsigned("<", mag, _c32((128 - bias) << 23))
    enc = b.select(is_sub, sub, normal)
    enc = b.select(b.icmp_unsigned(">", mag, _c32(0x7F800000)), _c32(nan), enc)
    return b.trunc(b.or_(enc, sign), I8)


# ----------------------------------------------------------------------------- casts

def cast(b: ir.IRBuilder, value: ir.Value, src: str, dst: str) -> ir.Value:
    """`T.cast(value, dst)` for a compute value of dtype `src`."""
    if src == dst:
        return value
    target = compute_type(dst)
    if dst == "bool":
        if dtypes.is_float(src):
            return b.fcmp_unordered("!=", value, ir.Constant(value.type, 0.0))
        return b.icmp_unsigned("!=", value, ir.Constant(value.type, 0))
    if dtypes.is_float(dst):
        return _to_float(b, value, src, dst, target)
    return _to_int(b, value, src, dst, target)


def _to_float(b, value, src, dst, target):
    if dtypes.is_float(src):
        if dtypes.is_low_precision_float(dst):
            # round straight from the source (a double is not first rounded to float32
            # for float16, which LLVM converts directly)
            return from_storage(b, dst, to_storage(b, dst, value))
        if value.type == target:
            return value
        if value.type == F64:
            return b.fptrunc(value, target)
        return b.fpext(value, target)
    # one rounding where possible: straight to float32/float64; the low-precision
    # formats go through float64, which holds every int32 exactly
    wide = target if target in (F32, F64) and not dtypes.is_low_precision_float(dst) else F64
    conv = b.uitofp(value, wide) if is_unsigned(src) else b.sitofp(value, wide)
    if wide == target and not dtypes.is_low_precision_float(dst):
        return conv
    return _to_float(b, conv, "float64", dst, target)


def _to_int(b, value, src, dst, target):
    if dtypes.is_float(src):
        # saturating conversion: truncates toward zero, and out-of-range values or NaN
        # give a defined result instead of LLVM poison
        name = "llvm.fptoui.sat" if is_unsigned(dst) else "llvm.fptosi.sat"
        full = f"{name}.i{target.width}.{'f64' if value.type == F64 else 'f32'}"
        fn = intrinsic(b.module, full, target, [value.type])
        return b.call(fn, [value])
    sw, dw = value.type.width, target.width
    if sw == dw:
        return value
    if sw > dw:
        return b.trunc(value, target)
    if is_unsigned(src):
        return b.zext(value, target)
    return b.sext(value, target)
