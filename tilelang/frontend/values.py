"""What a name or an expression evaluates to while building the IR.

Scalars become IR expressions. Everything else the source can mention (untyped
literals, dtypes, strings, buffers, regions, macros, the `T` namespace) is one of the
small classes below; they never reach the IR.

Untyped literals (`2`, `0.5`, module constants) are kept as `Lit` until they meet an
operand with a dtype, and then adapt to it (`x * 2.0` with a float16 `x` gives a
float16 constant). Where nothing fixes the dtype they default to int32 / float32 / bool.
Operands of two dtypes follow TVM's promotion rules (promotion.py) unless the strict
option is on.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import dtypes
from ..diagnostics import codes_types as CT
from ..ir.nodes import (Span, NO_SPAN, Expr, Const, Var, Buffer, Binary, Unary, Call, Cast,
                        Select)
from .errors import fail
from .promotion import is_strict, promote


@dataclass(frozen=True)
class Lit:
    value: int | float | bool
    span: Span = NO_SPAN

    @property
    def kind(self) -> str:
        if isinstance(self.value, bool):
            return "bool"
        return "int" if isinstance(self.value, int) else "float"


@dataclass(frozen=True)
class DType:
    name: str
    span: Span = NO_SPAN


@dataclass(frozen=True)
class Str:
    value: str
    span: Span = NO_SPAN


@dataclass(frozen=True)
class Tup:
    items: tuple
    span: Span = NO_SPAN


@dataclass(frozen=True)
class NoneVal:
    """Python's None (a default argument, `if scale is None:`)."""
    span: Span = NO_SPAN


@dataclass(frozen=True)
class Method:
    """`x.astype` not yet called: a method of a value."""
    obj: object
    name: str
    span: Span = NO_SPAN


@dataclass(frozen=True)
class BufData:
    """`buf.data`: the storage of a buffer, viewed with another shape by
    `T.Tensor(shape, dtype, buf.data)`."""
    buffer: object
    span: Span = NO_SPAN


@dataclass(frozen=True)
class TRef:
    """`T.<name>` not yet called."""
    name: str
    span: Span = NO_SPAN


@dataclass(frozen=True)
class TModule:
    """The `tilelang.language` module (bound by `import tilelang.language as T`)."""
    span: Span = NO_SPAN


@dataclass(frozen=True)
class TirModule:
    """`tvm.tir` / `tvm.tirx` (tilelang/tvm/tir.py): `tir.<name>` is T's function of that
    name, `tir.const(value, dtype)` a typed constant."""
    span: Span = NO_SPAN


@dataclass(frozen=True)
class PyFunc:
    """A plain Python function a kernel calls: run by Python when every argument is a
    compile-time value (it may return a macro), else inlined as a macro is (its body in
    the tile language, as TileLang inlines helpers that build expressions)."""
    func: object
    loader: object
    span: Span = NO_SPAN


@dataclass(frozen=True)
class OpaqueModule:
    """Any other imported module: usable in Python, not in a kernel."""
    name: str
    span: Span = NO_SPAN


@dataclass(frozen=True)
class Opaque:
    """A Python value (from a decorated function's globals) with no meaning in a kernel."""
    what: str
    span: Span = NO_SPAN


@dataclass(frozen=True)
class BufRef:
    """A use of a buffer by name."""
    buffer: Buffer
    span: Span = NO_SPAN


@dataclass
class Macro:
    """A `@T.macro` helper: its def tree, the names visible where it was defined, and
    how to map its positions to the user's file."""
    name: str
    tree: object
    globals: object
    spans: object
    span: Span = NO_SPAN
    params: tuple = field(default_factory=tuple)
    defaults: dict = field(default_factory=dict)     # parameter -> Python default value
    loader: object = None                            # for the defaults (pyfunc._Loader)
    python: bool = False     # a plain Python helper: its names rebind as Python's do


NOT_PYTHON = object()          # to_python's answer for a value that exists only at run time


def to_python(value):
    """The Python object a compile-time value stands for (a number, a dtype name, a
    string, None, a tuple of those), or NOT_PYTHON."""
    if isinstance(value, Lit):
        return value.value
    if isinstance(value, DType):
        from ..language import DTypeName
        return DTypeName(value.name)
    if isinstance(value, Str):
        return value.value
    if isinstance(value, NoneVal):
        return None
    if isinstance(value, Tup):
        items = tuple(to_python(v) for v in value.items)
        return NOT_PYTHON if any(i is NOT_PYTHON for i in items) else items
    return NOT_PYTHON


DEFAULT_DTYPE = {"int": "int32", "float": "float32", "bool": "bool"}


def describe(value) -> str:
    """A few words naming what a value is, for diagnostics."""
    if isinstance(value, Expr):
        return f"{article(value.dtype)} {value.dtype} value"
    if isinstance(value, Opaque):
        return value.what
    return {Lit: "a number", DType: "a dtype", Str: "a string", Tup: "a tuple",
            TRef: "a T. function", TModule: "the T module", OpaqueModule: "a module",
            BufRef: "a buffer", Macro: "a macro", NoneVal: "None", Method: "a method",
            BufData: "a buffer's data", TirModule: "the tvm.tir module",
            PyFunc: "a Python function"}.get(type(value), getattr(value, "WHAT", "this value"))


def article(word: str) -> str:
    return "an" if word[:1] in "aeio" else "a"


def span_of(value) -> Span:
    return getattr(value, "span", NO_SPAN)


def kind_of(dtype: str) -> str:
    if dtypes.is_bool(dtype):
        return "bool"
    return "float" if dtypes.is_float(dtype) else "int"


def convert(value, dtype: str):
    """The Python value of a constant of `dtype` (so Const values have a stable type)."""
    if dtypes.is_bool(dtype):
        return bool(value)
    if dtypes.is_float(dtype):
        return float(value)
    return int(value)


def lit_to(lit: Lit, dtype: str, other_span: Span | None = None) -> Const:
    """An untyped literal adapted to `dtype`; a float literal cannot become an integer
    and a number cannot become a bool (or the reverse)."""
    target = kind_of(dtype)
    ok = lit.kind == target or (lit.kind == "int" and target == "float")
    if not ok:
        secondary = [(other_span, f"this is {dtype}")] if other_span else []
        raise fail(CT.MIXED_DTYPES, f"{article(lit.kind)} {lit.kind} literal cannot be used "
                   f"as {dtype}",
                   lit.span, f"{lit.kind} literal", secondary=secondary,
                   help=f'convert explicitly, e.g. T.cast(x, "{dtype}")')
    if target == "int" and not _fits(int(lit.value), dtype):
        raise fail(CT.BAD_OPERAND, f"literal {lit.value} does not fit in {dtype}", lit.span,
                   "out of range", help="use a wider dtype, e.g. T.int64(...)")
    if target == "float" and not _fits_float(float(lit.value), dtype):
        raise fail(CT.BAD_OPERAND, f"literal {lit.value} does not fit in {dtype} (largest "
                   f"finite value {_largest(dtype):g})", lit.span, "out of range",
                   help="use a wider dtype, or T.infinity(dtype) if infinity is meant")
    return Const(convert(lit.value, dtype), dtype, span=lit.span)


def _fits_float(value: float, dtype: str) -> bool:
    """A finite value must stay finite in `dtype` (70000.0 is inf in float16, NaN in
    float8_e4m3); infinities and NaN (from Python values) are what they say."""
    if not math.isfinite(value):
        return True
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(np.array(value).astype(dtypes.numpy_dtype(dtype))))


def _largest(dtype: str) -> float:
    import ml_dtypes
    return float(ml_dtypes.finfo(dtypes.numpy_dtype(dtype)).max)


def _fits(value: int, dtype: str) -> bool:
    n = dtypes.bits(dtype)
    if dtypes.is_signed(dtype):
        return -(1 << (n - 1)) <= value < (1 << (n - 1))
    return 0 <= value < (1 << n)


def materialize(lit: Lit) -> Const:
    return lit_to(lit, DEFAULT_DTYPE[lit.kind])


def as_expr(value, what: str = "a scalar value", dtype: str | None = None) -> Expr:
    """`value` as an IR expression; literals take `dtype` (or their default)."""
    if isinstance(value, Lit):
        return lit_to(value, dtype) if dtype else materialize(value)
    if isinstance(value, BufRef) and value.buffer.scope == "var":
        from ..ir.nodes import Load
        b = value.buffer
        return Load(b, (), b.dtype, span=value.span)
    if isinstance(value, Expr):
        return value
    raise fail(CT.NOT_SCALAR, f"expected {what}, found {describe(value)}", span_of(value),
               f"this is {describe(value)}")


def unify(a, b, op_span: Span | None = None) -> tuple[Expr, Expr]:
    """Two operands with one dtype: literals adapt to the other side; two literals take
    the wider default (int with float gives float32); two dtypes follow TVM's promotion
    (an error under the strict option)."""
    if isinstance(a, Lit) and isinstance(b, Lit):
        if {a.kind, b.kind} == {"int", "float"}:
            return lit_to(a, "float32"), lit_to(b, "float32")
        return materialize(a), materialize(b)
    if isinstance(a, Lit) or isinstance(b, Lit):
        lit, other, lit_first = (a, b, True) if isinstance(a, Lit) else (b, a, False)
        e = as_expr(other)
        if lit.kind == "float" and dtypes.is_int(e.dtype) and not is_strict():
            e = Cast(e, "float32", span=e.span)      # TVM reads a Python float as float32
        elif lit.kind != "bool" and e.dtype == "bool" and not is_strict():
            # a bool meets a number as an integer 0 / 1 (TVM's uint1): `mask[k] != 0`
            e = Cast(e, DEFAULT_DTYPE[lit.kind], span=e.span)
        c = lit_to(lit, e.dtype, span_of(other))
        return (c, e) if lit_first else (e, c)
    ea, eb = as_expr(a), as_expr(b)
    if ea.dtype != eb.dtype:
        target = None if is_strict() else promote(ea.dtype, eb.dtype)
        if target is None:
            raise fail(CT.MIXED_DTYPES, f"mixed dtypes: {ea.dtype} and {eb.dtype}",
                       op_span or ea.span, "",
                       secondary=[(ea.span, ea.dtype), (eb.span, eb.dtype)],
                       help=f'convert one side explicitly, e.g. T.cast(x, "{ea.dtype}")')
        ea, eb = convert_to(ea, target), convert_to(eb, target)
    return ea, eb


def convert_to(e: Expr, dtype: str) -> Expr:
    """`e` as `dtype` (a constant is converted in place, anything else is cast)."""
    if e.dtype == dtype:
        return e
    if isinstance(e, Const):
        return Const(cast_value(e.value, dtype), dtype, span=e.span)
    return Cast(e, dtype, span=e.span)


def cast_value(value, dtype: str):
    """A Python constant converted as a cast to `dtype` would (floats truncate)."""
    if dtypes.is_bool(dtype):
        return bool(value)
    if dtypes.is_float(dtype):
        return float(value)
    import math
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return int(value)


def const_value(value):
    """The Python value of a compile-time constant (a literal or an expression of
    constants), or None when it depends on runtime values."""
    if isinstance(value, Lit):
        return value.value
    if isinstance(value, Const):
        return value.value
    if isinstance(value, Cast):
        inner = const_value(value.value)
        return None if inner is None else convert(inner, value.dtype)
    if isinstance(value, Unary):
        inner = const_value(value.operand)
        if inner is None:
            return None
        return -inner if value.op == "-" else (not inner)
    if isinstance(value, Binary):
        return _const_binary(value)
    if isinstance(value, Call) and value.name == "ceildiv":
        a, b = (const_value(x) for x in value.args)
        return None if a is None or b is None or b == 0 else -(-a // b)
    if isinstance(value, Select):
        c = const_value(value.cond)
        if c is None:
            return None
        return const_value(value.true_value if c else value.false_value)
    return None


def _const_binary(e: Binary):
    a, b = const_value(e.lhs), const_value(e.rhs)
    if a is None or b is None:
        return None
    try:
        return fold(e.op, a, b)
    except ZeroDivisionError:
        return None


def fold(op: str, a, b):
    """Python semantics of a binary operator on constants (// and % floor)."""
    if op == "+": return a + b
    if op == "-": return a - b
    if op == "*": return a * b
    if op == "/": return a / b
    if op == "//": return a // b
    if op == "%": return a % b
    if op == "min": return min(a, b)
    if op == "max": return max(a, b)
    if op == "and": return a and b
    if op == "or": return a or b
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b,
            "!=": a != b}[op]


def const_int(value) -> int | None:
    """The value of an integer compile-time constant, or None."""
    v = const_value(value)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def const_ints(extents) -> list:
    """const_int of each extent (a region's extents are ints or expressions)."""
    return [e if isinstance(e, int) else const_int(e) for e in extents]
