"""Intrinsic calls (T.exp, T.sqrt, ...) -> LLVM intrinsics or libm functions.

Floats are computed in float32 or float64 (the low-precision formats in float32). LLVM
intrinsics are used where LLVM has one (it lowers them to instructions or libm calls);
tanh and erf call libm directly (the shared library links -lm).
"""
from __future__ import annotations

from llvmlite import ir

from ... import dtypes
from ...diagnostics import codes_codegen as codes
from ...ir.nodes import Call, BINARY_INTRINSICS
from .context import user_error
from .convert import intrinsic
from .fastexp import exp2_f32, exp_f32, tanh_f32
from .types import F32, F64, is_unsigned

_LLVM_UNARY = {"exp": "llvm.exp", "exp2": "llvm.exp2", "log": "llvm.log",
               "log2": "llvm.log2", "sqrt": "llvm.sqrt", "floor": "llvm.floor",
               "ceil": "llvm.ceil", "abs": "llvm.fabs", "sin": "llvm.sin", "cos": "llvm.cos",
               "round": "llvm.roundeven", "trunc": "llvm.trunc"}
_INLINE_F32 = {"exp": exp_f32, "exp2": exp2_f32, "tanh": tanh_f32}
_LIBM = {"tanh": ("tanhf", "tanh"), "erf": ("erff", "erf"), "tan": ("tanf", "tan")}


def _suffix(ty: ir.Type) -> str:
    return "f64" if ty == F64 else "f32"


def call_float(b: ir.IRBuilder, name: str, args) -> ir.Value:
    """Call the LLVM float intrinsic `name` (e.g. "llvm.maxnum") on same-typed args."""
    ty = args[0].type
    fn = intrinsic(b.module, f"{name}.{_suffix(ty)}", ty, [ty] * len(args))
    return b.call(fn, list(args))


def unary_float(b: ir.IRBuilder, name: str, x: ir.Value) -> ir.Value:
    if x.type == F32 and name in _INLINE_F32:
        return _INLINE_F32[name](b, x)      # vectorisable, unlike a libm call
    return call_float(b, _LLVM_UNARY[name], [x])


def _libm(b: ir.IRBuilder, name: str, x: ir.Value) -> ir.Value:
    single, double = _LIBM[name]
    fname = double if x.type == F64 else single
    return b.call(intrinsic(b.module, fname, x.type, [x.type]), [x])


def _one(x: ir.Value) -> ir.Constant:
    return ir.Constant(x.type, 1.0)


def _float_call(b: ir.IRBuilder, name: str, args) -> ir.Value:
    x = args[0]
    if name in _LLVM_UNARY:
        return unary_float(b, name, x)
    if x.type == F32 and name in _INLINE_F32:
        return _INLINE_F32[name](b, x)
    if name in _LIBM:
        return _libm(b, name, x)
    if name == "rsqrt":
        return b.fdiv(_one(x), unary_float(b, "sqrt", x))
    if name == "sigmoid":
        e = unary_float(b, "exp", b.fneg(x))
        return b.fdiv(_one(x), b.fadd(_one(x), e))
    if name == "ceildiv":
        return unary_float(b, "ceil", b.fdiv(x, args[1]))
    if name == "pow":
        return call_float(b, "llvm.pow", args)
    return None


def _int_call(b: ir.IRBuilder, name: str, dtype: str, args) -> ir.Value:
    x = args[0]
    if name in _BITS:
        return _BITS[name](b, dtype, *args)
    if name in ("floor", "ceil"):
        return x
    if name == "abs":
        if is_unsigned(dtype):
            return x
        neg = b.sub(ir.Constant(x.type, 0), x)
        return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), neg, x)
    return None


def _shift(b: ir.IRBuilder, dtype: str, x: ir.Value, n: ir.Value, left: bool) -> ir.Value:
    """x << n / x >> n (arithmetic for signed dtypes); a count outside [0, bits) gives
    what shifting one bit at a time would: 0, or -1 for a negative x shifted right."""
    width = x.type.width
    in_range = b.icmp_unsigned("<", n, ir.Constant(n.type, width))
    safe = b.select(in_range, n, ir.Constant(n.type, 0))
    if left:
        return b.select(in_range, b.shl(x, safe), ir.Constant(x.type, 0))
    if is_unsigned(dtype):
        return b.select(in_range, b.lshr(x, safe), ir.Constant(x.type, 0))
    sign = b.ashr(x, ir.Constant(x.type, width - 1))
    return b.select(in_range, b.ashr(x, safe), sign)


_BITS = {
    "bitwise_and": lambda b, dt, x, y: b.and_(x, y),
    "bitwise_or": lambda b, dt, x, y: b.or_(x, y),
    "bitwise_xor": lambda b, dt, x, y: b.xor(x, y),
    "bitwise_not": lambda b, dt, x: b.not_(x),
    "shift_left": lambda b, dt, x, n: _shift(b, dt, x, n, True),
    "shift_right": lambda b, dt, x, n: _shift(b, dt, x, n, False),
}


def emit(b: ir.IRBuilder, call: Call, args) -> ir.Value:
    """The value of intrinsic `call` applied to already-converted `args`."""
    if call.name == "cycle_counter":       # the profiler's timers build
        i64 = ir.IntType(64)
        return b.call(intrinsic(b.module, "llvm.readcyclecounter", i64, []), [])
    expected = 2 if call.name in BINARY_INTRINSICS else 1
    if len(args) != expected:
        raise user_error(codes.UNSUPPORTED_DTYPE_OP,
                         f"T.{call.name} takes {expected} argument(s), got {len(args)}",
                         call.span)
    if dtypes.is_float(call.dtype):
        result = _float_call(b, call.name, args)
    else:
        result = _int_call(b, call.name, call.dtype, args)
    if result is None:
        raise user_error(codes.UNSUPPORTED_DTYPE_OP,
                         f"T.{call.name} is not defined for {call.dtype} values", call.span,
                         help=f"cast the argument to a float type: "
                              f"T.{call.name}(T.cast(x, \"float32\"))")
    return result
