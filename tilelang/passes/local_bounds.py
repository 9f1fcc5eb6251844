"""A user-error check run by `predicate`: block-local accesses that surely go out of bounds.

Global tensors are guarded (ragged tiles are legal); shared / fragment / local buffers
are not, so an index that leaves such a buffer is a bug in the kernel. Only certain
cases are reported, never a guess: the index is affine (+, -, * by a constant) in loop
and block variables whose ranges are constant, so the interval ends are values the index
really takes; the buffer extent is constant; and no `if` / `T.if_then_else` encloses the
access (it might be the user's own guard).
"""
from __future__ import annotations

from ..diagnostics import Diagnostic, Label, TileLangError
from ..diagnostics.codes_passes import LOCAL_OUT_OF_BOUNDS
from ..ir import (Const, Var, Binary, Select, Load, Store, Atomic, For, If, Kernel, Seq,
                  PrimFunc, NO_SPAN, children)


def check_local_bounds(func: PrimFunc) -> None:
    """Raise TileLangError (TL0402) for the first block-local access surely out of bounds."""
    _visit(func.body, {})


def _visit(node, ranges: dict) -> None:
    if isinstance(node, (If, Select)):
        return                       # possibly guarded by the user: not certain
    if isinstance(node, For):
        _visit(node.min, ranges)
        _visit(node.extent, ranges)
        inner = dict(ranges)
        inner.pop(node.var.name, None)
        if isinstance(node.min, Const) and isinstance(node.extent, Const) \
                and node.extent.value > 0:
            inner[node.var.name] = (node.min.value, node.min.value + node.extent.value - 1)
        _visit(node.body, inner)
        return
    if isinstance(node, Kernel):
        inner = dict(ranges)
        for var, g in zip(node.block_vars, node.grid):
            if isinstance(g, Const) and g.value > 0:
                inner[var.name] = (0, g.value - 1)
        _visit(node.body, inner)
        return
    if isinstance(node, (Load, Store, Atomic)) and node.buffer.scope != "global":
        _check_access(node, ranges)
    if isinstance(node, Seq):
        for s in node.stmts:
            _visit(s, ranges)
        return
    for child in children(node):
        _visit(child, ranges)


def _check_access(node, ranges: dict) -> None:
    buf = node.buffer
    for dim, (index, extent) in enumerate(zip(node.indices, buf.shape)):
        if not isinstance(extent, Const):
            continue
        hull = _exact_hull(index, ranges)
        if hull is None:
            continue
        lo, hi = hull
        if lo < 0 or hi >= extent.value:
            span = index.span if index.span is not NO_SPAN else node.span
            primary = None if span is NO_SPAN else Label.from_span(
                span, f"reaches {hi if hi >= extent.value else lo}")
            raise TileLangError(Diagnostic(
                LOCAL_OUT_OF_BOUNDS,
                f"index out of bounds of `{buf.name}`: index {dim} takes values "
                f"{lo}..{hi} but the extent is {extent.value}", primary,
                help="fix the loop extent or the buffer's shape"))


def _exact_hull(e, ranges: dict) -> tuple[int, int] | None:
    """(min, max) of an affine index over independent box-shaped variables: both ends
    are attained. None when `e` is not of that form."""
    if isinstance(e, Const) and isinstance(e.value, int):
        return e.value, e.value
    if isinstance(e, Var):
        return ranges.get(e.name)
    if not isinstance(e, Binary) or e.op not in ("+", "-", "*"):
        return None
    if e.op == "*":
        for a, b in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if isinstance(b, Const) and isinstance(b.value, int):
                hull = _exact_hull(a, ranges)
                if hull is None:
                    return None
                ends = (hull[0] * b.value, hull[1] * b.value)
                return min(ends), max(ends)
        return None
    if _shared_vars(e.lhs, e.rhs):
        return None                  # i - i: the ends of the two sides are not independent
    a, b = _exact_hull(e.lhs, ranges), _exact_hull(e.rhs, ranges)
    if a is None or b is None:
        return None
    if e.op == "+":
        return a[0] + b[0], a[1] + b[1]
    return a[0] - b[1], a[1] - b[0]


def _shared_vars(a, b) -> bool:
    return bool(_vars(a) & _vars(b))


def _vars(e) -> set[str]:
    out, stack = set(), [e]
    while stack:
        n = stack.pop()
        if isinstance(n, Var):
            out.add(n.name)
        stack.extend(children(n))
    return out
