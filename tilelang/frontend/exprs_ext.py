"""The expression forms TileLang programs use beyond arithmetic: `a if c else b`, bit
operators (`& | ^ ~ << >>`), `**`, `in` / `is` on compile-time values, `==` on dtypes,
and attributes (`buf.dtype`, `buf.shape`, `buf.data`, `x.astype(dtype)`).

Compile-time values (numbers, dtypes, strings, tuples, None) are computed as Python
would; run-time values become IR. A conditional expression whose condition is known at
compile time evaluates only the branch taken, as Python does in TileLang's factories
(`(K, M) if trans_A else (M, K)`).
"""
from __future__ import annotations

from .. import dtypes
from ..diagnostics import codes_names as CN, codes_syntax as CS, codes_types as CT
from ..ir.nodes import Expr, Const, Binary, Unary, Call, Select
from ..language.names import HINT_VALUES
from .errors import fail, did_you_mean
from .values import (Lit, DType, Str, Tup, TRef, BufRef, NoneVal, Method, BufData,
                     as_expr, unify, const_value, describe, span_of, kind_of)

BIT_OPS = {"&": "bitwise_and", "|": "bitwise_or", "^": "bitwise_xor",
           "<<": "shift_left", ">>": "shift_right"}
_BOOL_BIT_OPS = {"&": "and", "|": "or", "^": "!="}
_STATIC = (DType, Str, NoneVal, Tup)
MAX_INT_POWER = 8          # x ** n with a constant n <= this is n - 1 multiplications


def truth(value, python_only: bool = False):
    """The truth of a compile-time value (Python's rules), or None if it is only known
    at run time; `python_only`: typed IR constants (`T.bool(False)`) count as run-time
    values, so that a printed `if T.bool(False):` stays an `if`."""
    if isinstance(value, NoneVal):
        return False
    if isinstance(value, Tup):
        return bool(value.items)
    if isinstance(value, BufRef) and value.buffer.scope == "var":
        return None                     # a T.alloc_var scalar: its value, at run time
    if isinstance(value, (DType, TRef, BufRef)):
        return True
    if isinstance(value, Str):
        return bool(value.value)
    if python_only and not isinstance(value, Lit):
        return None
    c = const_value(value)
    return None if c is None else bool(c)


def static_key(value):
    """A compile-time value as a Python value to compare (dtypes by canonical name), or
    raises _NotStatic."""
    if isinstance(value, DType):
        return ("dtype", value.name)
    if isinstance(value, Str):
        canon = dtypes.canonical(value.value)
        return ("dtype", canon) if canon else ("str", value.value)
    if isinstance(value, NoneVal):
        return None
    if isinstance(value, Tup):
        return tuple(static_key(v) for v in value.items)
    c = const_value(value)
    if c is None:
        raise _NotStatic(value)
    return c


class _NotStatic(Exception):
    def __init__(self, value):
        super().__init__()
        self.value = value


class ExprExtMixin:
    # ------------------------------------------------------------------ a if c else b
    def _e_ifexp(self, tree):
        then_t, cond_t, else_t = tree.children
        span = self.spans.of(tree)
        cond = self.eval(cond_t)
        known = truth(cond)
        if known is not None:
            return self.eval(then_t if known else else_t)
        c = as_expr(cond, "a condition")
        if c.dtype != "bool":
            raise fail(CT.NOT_BOOL, f"condition must be bool, found {c.dtype}", c.span,
                       c.dtype, help="compare explicitly, e.g. `x != 0`")
        x, y = unify(self.eval(then_t), self.eval(else_t), span)
        return Select(c, x, y, x.dtype, span=span)

    # ------------------------------------------------------------------ operators
    def compat_binop(self, op, a, b, span, op_span):
        """`in`, `is`, `==` on dtypes / strings / None, and the bit operators; None for
        the operators exprs.py handles."""
        if op in ("in", "not in"):
            return self._membership(op, a, b, span, op_span)
        if op in ("is", "is not"):
            same = self._static(a, op) == self._static(b, op)
            return Lit(same == (op == "is"), span)
        if op in ("==", "!=") and (isinstance(a, _STATIC) or isinstance(b, _STATIC)):
            same = self._static(a, op) == self._static(b, op)
            return Lit(same == (op == "=="), span)
        if op in BIT_OPS:
            return self._bit_op(op, a, b, span, op_span)
        return None

    def _static(self, value, op):
        try:
            return static_key(value)
        except _NotStatic as err:
            raise fail(CT.NOT_CONSTANT, f"`{op}` compares compile-time values (numbers, "
                       f"dtypes, strings, tuples, None), found {describe(err.value)}",
                       span_of(err.value), "known only at run time") from None

    def _membership(self, op, a, b, span, op_span):
        if not isinstance(b, (Tup, Str)):
            raise fail(CT.BAD_OPERAND, f"`{op}` needs a tuple or list on its right, found "
                       f"{describe(b)}", span_of(b), "not a tuple")
        if isinstance(b, Str):
            found = isinstance(a, Str) and a.value in b.value
        else:
            key = self._static(a, op)
            found = key in [self._static(v, op) for v in b.items]
        return Lit(found == (op == "in"), span)

    def _bit_op(self, op, a, b, span, op_span):
        if isinstance(a, Lit) and isinstance(b, Lit) and "float" not in (a.kind, b.kind):
            x, y = a.value, b.value
            value = {"&": lambda: x & y, "|": lambda: x | y, "^": lambda: x ^ y,
                     "<<": lambda: x << y, ">>": lambda: x >> y}[op]()
            return Lit(bool(value) if a.kind == b.kind == "bool" else int(value), span)
        ea, eb = unify(a, b, op_span)
        kind = kind_of(ea.dtype)
        if kind == "bool" and op in _BOOL_BIT_OPS:
            return Binary(_BOOL_BIT_OPS[op], ea, eb, "bool", span=span)
        if kind != "int":
            raise fail(CT.BAD_OPERAND, f"`{op}` needs integer operands, found {ea.dtype}",
                       op_span, f"{ea.dtype} operands",
                       help="bit operators work on integers (and `&`, `|`, `^` on bools)")
        return Call(BIT_OPS[op], (ea, eb), ea.dtype, span=span)

    def _e_invert(self, tree):
        v = self.eval(tree.children[0])
        span = self.spans.of(tree)
        if isinstance(v, Lit):
            if v.kind == "float":
                raise fail(CT.BAD_OPERAND, "`~` on a float", span, "float operand")
            return Lit(not v.value if v.kind == "bool" else ~v.value, span)
        e = as_expr(v)
        if e.dtype == "bool":
            return Unary("not", e, "bool", span=span)
        if not dtypes.is_int(e.dtype):
            raise fail(CT.BAD_OPERAND, f"`~` needs an integer, found {e.dtype}", span, e.dtype)
        return Call("bitwise_not", (e,), e.dtype, span=span)

    def _e_pow(self, tree):
        base, exp = (self.eval(c) for c in tree.children)
        span = self.spans.of(tree)
        if isinstance(base, Lit) and isinstance(exp, Lit):
            try:
                return Lit(base.value ** exp.value, span)
            except ZeroDivisionError:
                raise fail(CT.BAD_OPERAND, "0 raised to a negative power", span,
                           "division by zero") from None
        n = const_value(exp)
        b = as_expr(base) if not isinstance(base, Lit) else None
        if (b is not None and isinstance(n, int) and not isinstance(n, bool)
                and 0 <= n <= MAX_INT_POWER and dtypes.is_int(b.dtype)):
            return _power_by_products(b, n, span)
        x, y = unify(base, exp, span)
        if kind_of(x.dtype) != "float":
            raise fail(CT.BAD_OPERAND, f"`**` on {x.dtype} needs a constant exponent "
                       f"0..{MAX_INT_POWER}", span, x.dtype,
                       help='or convert to a float: T.cast(x, "float32") ** y')
        return Call("pow", (x, y), x.dtype, span=span)

    # ------------------------------------------------------------------ attributes
    def attribute(self, base, attr, span):
        """`buf.dtype`, `buf.shape`, `buf.data`, `x.dtype`, `x.astype`, and the members
        of hint objects (`T.GemmWarpPolicy.FullRow`); None if there is no such attribute."""
        if isinstance(base, BufRef) and base.buffer.scope == "var":
            base = as_expr(base)                    # a T.alloc_var scalar: its value
        if isinstance(base, BufRef):
            buf = base.buffer
            if attr == "dtype":
                return DType(buf.dtype, span)
            if attr == "shape":
                return Tup(tuple(Lit(s.value, span) if isinstance(s, Const) else s
                                 for s in buf.shape), span)
            if attr == "ndim":
                return Lit(len(buf.shape), span)
            if attr == "data":
                return BufData(buf, span)
            return None
        if isinstance(base, (Expr, Lit)) and attr in ("astype", "dtype"):
            if attr == "astype":
                return Method(base, "astype", span)
            return DType(as_expr(base).dtype, span)
        if isinstance(base, TRef) and base.name.split(".")[0] in HINT_VALUES:
            return TRef(f"{base.name}.{attr}", span)
        return None

    def tir_attribute(self, attr, span, attr_span):
        """`tir.<name>` (`tvm.tir` / `tvm.tirx`): T's function of that name; `tir.const`
        is the typed constant `tir.const(value, dtype)`."""
        from ..language.names import TIR_NAMES
        if attr not in TIR_NAMES:
            raise fail(CN.UNKNOWN_T_FUNCTION, f"`tir.{attr}` is not available in a kernel",
                       attr_span, "unknown",
                       help=did_you_mean(attr, TIR_NAMES, "`tir.{}`")
                       or f"available: {', '.join(TIR_NAMES)}")
        return TRef("tir.const" if attr == "const" else attr, span)

    def tuple_item(self, tup, subs, span):
        """`shape[1]`, `shape[-1]` of a compile-time tuple."""
        from .values import const_int
        k = const_int(self.eval(subs[0])) if len(subs) == 1 and \
            getattr(subs[0], "data", None) != "slice" else None
        if k is None or not -len(tup.items) <= k < len(tup.items):
            raise fail(CT.NOT_CONSTANT, f"a tuple of {len(tup.items)} is indexed by one "
                       "integer constant within it", span, "bad tuple index")
        return tup.items[k]

    # ------------------------------------------------------------------ hint-only forms
    def _e_lambdef(self, tree):
        raise fail(CS.UNSUPPORTED_SYNTAX, "a lambda is not a value of the tile language",
                   self.spans.of(tree), "lambda",
                   help="lambdas appear only inside layout hints (T.Layout, T.Fragment)")


def _power_by_products(b: Expr, n: int, span):
    if n == 0:
        return Const(1, b.dtype, span=span)
    out = b
    for _ in range(n - 1):
        out = Binary("*", out, b, b.dtype, span=span)
    return out


__all__ = ["ExprExtMixin", "truth", "static_key", "BIT_OPS"]
