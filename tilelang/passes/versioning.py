"""`versioning`: a guard-free copy of each loop nest for the tiles that are in bounds.

After `predicate`, the copy of a tile into shared memory tests every element
(`T.if_then_else(by * 128 + i < M and k * 32 + j < K, A[..], 0)`), although only the
blocks on the matrix's ragged edge can fail the test. For a loop nest over a constant
box (every loop of constant min and extent), a guard that is affine in the nest's loop
variables holds for the whole box iff it holds at the box's corners (an affine function
takes its extremes there). So the nest becomes

    if <every guard holds at every corner>:
        <the nest, guards removed>        # interior tiles: plain vector loads and stores
    else:
        <the nest as it was>              # edge tiles

The test is evaluated once per nest. Guards that are not affine (division, modulo), that
read memory, or that use a value defined inside the nest stay where they are; a nest with
more than 2^3 corners in one guard is left alone.
"""
from __future__ import annotations

from dataclasses import replace
from itertools import product

from .. import dtypes
from ..ir import (Binary, Cast, Const, Expr, For, If, Kernel, Let, Load, Module, PrimFunc,
                  Select, Seq, Stmt, Var, rewrite, substitute, walk)
from ..ir.canon import canonicalize
from .fold import make_const
from .names import NameSupply, names_in
from .predicate import conjoin, conjuncts

_MAX_VARS = 3
_COMPARE = ("<", "<=", ">", ">=")


def versioning(module: Module) -> Module:
    return canonicalize(replace(module, funcs=tuple(_version_func(f) for f in module.funcs)))


def _version_func(func: PrimFunc) -> PrimFunc:
    names = NameSupply(names_in(func))
    return replace(func, body=_visit(func.body, names))


def _visit(s: Stmt, names: NameSupply) -> Stmt:
    if isinstance(s, For) and _box(s):
        versioned = _version(s, names)
        if versioned is not None:
            return versioned
    return _map_children(s, names)


def _map_children(s: Stmt, names: NameSupply) -> Stmt:
    """`s` with `_visit` applied to its direct child statements."""
    if isinstance(s, Seq):
        return replace(s, stmts=tuple(_visit(c, names) for c in s.stmts))
    if isinstance(s, (For, Kernel)):
        return replace(s, body=_visit(s.body, names))
    if isinstance(s, If):
        return replace(s, then_body=_visit(s.then_body, names),
                       else_body=None if s.else_body is None else _visit(s.else_body, names))
    return s


def _box(loop: For) -> bool:
    """Every loop of the nest has a constant min and extent, and the nest is one loop
    nest (no sequence of loops inside): each copy of a sequence is versioned on its own,
    which keeps the two versions short and the buffers' lifetimes apart."""
    for n in walk(loop):
        if isinstance(n, For) and not (isinstance(n.min, Const) and isinstance(n.extent, Const)):
            return False
        if isinstance(n, Seq) and sum(isinstance(c, For) for c in n.stmts) > 1:
            return False
    return True


def _version(nest: For, names: NameSupply) -> Stmt | None:
    loops = {n.var: (int(n.min.value), int(n.min.value + n.extent.value - 1))
             for n in walk(nest) if isinstance(n, For)}
    inner_lets = {n.var for n in walk(nest) if isinstance(n, Let)}
    guards = []
    for n in walk(nest):
        if isinstance(n, Select) or isinstance(n, If):
            for c in conjuncts(n.cond):
                if _removable(c, loops, inner_lets) and c not in guards:
                    guards.append(c)
    if not guards:
        return None
    removable = set(guards)
    fast = rewrite(nest, lambda n: _strip(n, removable))
    if fast == nest:
        return None
    # the two copies bind their own variables (a name is bound once per function)
    bound = [n.var for n in walk(fast) if isinstance(n, (For, Let))]
    fast = substitute(fast, {v: names.var(v.name, v.dtype) for v in bound})
    corner_tests = []
    for t in (t for g in guards for t in _corners(g, loops)):
        if t not in corner_tests:
            corner_tests.append(t)
    return If(conjoin(corner_tests, nest.span), fast, nest, span=nest.span)


def _removable(cond: Expr, loops: dict, inner_lets: set) -> bool:
    if not (isinstance(cond, Binary) and cond.op in _COMPARE):
        return False
    if any(isinstance(n, Load) for n in walk(cond)):
        return False
    used = {n for n in walk(cond) if isinstance(n, Var)}
    if used & inner_lets or len([v for v in used if v in loops]) > _MAX_VARS:
        return False
    loop_vars = set(loops)
    return _affine(cond.lhs, loop_vars) and _affine(cond.rhs, loop_vars)


def _affine(e: Expr, loop_vars: set) -> bool:
    """`e` is an integer expression affine in `loop_vars` (coefficients may be any
    loop-invariant expression)."""
    if not dtypes.is_int(e.dtype):
        return False
    if isinstance(e, (Const, Var)):
        return True
    if isinstance(e, Cast):
        return dtypes.is_int(e.value.dtype) and dtypes.bits(e.dtype) >= dtypes.bits(
            e.value.dtype) and _affine(e.value, loop_vars)
    if isinstance(e, Binary) and e.op in ("+", "-"):
        return _affine(e.lhs, loop_vars) and _affine(e.rhs, loop_vars)
    if isinstance(e, Binary) and e.op == "*":
        free = [not (set(walk(x)) & loop_vars) for x in (e.lhs, e.rhs)]
        return any(free) and _affine(e.lhs, loop_vars) and _affine(e.rhs, loop_vars)
    return not (set(walk(e)) & loop_vars)        # anything invariant is a coefficient


def _corners(cond: Binary, loops: dict) -> list[Expr]:
    used = [v for v in loops if any(n == v for n in walk(cond))]
    tests = []
    for choice in product(*(loops[v] for v in used)):
        mapping = {v: make_const(x, v.dtype) for v, x in zip(used, choice)}
        tests.append(substitute(cond, mapping))
    return tests


def _strip(n, removable: set):
    """Drop the removable conjuncts of a Select's or an If's condition."""
    if not isinstance(n, (Select, If)):
        return None
    kept = [c for c in conjuncts(n.cond) if c not in removable]
    if len(kept) == len(conjuncts(n.cond)):
        return None
    if isinstance(n, Select):
        return n.true_value if not kept else replace(n, cond=conjoin(kept, n.span))
    if not kept:
        return n.then_body
    return replace(n, cond=conjoin(kept, n.span))


__all__ = ["versioning"]
