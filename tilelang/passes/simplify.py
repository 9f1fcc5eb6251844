"""`simplify`: constant folding, algebraic identities and trivial control flow.

Run twice in the CPU pipeline: on the tile-level IR (folds constant grids and region
starts) and as `simplify_lowered` after tile-op lowering (folds the index arithmetic the
lowering introduced and removes its unit loops). Dtypes are preserved exactly: a folded
constant keeps the dtype of the node it replaces.

Float identities are limited to the ones that are exact for every input (x * 1, x - 0):
x + 0 would turn -0.0 into +0.0 and x * 0 would hide NaN and infinities.
"""
from __future__ import annotations

from .. import dtypes
from ..diagnostics import Diagnostic, Label, TileLangError
from ..diagnostics.codes_passes import DIVISION_BY_ZERO
from ..ir import (Node, Const, Binary, Unary, Call, Cast, Select, Seq, For, If, Module,
                  NO_SPAN, rewrite, substitute)
from ..ir.canon import canonicalize, make_body
from ..ir.nodes import BitCast
from .fold import (make_const, is_const, fold_binary, fold_unary, fold_call, fold_cast,
                   fold_bitcast)


def simplify(module: Module) -> Module:
    return canonicalize(rewrite(module, _simplify_node))


def simplify_lowered(module: Module) -> Module:
    """`simplify` after lowering. A divisor only lowering made 0 (a one-iteration loop's
    index, substituted) is not a constant of the source: it is left to the run-time rule
    (integer division by zero gives 0), as the interpreter has it."""
    return canonicalize(rewrite(module, _unchecked_node))


def simplify_node(node: Node) -> Node:
    """Simplify any subtree (used by other passes on the expressions they build)."""
    return rewrite(node, _simplify_node)


def _simplify_node(node: Node) -> Node | None:
    handler = _HANDLERS.get(type(node))
    return handler(node) if handler is not None else None


def _unchecked_node(node: Node) -> Node | None:
    """`_simplify_node` without the zero-divisor diagnostic."""
    handler = _UNCHECKED.get(type(node))
    return handler(node) if handler is not None else None


# ----------------------------------------------------------------------------- expressions

def _user_error(code: str, message: str, span, label: str) -> TileLangError:
    primary = None if span is NO_SPAN else Label.from_span(span, label)
    return TileLangError(Diagnostic(code, message, primary))


def _check_divisor(e: Node, divisor: Node) -> None:
    """A constant zero integer divisor is the user's error (often a `-D` value)."""
    if isinstance(divisor, Const) and divisor.value == 0 and dtypes.is_int(divisor.dtype):
        span = divisor.span if divisor.span is not NO_SPAN else e.span
        raise _user_error(DIVISION_BY_ZERO, "integer division by zero", span,
                          "this divisor is 0")


def _binary(e: Binary):
    if e.op in ("//", "%", "/"):
        _check_divisor(e, e.rhs)
    return _fold_binary(e)


def _fold_binary(e: Binary):
    if isinstance(e.lhs, Const) and isinstance(e.rhs, Const):
        folded = fold_binary(e)
        if folded is not None:
            return folded
    if e.op in ("and", "or"):
        return _logical(e)
    if dtypes.is_int(e.dtype):
        return _int_identity(e)
    if dtypes.is_float(e.dtype):
        return _float_identity(e)
    if e.op in ("min", "max") and e.lhs == e.rhs:
        return e.lhs
    return None


def _logical(e: Binary):
    # Expressions have no side effects, so a constant operand decides or vanishes.
    absorbing = e.op == "or"          # True absorbs `or`, False absorbs `and`
    for const, other in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
        if isinstance(const, Const):
            return make_const(absorbing, "bool", e.span) if const.value == absorbing else other
    if e.lhs == e.rhs:
        return e.lhs
    return None


def _float_identity(e: Binary):
    if e.op == "*" and is_const(e.rhs, 1):
        return e.lhs
    if e.op == "*" and is_const(e.lhs, 1):
        return e.rhs
    if e.op == "-" and is_const(e.rhs, 0):
        return e.lhs
    if e.op in ("min", "max") and e.lhs == e.rhs:
        return e.lhs
    return None


def _int_identity(e: Binary):
    op, a, b = e.op, e.lhs, e.rhs
    if op in ("+", "*") and isinstance(a, Const) and not isinstance(b, Const):
        # Constants to the right, so that (x + c1) + c2 meets its pattern below.
        return _int_identity(Binary(op, b, a, e.dtype, span=e.span)) or \
            Binary(op, b, a, e.dtype, span=e.span)
    if op in ("+", "-") and is_const(b, 0):
        return a
    if op == "*" and is_const(b, 1):
        return a
    if op == "*" and is_const(b, 0):
        return make_const(0, e.dtype, e.span)
    if op == "-" and a == b:
        return make_const(0, e.dtype, e.span)
    if op in ("//", "/") and is_const(b, 1):
        return a
    if op == "%" and is_const(b, 1):
        return make_const(0, e.dtype, e.span)
    if op in ("min", "max") and a == b:
        return a
    if op in ("+", "-") and isinstance(b, Const):
        return _combine_offsets(e)
    return None


def _combine_offsets(e: Binary):
    """(x + c1) + c2 -> x + (c1 + c2), and the same with subtractions."""
    inner = e.lhs
    if not (isinstance(inner, Binary) and inner.op in ("+", "-")
            and isinstance(inner.rhs, Const) and inner.dtype == e.dtype):
        return None
    c1 = inner.rhs.value if inner.op == "+" else -inner.rhs.value
    c2 = e.rhs.value if e.op == "+" else -e.rhs.value
    total = c1 + c2
    if total == 0:
        return inner.lhs
    op, value = ("+", total) if total > 0 else ("-", -total)
    return Binary(op, inner.lhs, make_const(value, e.dtype), e.dtype, span=e.span)


def _unary(e: Unary):
    if isinstance(e.operand, Const):
        return fold_unary(e)
    if isinstance(e.operand, Unary) and e.operand.op == e.op:
        return e.operand.operand          # --x and not not x
    return None


def _call(e: Call):
    if e.name == "ceildiv":
        _check_divisor(e, e.args[1])
    return _fold_call(e)


def _fold_call(e: Call):
    if all(isinstance(a, Const) for a in e.args):
        return fold_call(e)
    return None


def _cast(e: Cast):
    if e.value.dtype == e.dtype:
        return e.value
    if isinstance(e.value, Const):
        return fold_cast(e)
    return None


def _bitcast(e: BitCast):
    if e.value.dtype == e.dtype:
        return e.value
    if isinstance(e.value, Const):
        return fold_bitcast(e)
    return None


def _select(e: Select):
    if isinstance(e.cond, Const):
        return e.true_value if e.cond.value else e.false_value
    if e.true_value == e.false_value:
        return e.true_value
    return None


# ----------------------------------------------------------------------------- statements

EMPTY = Seq(())


def _seq(s: Seq):
    if len(s.stmts) == 1 or any(isinstance(x, Seq) for x in s.stmts):
        return make_body(s.stmts, s.span)
    return None


def _if(s: If):
    if isinstance(s.cond, Const):
        chosen = s.then_body if s.cond.value else s.else_body
        return EMPTY if chosen is None else chosen
    return None


def _for(s: For):
    if not isinstance(s.extent, Const):
        return None
    if s.extent.value <= 0:
        return EMPTY
    if s.extent.value == 1 and s.kind != "parallel":
        # The body was simplified with the var unknown; substituting may enable more.
        # A T.Parallel loop stays: it is an element-wise nest to the code generators
        # (tcsim lowers it to whole-tile vector instructions, which a plain store is not).
        # A divisor the substitution makes 0 divides by zero at run time (0), as the
        # loop would: no diagnostic, the source's own constants were checked already.
        return rewrite(substitute(s.body, {s.var: s.min}), _unchecked_node)
    return None


_HANDLERS = {
    Binary: _binary, Unary: _unary, Call: _call, Cast: _cast, BitCast: _bitcast, Select: _select,
    Seq: _seq, If: _if, For: _for,
}
_UNCHECKED = {**_HANDLERS, Binary: _fold_binary, Call: _fold_call}

__all__ = ["simplify", "simplify_lowered", "simplify_node", "EMPTY"]
