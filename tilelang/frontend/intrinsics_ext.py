"""More of TileLang's expression functions: `T.sin/cos/tan/pow/round/trunc`, `T.Cast(dtype,
x)`, `T.clamp`, `T.floordiv/floormod/truncdiv/truncmod`, the bit functions
(`T.bitwise_and`, `T.shift_left`, ...), `T.dtype(...)`, `x.astype(dtype)`; and the
diagnostics for what is not an expression here (thread-level code, `T.const` / `T.empty`
outside a `@tilelang.jit` body).

`HANDLERS` extends intrinsics.py's table: name -> handler(builder, name, tree, span).
"""
from __future__ import annotations

from dataclasses import replace

from .. import dtypes
from ..diagnostics import codes_types as CT
from ..diagnostics.codes_compat import EAGER_FORM, THREAD_LEVEL
from ..ir.nodes import Binary, BitCast, Call, Cast, Const, Select
from ..language.names import THREAD_LEVEL as THREAD_NAMES
from .callargs import Sig, REQUIRED, bind
from .errors import fail
from .exprs_ext import BIT_OPS
from .values import DType, Lit, NoneVal, as_expr, unify, kind_of, lit_to, materialize
from .mathfns import HANDLERS as _MATH

_BIT_FUNCS = {v: k for k, v in BIT_OPS.items()}


def _float_unary(b, name, tree, span):
    from .intrinsics import _float_math
    return _float_math(b, name, tree, span)


def _pow(b, name, tree, span):
    args = bind(Sig("T.pow", (("x", REQUIRED), ("y", REQUIRED))), tree, b.spans)
    x, y = unify(b.eval(args["x"]), b.eval(args["y"]), span)
    if kind_of(x.dtype) != "float":
        raise fail(CT.BAD_OPERAND, f"T.pow needs float arguments, found {x.dtype}", span,
                   x.dtype, help='convert first: T.pow(T.cast(x, "float32"), y)')
    return Call("pow", (x, y), x.dtype, span=span)


def _cast_dtype_first(b, name, tree, span):
    """TileLang's `T.Cast(dtype, x)` (arguments the other way round from T.cast)."""
    from .intrinsics import dtype_of
    args = bind(Sig("T.Cast", (("dtype", REQUIRED), ("value", REQUIRED))), tree, b.spans)
    return Cast(as_expr(b.eval(args["value"])), dtype_of(b.eval(args["dtype"])), span=span)


def _clamp(b, name, tree, span):
    """`T.clamp(x, min_val, max_val)` (TileLang's keywords); a bound given as None is
    no bound."""
    args = bind(Sig("T.clamp", (("x", REQUIRED), ("min_val", None), ("max_val", None))),
                tree, b.spans)
    x, lo, hi = (None if args[k] is None else b.eval(args[k])
                 for k in ("x", "min_val", "max_val"))
    if lo is not None and not isinstance(lo, NoneVal):
        x = _minmax("max", x, lo, span)
    if hi is not None and not isinstance(hi, NoneVal):
        x = _minmax("min", x, hi, span)
    return as_expr(x)


def _minmax(op, a, b, span):
    x, y = unify(a, b, span)
    return Binary(op, x, y, x.dtype, span=span)


def _trunc_op(b, name, tree, span):
    """Division rounding toward zero (C's `/` and `%`), from the floor operations."""
    args = bind(Sig(f"T.{name}", (("a", REQUIRED), ("b", REQUIRED))), tree, b.spans)
    x, y = unify(b.eval(args["a"]), b.eval(args["b"]), span)
    if not dtypes.is_int(x.dtype):
        raise fail(CT.NOT_INTEGER, f"T.{name} needs integers, found {x.dtype}", span, x.dtype)
    q = Binary("//", x, y, x.dtype, span=span)
    r = Binary("%", x, y, x.dtype, span=span)
    zero, one = Const(0, x.dtype, span=span), Const(1, x.dtype, span=span)
    signs_differ = Binary("!=", Binary("<", x, zero, "bool", span=span),
                          Binary("<", y, zero, "bool", span=span), "bool", span=span)
    inexact = Binary("and", Binary("!=", r, zero, "bool", span=span), signs_differ, "bool",
                     span=span)
    if name == "truncdiv":
        return Binary("+", q, Select(inexact, one, zero, x.dtype, span=span), x.dtype,
                      span=span)
    return Binary("-", r, Select(inexact, y, zero, x.dtype, span=span), x.dtype, span=span)


def _bit_func(b, name, tree, span):
    if name == "bitwise_not":
        args = bind(Sig("T.bitwise_not", (("x", REQUIRED),)), tree, b.spans)
        e = as_expr(b.eval(args["x"]))
        if not dtypes.is_int(e.dtype):
            raise fail(CT.BAD_OPERAND, f"T.bitwise_not needs an integer, found {e.dtype}",
                       span, e.dtype)
        return Call("bitwise_not", (e,), e.dtype, span=span)
    args = bind(Sig(f"T.{name}", (("a", REQUIRED), ("b", REQUIRED))), tree, b.spans)
    return b.binop(_BIT_FUNCS[name], b.eval(args["a"]), b.eval(args["b"]), span, span)


def _dtype(b, name, tree, span):
    from .intrinsics import dtype_of
    args = bind(Sig("T.dtype", (("name", REQUIRED),)), tree, b.spans)
    return DType(dtype_of(b.eval(args["name"])), span)


def _thread_level(b, name, tree, span):
    raise fail(THREAD_LEVEL, f"`T.{name}` is thread-level code, which the tile language "
               "does not have", span, "thread-level",
               notes=["kernels here program whole blocks: the CPU runs a block on one core "
                      "with vector instructions, tcsim on one simulated core; neither has "
                      "CUDA threads to name"],
               help="write it with tiles: a per-thread loop as `for i in T.Parallel(n)`, a "
                    "warp or block reduction as T.reduce_sum / T.reduce_max into a fragment")


def _eager_only(b, name, tree, span):
    raise fail(EAGER_FORM, f"`T.{name}` declares {'sizes' if name == 'const' else 'an output'}"
               " of a current-style @tilelang.jit function", span, "not allowed here",
               help=f"write `... = T.{name}(...)` among the declarations at the top of a "
                    "@tilelang.jit function whose body is the kernel")


def _tir_const(b, name, tree, span):
    """`tir.const(value, dtype)`: a constant of `dtype` (int32 / float32 by default)."""
    from .intrinsics import dtype_of
    args = bind(Sig("tir.const", (("value", REQUIRED), ("dtype", None))), tree, b.spans)
    v = b.eval(args["value"])
    if args["dtype"] is None:
        return materialize(v) if isinstance(v, Lit) else as_expr(v)
    dtype = dtype_of(b.eval(args["dtype"]))
    if isinstance(v, Lit):
        return lit_to(Lit(float(v.value) if dtypes.is_float(dtype) else v.value, v.span),
                      dtype)
    return Cast(as_expr(v), dtype, span=span)


def _reinterpret(b, name, tree, span):
    """`T.reinterpret(dtype, x)` / `tir.reinterpret`: x's bits read as `dtype`."""
    from .intrinsics import dtype_of
    args = bind(Sig(f"T.{name}", (("dtype", REQUIRED), ("value", REQUIRED))), tree, b.spans)
    dtype = dtype_of(b.eval(args["dtype"]))
    v = b.eval(args["value"])
    if isinstance(v, Lit):                  # a number: the dtype of its kind and that width
        v = _same_width_const(v, dtype, span)
    e = as_expr(v)
    if "bool" in (e.dtype, dtype) or dtypes.bits(e.dtype) != dtypes.bits(dtype):
        raise fail(CT.BAD_OPERAND, f"T.reinterpret of {e.dtype} as {dtype}: the two dtypes "
                   "must have one width", span, f"{e.dtype} -> {dtype}",
                   help=f"convert to a {dtypes.bits(dtype)}-bit dtype first, e.g. "
                        f"x.astype(T.uint{dtypes.bits(dtype)})" if dtype != "bool" else None)
    return BitCast(e, dtype, span=span)


def _same_width_const(v, dtype, span):
    bits = dtypes.bits(dtype)
    kind = "float" if v.kind == "float" else ("uint" if v.value >= 0 else "int")
    name = f"{kind}{bits}"
    if dtypes.canonical(name) != name or name == "bool":
        raise fail(CT.BAD_OPERAND, f"T.reinterpret of the number {v.value} as {dtype}: no "
                   f"{bits}-bit dtype of its kind", span, "no such dtype",
                   help=f"give the constant a dtype: tir.const(value, T.uint{bits})")
    return lit_to(v, name)


def _block_binding(b, name, tree, span):
    """`T.get_block_binding(dim)`: the index of this block along grid dim `dim` (what the
    kernel binds as `bx, by, bz`), also from a macro that does not see those names."""
    from .values import const_int
    args = bind(Sig(f"T.{name}", (("dim", 0),)), tree, b.spans)
    dim = const_int(b.eval(args["dim"])) if args["dim"] != 0 else 0
    block_vars = getattr(b, "block_vars", ())
    if not getattr(b, "in_kernel", False) or dim is None or not 0 <= dim < len(block_vars):
        raise fail(CT.BAD_OPERAND, f"T.{name}({'?' if dim is None else dim}): the grid of "
                   f"this kernel has {len(block_vars)} dimension(s)", span, "no such block "
                   "index", help="call it inside `with T.Kernel(...)` with a constant dim")
    return replace(block_vars[dim], span=span)


# the parameter names of each spelling (T.Select is TVM's)
_SELECT_PARAMS = {"if_then_else": ("cond", "then", "otherwise"),
                  "Select": ("cond", "true_value", "false_value")}


def _select(b, name, tree, span):
    """`T.if_then_else(cond, then, otherwise)`, `T.Select(cond, true_value, false_value)`."""
    params = _SELECT_PARAMS[name]
    args = bind(Sig(f"T.{name}", tuple((p, REQUIRED) for p in params)), tree, b.spans)
    cond = b.eval_cond(args[params[0]])
    x, y = unify(b.eval(args[params[1]]), b.eval(args[params[2]]), span)
    return Select(cond, x, y, x.dtype, span=span)


def method_call(b, method, tree, span):
    """`x.astype(dtype)`."""
    from .intrinsics import dtype_of
    args = bind(Sig(".astype", (("dtype", REQUIRED),)), tree, b.spans)
    obj = method.obj
    dtype = dtype_of(b.eval(args["dtype"]))
    if isinstance(obj, Lit):
        from .values import lit_to
        return lit_to(Lit(float(obj.value) if dtypes.is_float(dtype) else obj.value,
                          obj.span), dtype)
    return Cast(as_expr(obj), dtype, span=span)


HANDLERS = {n: _float_unary for n in ("sin", "cos", "tan", "round", "trunc")}
HANDLERS.update(pow=_pow, Cast=_cast_dtype_first, clamp=_clamp, truncdiv=_trunc_op, truncmod=_trunc_op, dtype=_dtype,
                const=_eager_only, empty=_eager_only, reinterpret=_reinterpret,
                Select=_select, if_then_else=_select, get_block_binding=_block_binding)
HANDLERS["tir.const"] = _tir_const
HANDLERS.update({n: (lambda b, name, tree, span: b.bit_atomic(name, span))
                 for n in ("atomic_or", "atomic_and", "atomic_xor")})
HANDLERS.update(_MATH)
HANDLERS["atomic_load"] = lambda b, name, tree, span: b.atomic_load(tree, span)
HANDLERS.update({f"atomic_{op}": (lambda b, name, tree, span: b.atomic_fetch_value(
    name[len("atomic_"):], tree, span)) for op in ("add", "max", "min")})
HANDLERS.update({n: _bit_func for n in _BIT_FUNCS})
HANDLERS.update({n: _bit_func for n in ("bitwise_not",)})
HANDLERS.update({n: _thread_level for n in THREAD_NAMES})

__all__ = ["HANDLERS", "method_call"]
