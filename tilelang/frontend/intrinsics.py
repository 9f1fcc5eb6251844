"""Calls in expressions: `T.exp(x)`, `T.max(a, b)`, `T.cast(x, dtype)`, typed constants
`T.float16(2.0)`, `T.if_then_else`, `T.infinity`, `T.ceildiv` (and Python's max/min/abs)."""
from __future__ import annotations

from .. import dtypes
from ..diagnostics import codes_names as CN, codes_syntax as CS, codes_types as CT
from ..diagnostics import codes_tileops as C3
from ..ir.nodes import Const, Binary, Call, Cast
from ..language.names import LOOP_ITERS, TILE_OPS, ALLOCS, SUB_BYTE_DTYPES
from .callargs import Sig, REQUIRED, bind
from .errors import fail, did_you_mean
from .values import (Lit, DType, Str, TRef, Macro, Method, PyFunc, Opaque, as_expr, unify,
                     lit_to, describe, span_of, kind_of)

FLOAT_MATH = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "floor",
              "ceil", "erf")
_ALL_DTYPE_SPELLINGS = tuple(dtypes.DTYPES) + tuple(dtypes.ALIASES)


def dtype_of(value) -> str:
    """The canonical dtype named by a value (`T.float16`, "float16", "half")."""
    if isinstance(value, DType):
        return value.name
    if isinstance(value, Str):
        name = dtypes.canonical(value.value)
        if name is None and value.value in SUB_BYTE_DTYPES:
            raise fail(CT.BAD_DTYPE, f"{value.value} (a sub-byte dtype) is not a dtype of "
                       "kernels here", value.span, "sub-byte",
                       help="store the packed values in uint8 and unpack them with shifts "
                            "and masks (`(b >> 4) & 15`)")
        if name is None:
            raise fail(CT.BAD_DTYPE, f"unknown dtype \"{value.value}\"", value.span,
                       "not a dtype", help=did_you_mean(value.value, _ALL_DTYPE_SPELLINGS,
                                                        '"{}"')
                       or f"dtypes: {', '.join(dtypes.DTYPES)}")
        return name
    raise fail(CT.BAD_DTYPE, f"expected a dtype, found {describe(value)}", span_of(value),
               "not a dtype", help='write a dtype such as "float32" or T.float32')


def call_value(b, callee, tree):
    """The value of the call `tree` whose callee evaluated to `callee`."""
    span = b.spans.of(tree)
    if isinstance(callee, DType):
        return _typed_constant(b, callee.name, tree)
    if isinstance(callee, Method):
        return _method_call(b, callee, tree, span)
    if isinstance(callee, PyFunc):
        value = python_call(b, callee, tree, span)
        if value is not None:
            return value                     # the value Python computed (a macro, say)
        callee = callee.loader(callee.func)  # kernel code: inlined as a macro
    if isinstance(callee, Macro) and hasattr(b, "pending"):
        stmts, value = b.inline_macro(callee, tree, span, want_value=True)
        b.pending.extend(stmts)             # emitted before the statement that uses it
        return value
    if isinstance(callee, Macro):
        raise fail(CN.BAD_MACRO_USE, f"macro `{callee.name}` used as a value", span,
                   "macro call", help="call macros as statements; they are inlined")
    if not isinstance(callee, TRef):
        raise fail(CS.UNSUPPORTED_SYNTAX, f"{describe(callee)} cannot be called", span,
                   "not callable")
    name = callee.name
    handler = _HANDLERS.get(name)
    if handler is not None:
        return handler(b, name, tree, span)
    if name in LOOP_ITERS or name == "range":
        raise fail(C3.ITER_OUTSIDE_FOR, f"`{_spell(name)}` can only be the iterable of a "
                   "for loop", span, "used as a value",
                   help=f"write `for i in {_spell(name)}(...):`")
    if name in TILE_OPS:
        raise fail(CT.NOT_SCALAR, f"`T.{name}` is a statement and has no value", span,
                   "used as a value")
    if name in ALLOCS:
        raise fail(CS.UNSUPPORTED_SYNTAX, f"`T.{name}` must be assigned to a name", span,
                   "allocation", help=f"write `buf = T.{name}(...)`")
    raise fail(CS.UNSUPPORTED_SYNTAX, f"`T.{name}` cannot be used here", span,
               "not allowed here")


def python_call(b, pyfunc, tree, span):
    """A plain Python function called in a kernel: with compile-time arguments only, the
    value of Python's call (a number, a dtype, a macro it builds...); None where it
    builds kernel code from its arguments, to be inlined as a macro (TileLang evaluates
    such helpers on expressions)."""
    from .callargs import split_call
    from .pyvalues import python_value
    from .values import to_python, NOT_PYTHON as _NOT_PYTHON
    pos, kws = split_call(tree, b.spans)
    values = [b.eval(t) for t in pos]
    kw_values = {str(k): b.eval(t) for k, t in kws}
    py_args = [to_python(v) for v in values]
    py_kws = {k: to_python(v) for k, v in kw_values.items()}
    compile_time = all(a is not _NOT_PYTHON for a in py_args + list(py_kws.values()))
    if compile_time:
        try:
            result = pyfunc.func(*py_args, **py_kws)
        except Exception:                    # noqa: BLE001 - builds kernel code: inline it
            result = _NOT_PYTHON
        if result is not _NOT_PYTHON:
            value = python_value(result, pyfunc.loader)
            if value is None or isinstance(value, Opaque):
                raise fail(CS.UNSUPPORTED_SYNTAX, f"`{pyfunc.func.__name__}(...)` returned "
                           f"{describe(value) if value is not None else 'a Python object'},"
                           " which a kernel cannot use", span, "called by Python")
            return value
    return None


def _spell(name):
    return name if name == "range" else f"T.{name}"


def _typed_constant(b, dtype, tree):
    """`T.float16(2.0)` is a float16 constant; `T.float32(x)` converts x."""
    args = bind(Sig(f"T.{dtype}", (("value", REQUIRED),)), tree, b.spans)
    v = b.eval(args["value"])
    if isinstance(v, Lit):
        c = lit_to(v, dtype)
        return Const(c.value, dtype, span=b.spans.of(tree))
    return Cast(as_expr(v), dtype, span=b.spans.of(tree))


def _float_math(b, name, tree, span):
    args = bind(Sig(f"T.{name}", (("x", REQUIRED),)), tree, b.spans)
    v = b.eval(args["x"])
    e = lit_to(v, "float32") if isinstance(v, Lit) else as_expr(v)
    if kind_of(e.dtype) != "float":
        raise fail(CT.BAD_OPERAND, f"T.{name} needs a float argument, found {e.dtype}",
                   e.span, e.dtype, help=f'convert first: T.{name}(T.cast(x, "float32"))')
    return Call(name, (e,), e.dtype, span=span)


def _abs(b, name, tree, span):
    args = bind(Sig("T.abs", (("x", REQUIRED),)), tree, b.spans)
    e = as_expr(b.eval(args["x"]))
    if e.dtype == "bool":
        raise fail(CT.BAD_OPERAND, "T.abs of a bool", e.span, "bool")
    return Call("abs", (e,), e.dtype, span=span)


def _ceildiv(b, name, tree, span):
    args = bind(Sig("T.ceildiv", (("a", REQUIRED), ("b", REQUIRED))), tree, b.spans)
    a, c = b.eval(args["a"]), b.eval(args["b"])
    if isinstance(a, Lit) and isinstance(c, Lit) and a.kind == c.kind == "int" and c.value:
        return Lit(-(-a.value // c.value), span)     # on Python ints, as TileLang computes
    x, y = unify(a, c, span)
    if not dtypes.is_int(x.dtype):
        raise fail(CT.NOT_INTEGER, f"T.ceildiv needs integers, found {x.dtype}", span,
                   x.dtype)
    return Call("ceildiv", (x, y), x.dtype, span=span)


def _align_up(b, name, tree, span):
    """`T.align_up(a, b)`: `a` rounded up to a multiple of `b` (ceildiv(a, b) * b)."""
    args = bind(Sig("T.align_up", (("a", REQUIRED), ("b", REQUIRED))), tree, b.spans)
    a, c = b.eval(args["a"]), b.eval(args["b"])
    if isinstance(a, Lit) and isinstance(c, Lit) and a.kind == c.kind == "int" and c.value:
        return Lit(-(-a.value // c.value) * c.value, span)
    x, y = unify(a, c, span)
    if not dtypes.is_int(x.dtype):
        raise fail(CT.NOT_INTEGER, f"T.align_up needs integers, found {x.dtype}", span,
                   x.dtype)
    return b.binop("*", Call("ceildiv", (x, y), x.dtype, span=span), y, span, span)


def _minmax(b, name, tree, span):
    label = f"T.{name}" if getattr(tree.children[0], "data", "") == "getattr" else name
    args = bind(Sig(label, (("a", REQUIRED), ("b", REQUIRED))), tree, b.spans)
    x, y = unify(b.eval(args["a"]), b.eval(args["b"]), span)
    if x.dtype == "bool":
        raise fail(CT.BAD_OPERAND, f"{label} of bools", span, "bool operands")
    return Binary(name, x, y, x.dtype, span=span)


def _floor_op(b, name, tree, span):
    """T.floordiv(a, b) / T.floormod(a, b): TileLang's spellings of `a // b`, `a % b`."""
    args = bind(Sig(f"T.{name}", (("a", REQUIRED), ("b", REQUIRED))), tree, b.spans)
    op = "//" if name == "floordiv" else "%"
    return b.binop(op, b.eval(args["a"]), b.eval(args["b"]), span, span)


def _infinity(b, name, tree, span):
    args = bind(Sig("T.infinity", (("dtype", REQUIRED),)), tree, b.spans)
    dtype = dtype_of(b.eval(args["dtype"]))
    if not dtypes.is_float(dtype):
        raise fail(CT.BAD_OPERAND, f"T.infinity needs a float dtype, found {dtype}", span,
                   dtype)
    return Const(float("inf"), dtype, span=span)


def _cast(b, name, tree, span):
    args = bind(Sig("T.cast", (("value", REQUIRED), ("dtype", REQUIRED))), tree, b.spans)
    dtype = dtype_of(b.eval(args["dtype"]))
    return Cast(as_expr(b.eval(args["value"])), dtype, span=span)


def _rank_query(b, name, tree, span):
    bind(Sig(f"T.{name}", ()), tree, b.spans)
    return Call(name, (), "int32", span=span)


def _address_of(b, name, tree, span):
    raise fail(CS.UNSUPPORTED_SYNTAX, "`T.address_of` is only an argument of T.put_block, "
               "T.get_block, T.st, T.signal_op and T.wait_*", span, "not allowed here")


def _declaration(b, name, tree, span):
    raise fail(CN.BAD_MODULE_USE, f"`T.{name}` can only be used at module level or in a "
               "parameter annotation", span, "not allowed here")


def _kernel_value(b, name, tree, span):
    raise fail(C3.BAD_WITH, "`T.Kernel` is used as `with T.Kernel(...) as ids:`", span,
               "not in a with statement")


_HANDLERS = {n: _float_math for n in FLOAT_MATH}
_HANDLERS.update(abs=_abs, ceildiv=_ceildiv, align_up=_align_up, max=_minmax, min=_minmax, floordiv=_floor_op,
                 floormod=_floor_op,
                 infinity=_infinity, cast=_cast,
                 dynamic=_declaration, symbolic=_declaration, Tensor=_declaration,
                 Buffer=_declaration, prim_func=_declaration, macro=_declaration,
                 Kernel=_kernel_value, get_rank=_rank_query, get_num_ranks=_rank_query,
                 address_of=_address_of)

# TileLang's further functions and the diagnostics of what is not an expression here
from .intrinsics_ext import HANDLERS as _MORE, method_call as _method_call  # noqa: E402
_HANDLERS.update(_MORE)
