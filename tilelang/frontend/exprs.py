"""Expressions: parse-tree expressions -> values (IR expressions for scalars), with
name resolution and dtype checking."""
from __future__ import annotations

import math

import ast
from dataclasses import replace

from lark import Tree, Token

from .. import dtypes
from ..diagnostics import codes_names as CN, codes_syntax as CS, codes_types as CT
from ..ir.nodes import Span, Expr, Const, Var, Buffer, Binary, Unary, Load, COMPARISONS
from ..language.names import ALL_NAMES, DTYPE_NAMES, DTYPE_ALIASES, SUB_BYTE_DTYPES
from .errors import fail, did_you_mean
from .exprs_ext import ExprExtMixin
from .starargs import DictVal, SpreadMixin, dict_item, spread_call
from .values import (Lit, DType, Str, Tup, TRef, TModule, OpaqueModule, BufRef, NoneVal,
                     TirModule, PyFunc,
                     as_expr, unify, fold, describe, span_of, kind_of)


def join(a: Span, b: Span) -> Span:
    """The span from the start of `a` to the end of `b`."""
    return Span(a.file, a.line, a.col, b.end_line, b.end_col)


def parse_number(text: str):
    text = text.replace("_", "")
    if text[:2].lower() == "0x":
        return int(text, 16)
    if any(c in text for c in ".eE"):
        return float(text)
    return int(text)


class ExprMixin(ExprExtMixin, SpreadMixin):
    """Needs: self.scope, self.spans, self.check_symbol(var, span)."""

    def eval(self, tree):
        if isinstance(tree, Token):
            raise fail(CS.UNSUPPORTED_SYNTAX, "unsupported expression", self.spans.of(tree))
        method = getattr(self, f"_e_{tree.data}", None)
        if method is None:
            raise fail(CS.UNSUPPORTED_SYNTAX, "this expression is not supported here",
                       self.spans.of(tree), "unsupported")
        return method(tree)

    def eval_expr(self, tree, what="a scalar value", dtype=None) -> Expr:
        return as_expr(self.eval(tree), what, dtype)

    def eval_int(self, tree, what="an integer") -> Expr:
        e = self.eval_expr(tree, what)
        if not dtypes.is_int(e.dtype):
            raise fail(CT.NOT_INTEGER, f"expected {what}, found {describe(e)}", e.span,
                       e.dtype, help='convert explicitly, e.g. T.cast(x, "int32")')
        return e

    # ------------------------------------------------------------------ atoms
    def _e_number(self, tree):
        value, span = parse_number(str(tree.children[0])), self.spans.of(tree)
        if isinstance(value, float) and math.isinf(value):
            raise fail(CT.BAD_OPERAND, f"literal {tree.children[0]} is beyond the range of "
                       f"float64", span, "overflows to infinity",
                       help="write T.infinity(dtype) if infinity is meant")
        return Lit(value, span)

    def _e_true(self, tree):
        return Lit(True, self.spans.of(tree))

    def _e_false(self, tree):
        return Lit(False, self.spans.of(tree))

    def _e_none(self, tree):
        return NoneVal(self.spans.of(tree))          # a compile-time value only

    def _e_string(self, tree):
        text = "".join(ast.literal_eval(str(t)) for t in tree.children)
        return Str(text, self.spans.of(tree))

    def _e_paren(self, tree):
        return self.eval(tree.children[0])

    def _e_tuple(self, tree):
        return Tup(tuple(self.eval(c) for c in tree.children if c is not None),
                   self.spans.of(tree))

    def _e_name(self, tree):
        return self.resolve(str(tree.children[0]), self.spans.of(tree))

    def resolve(self, name: str, span: Span):
        value, local = self.scope.lookup(name)
        if value is None:
            if name in ("range", "max", "min", "abs"):
                return TRef(name, span)
            hint = did_you_mean(name, self.scope.known())
            if name == "T":
                hint = "add `import tilelang.language as T` at the top of the file"
            elif name in self.scope.ended:
                line = span_of(self.scope.ended[name].value).line
                hint = (f"`{name}` was bound in a block that has ended (line {line}); to set "
                        f"it in branches, declare `{name} = T.alloc_var(...)` before them")
            raise fail(CN.UNKNOWN_NAME, f"unknown name `{name}`", span, "not defined",
                       help=hint)
        if isinstance(value, Buffer):
            return BufRef(value, span)
        if isinstance(value, Var):
            if local is None:
                self.check_symbol(value, span)
            return replace(value, span=span)
        if isinstance(value, (Lit, DType, Str, TModule, OpaqueModule, TRef, Tup, NoneVal,
                              TirModule, PyFunc, DictVal)):
            return replace(value, span=span)
        return value

    def _e_getattr(self, tree):
        base = self.eval(tree.children[0])
        attr = str(tree.children[1])
        span = self.spans.of(tree)
        if isinstance(base, TModule):
            if attr in DTYPE_NAMES:
                return DType(attr, span)
            if attr in DTYPE_ALIASES:
                return DType(DTYPE_ALIASES[attr], span)
            if attr in SUB_BYTE_DTYPES:
                raise fail(CT.BAD_DTYPE, f"`T.{attr}` (a sub-byte dtype) is not a dtype of "
                           "kernels here", self.spans.of(tree.children[1]), "sub-byte",
                           help="store the packed values in uint8 and unpack them with "
                                "shifts and masks (`(b >> 4) & 15`)")
            if attr not in ALL_NAMES:
                raise fail(CN.UNKNOWN_T_FUNCTION, f"`T.{attr}` is not part of the tile language",
                           self.spans.of(tree.children[1]), "unknown",
                           help=did_you_mean(attr, ALL_NAMES, "`T.{}`"))
            return TRef(attr, span)
        if isinstance(base, TirModule):
            return self.tir_attribute(attr, span, self.spans.of(tree.children[1]))
        if isinstance(base, OpaqueModule) and base.name == "tilelang" and attr == "language":
            return TModule(span)
        if isinstance(base, OpaqueModule):
            raise fail(CN.BAD_MODULE_USE, f"module `{base.name}` cannot be used in a kernel",
                       span, "Python module", help="only `tilelang.language` (T) is available")
        value = self.attribute(base, attr, span)                 # exprs_ext.py
        if value is not None:
            return value
        raise fail(CS.UNSUPPORTED_SYNTAX, f"attribute access on {describe(base)} is not "
                   "supported", span, "unsupported", help="only `T.<name>` is available")

    # ------------------------------------------------------------------ operators
    def _e_flat(self, tree):
        """A flat operator sequence (see the grammar), read by precedence climbing."""
        if len(tree.children) > 2 * MAX_OPERANDS:
            raise fail(CS.UNSUPPORTED_SYNTAX, f"expression with more than {MAX_OPERANDS} "
                       "operands", self.spans.of(tree), "too long",
                       help="split it with intermediate variables")
        reader = _OpReader(self, tree.children)
        value, _ = reader.expr(1)
        if reader.pos != len(reader.items):
            tok = reader.items[reader.pos]
            raise fail(CS.UNEXPECTED_TOKEN, f"unexpected `{tok}`", self.spans.of(tok),
                       "unexpected here")
        return value

    def binop(self, op, a, b, span, op_span):
        special = self.compat_binop(op, a, b, span, op_span)     # exprs_ext.py
        if special is not None:
            return special
        if isinstance(a, Lit) and isinstance(b, Lit):
            return self._fold_lits(op, a, b, span, op_span)
        ea, eb = unify(a, b, op_span)
        kind = kind_of(ea.dtype)
        self._check_operands(op, kind, ea, span, op_span)
        dtype = "bool" if op in COMPARISONS or op in ("and", "or") else ea.dtype
        return Binary(op, ea, eb, dtype, span=span)

    def _check_operands(self, op, kind, ea, span, op_span):
        if op in ("and", "or"):
            if kind != "bool":
                raise fail(CT.NOT_BOOL, f"operands of `{op}` must be bool, found {ea.dtype}",
                           span, f"{ea.dtype} operands", help="compare explicitly, e.g. `x != 0`")
        elif op == "/" and kind != "float":
            raise fail(CT.INT_TRUE_DIVISION, f"`/` on {ea.dtype} values", op_span,
                       "true division of integers",
                       help="use `//` for floor division (or T.ceildiv), or cast to a float first")
        elif op in ("//", "%") and kind != "int":
            raise fail(CT.BAD_OPERAND, f"`{op}` needs integer operands, found {ea.dtype}",
                       op_span, f"{ea.dtype} operands",
                       help="use `/` for floats, or T.floor(a / b)")
        elif op not in ("==", "!=", "and", "or") and kind == "bool":
            raise fail(CT.BAD_OPERAND, f"`{op}` is not defined on bool values", op_span,
                       "bool operands", help="use `and` / `or` / `not` on bools")

    def _fold_lits(self, op, a: Lit, b: Lit, span, op_span):
        kinds = {a.kind, b.kind}
        if op in ("and", "or"):
            if kinds != {"bool"}:
                raise fail(CT.NOT_BOOL, f"operands of `{op}` must be bool", span, "not bool")
        elif "bool" in kinds and op not in ("==", "!="):
            raise fail(CT.BAD_OPERAND, f"`{op}` is not defined on bool values", op_span, "bool")
        elif op == "/" and kinds == {"int"}:
            raise fail(CT.INT_TRUE_DIVISION, "`/` on integers", op_span,
                       "true division of integers", help="use `//` for floor division")
        elif op in ("//", "%") and "float" in kinds:
            raise fail(CT.BAD_OPERAND, f"`{op}` needs integer operands", op_span, "float")
        try:
            value = fold(op, a.value, b.value)
        except ZeroDivisionError:
            raise fail(CT.BAD_OPERAND, "division by zero", span, "divides by zero") from None
        except OverflowError:
            value = math.inf
        operands_finite = not any(isinstance(x, float) and not math.isfinite(x)
                                  for x in (a.value, b.value))
        if isinstance(value, float) and math.isinf(value) and operands_finite:
            raise fail(CT.BAD_OPERAND, "this constant expression overflows float64", span,
                       "overflows to infinity")
        return Lit(value, span)

    def not_value(self, v, span):
        if isinstance(v, Lit) and v.kind == "bool":
            return Lit(not v.value, span)
        e = as_expr(v)
        if e.dtype != "bool":
            raise fail(CT.NOT_BOOL, f"operand of `not` must be bool, found {e.dtype}", e.span,
                       e.dtype, help="compare explicitly, e.g. `x == 0`")
        return Unary("not", e, "bool", span=span)

    def _e_neg(self, tree):
        inner = tree.children[0]
        v = self.eval(inner)
        span = self.spans.of(tree)
        parenthesised = isinstance(inner, Tree) and inner.data == "paren"
        if isinstance(v, Lit) and v.kind == "bool" or (isinstance(v, Expr) and v.dtype == "bool"):
            raise fail(CT.BAD_OPERAND, "unary `-` on a bool", span, "bool operand",
                       help="use `not` for bools")
        # `-2` and `-T.infinity(...)` are constants; `-(c)` keeps an explicit negation
        if isinstance(v, Lit) and not parenthesised:
            return Lit(-v.value, span)
        if isinstance(v, Const) and not parenthesised:
            return Const(-v.value, v.dtype, span=span)
        e = as_expr(v)
        if dtypes.is_int(e.dtype) and not dtypes.is_signed(e.dtype):
            raise fail(CT.BAD_OPERAND, f"unary `-` on unsigned {e.dtype}", span, e.dtype)
        return Unary("-", e, e.dtype, span=span)

    def _e_pos(self, tree):
        v = self.eval(tree.children[0])
        as_expr(v)
        return v

    def _e_slice(self, tree):
        raise fail(CT.NOT_SCALAR, "a slice is not a value", self.spans.of(tree), "slice",
                   help="slices describe regions in T.copy, T.gemm, T.fill and atomics")

    # ------------------------------------------------------------------ indexing, calls
    def _e_getitem(self, tree):
        base = self.eval(tree.children[0])
        span = self.spans.of(tree)
        if isinstance(base, Tup):
            return self.tuple_item(base, tree.children[1].children, span)   # exprs_ext.py
        if isinstance(base, DictVal):
            return dict_item(self, base, tree.children[1].children, span)   # starargs.py
        if not isinstance(base, BufRef):
            raise fail(CT.NOT_SCALAR, f"cannot index {describe(base)}", span_of(base),
                       "not a buffer")
        buf = base.buffer
        idx_trees = tree.children[1].children
        indices = self.indices(buf, idx_trees, span)
        return Load(buf, indices, buf.dtype, span=span)

    def element_buffer(self, tree, what: str, code, example: str) -> Buffer:
        """The buffer of `tree`, which must be an element `buf[i, ...]` (the
        destination of an atomic): `what` names it in the errors, under `code`."""
        if not (isinstance(tree, Tree) and tree.data == "getitem"):
            raise fail(code, f"the destination of {what} must be an element `{example}`",
                       self.spans.of(tree), "not an element")
        base = self.eval(tree.children[0])
        if not isinstance(base, BufRef):
            raise fail(code, f"{what} needs a buffer element, found {describe(base)}",
                       span_of(base), "not a buffer")
        return base.buffer

    def indices(self, buf: Buffer, idx_trees, span) -> tuple:
        if buf.scope == "var":
            raise fail(CT.INDEX_COUNT, f"`{buf.name}` is a T.alloc_var scalar and takes no "
                       "indices", span, "indexed here", help=f"use `{buf.name}` directly")
        for t in idx_trees:
            if isinstance(t, Tree) and t.data == "slice":
                self._e_slice(t)
        if len(idx_trees) != buf.ndim:
            raise fail(CT.INDEX_COUNT, f"`{buf.name}` has {buf.ndim} dimension"
                       f"{'s' if buf.ndim != 1 else ''} but {len(idx_trees)} "
                       f"ind{'ices were' if len(idx_trees) != 1 else 'ex was'} given", span,
                       f"{len(idx_trees)} indices", help=f"shape of {buf.name}: "
                       f"{_shape_text(buf)}")
        return tuple(_from_end(self.eval_int(t, "an integer index"), dim)
                     for t, dim in zip(idx_trees, buf.shape))

    def _e_call(self, tree):
        from .intrinsics import call_value
        tree = spread_call(self, tree)
        callee = self.eval(tree.children[0])
        return call_value(self, callee, tree)


# Later stages walk expressions recursively: keep their depth well below Python's limit.
MAX_OPERANDS = 256
_PREC = {"or": 1, "and": 2, "|": 5, "^": 6, "&": 7, "<<": 8, ">>": 8, "+": 9, "-": 9,
         "*": 10, "/": 10, "//": 10, "%": 10}
_NOT_PREC, _CMP_PREC = 3, 4
_CMP_TOKENS = ("COMP_OP", "IN", "NOT_IN", "IS", "IS_NOT")


def _from_end(index: Expr, dim) -> Expr:
    """A constant negative index counts from the end of its dimension, as in Python and
    TileLang (`A[-1]` is the last element); any other index is taken as written."""
    if isinstance(index, Const) and index.value < 0 and isinstance(dim, Const):
        return Const(index.value + dim.value, index.dtype, span=index.span)
    return index


def _op_text(tok) -> str:
    """`not in` / `is not` written with any spacing -> one spelling."""
    return " ".join(str(tok).split())


class _OpReader:
    """Python precedence over [not* operand (op not* operand)*]: or < and < not <
    comparisons, `in`, `is` (chained: a < b < c is a < b and b < c) < | < ^ < & <
    << >> < + - < * / // %."""

    def __init__(self, builder, items):
        self.b = builder
        self.items = items
        self.pos = 0

    def _peek_op(self):
        if self.pos < len(self.items):
            item = self.items[self.pos]
            if isinstance(item, Token) and item.type != "NOT":
                return item
        return None

    def _prec(self, tok) -> int:
        return _CMP_PREC if tok.type in _CMP_TOKENS else _PREC[str(tok)]

    def expr(self, min_prec, after_not=False):
        """(value, span) of the longest expression whose operators bind at least as
        tightly as `min_prec`; `after_not`: the operand of a `not` (may be `not` again)."""
        lhs, span = self._prefix(min_prec, after_not)
        while True:
            tok = self._peek_op()
            if tok is None or self._prec(tok) < min_prec:
                return lhs, span
            if tok.type in _CMP_TOKENS:
                lhs, span = self._comparisons(lhs, span)
                continue
            self.pos += 1
            prec = self._prec(tok)
            rhs, rspan = self.expr(prec + 1)
            span = join(span, rspan)
            lhs = self.b.binop(str(tok), lhs, rhs, span,
                               span if prec <= 2 else self.b.spans.of(tok))

    def _prefix(self, min_prec, after_not):
        item = self.items[self.pos]
        if isinstance(item, Token) and item.type == "NOT":
            if min_prec > _NOT_PREC and not after_not:
                raise fail(CS.UNEXPECTED_TOKEN, "`not` cannot follow this operator here",
                           self.b.spans.of(item), "needs parentheses",
                           help="write the negation in parentheses: `(not x)`")
            self.pos += 1
            operand, ospan = self.expr(_CMP_PREC, after_not=True)
            span = join(self.b.spans.of(item), ospan)
            return self.b.not_value(operand, span), span
        self.pos += 1
        return self.b.eval(item), self.b.spans.of(item)

    def _comparisons(self, lhs, span):
        """a < b < c is (a < b) and (b < c), as in Python."""
        first, result, left, lspan = span, None, lhs, span
        while (tok := self._peek_op()) is not None and tok.type in _CMP_TOKENS:
            self.pos += 1
            right, rspan = self.expr(_CMP_PREC + 1)
            cmp = self.b.binop(_op_text(tok), left, right, join(lspan, rspan),
                               self.b.spans.of(tok))
            result = cmp if result is None else self.b.binop(
                "and", result, cmp, join(first, rspan), self.b.spans.of(tok))
            left, lspan, span = right, rspan, join(first, rspan)
        return result, span


def _shape_text(buf: Buffer) -> str:
    parts = [str(s.value) if isinstance(s, Const) else getattr(s, "name", "?")
             for s in buf.shape]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


__all__ = ["ExprMixin", "join", "parse_number"]
