"""Dependent `T.Parallel` iterations, found at compile time where the indices are affine.

The iterations of a `T.Parallel` nest are independent: they run in any order, and on
tcsim all at once (a whole-tile VEC instruction reads every element before it writes
any). A body in which one iteration writes an element that another iteration reads or
writes (`t[i + 1] = t[i + 1] + t[i]`) therefore has no defined result: the CPU gave
1, 2, 3, 4... and tcsim 1, 2, 2, 2... This check proves such a conflict where it can:

* the iterations of the nest (its parallel loop variables P) and of the loops inside its
  body (I) are enumerated when their extents are constants and there are not too many
  (MAX_POINTS);
* an index is split into additive terms: those over P, I and constants are evaluated
  at every point; the others (block indices, outer loop variables, sizes) must be the
  same in the two accesses compared, so that they cancel;
* an access under an `if` (or in an arm of `T.if_then_else`) counts only at the points
  where the condition holds, when that condition is of the same kind.

A pair of accesses to one buffer, one of them a store, conflicts when they touch the same
element from two different points of P. Anything the check cannot decide (a gather
index, a product of loop variables, an unknown condition) is left alone; docs/semantics.md
says such programs are undefined. Atomics never conflict, and reads of elements that no
iteration writes (a broadcast row maximum) are what T.Parallel is for.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from math import prod

import numpy as np

from ..diagnostics import codes_tileops as C3
from ..ir.nodes import (Binary, Call, Cast, Const, Expr, For, If, Let, Load, Select, Seq,
                        Store, Unary, Var)
from .errors import fail

MAX_POINTS = 1 << 18            # iterations (P x I) enumerated per nest


class Unknown(Exception):
    """The check cannot decide this access: it is left alone."""


@dataclass
class Access:
    node: object                # the Load or Store
    buffer: str
    indices: tuple
    is_store: bool
    guards: tuple               # conditions under which it runs (True branch spelled)
    loops: tuple                # the inner loops (For) around it, outermost first


def check_parallel_nest(loop: For, reducers=frozenset()) -> None:
    """Raise TL0391 when two iterations of the parallel nest rooted at `loop` provably
    touch one element, at least one of them writing it. Buffers named in `reducers`
    (T.alloc_reducer) are meant to be updated by many iterations, as atomics are."""
    chain, body = [], loop
    while isinstance(body, For) and body.kind == "parallel":
        chain.append(body)
        body = body.body
    accesses = [a for a in _collect(body, (), (), {}) if a.buffer not in reducers]
    written = {a.buffer for a in accesses if a.is_store}
    relevant = [a for a in accesses if a.buffer in written]
    if not relevant:
        return
    try:
        space = _Space(chain)
    except Unknown:
        return
    for w in (a for a in relevant if a.is_store):
        for other in relevant:
            if other.buffer != w.buffer:
                continue
            try:
                hit = space.conflict(w, other)
            except Unknown:
                continue
            if hit is not None:
                raise _diagnostic(w, other, hit, space)


# ----------------------------------------------------------------------------- collection

def _collect(s, guards: tuple, loops: tuple, lets: dict) -> list[Access]:
    """Loads and stores of statement `s` (lets substituted, guards and loops recorded)."""
    out: list[Access] = []
    if isinstance(s, Seq):
        for child in s.stmts:
            out += _collect(child, guards, loops, lets)
    elif isinstance(s, Let):
        out += _loads(s.value, guards, loops, lets)
        lets[s.var] = _substitute(s.value, lets)
    elif isinstance(s, Store):
        indices = tuple(_substitute(i, lets) for i in s.indices)
        out.append(Access(s, s.buffer.name, indices, True, guards, loops))
        for e in s.indices + (s.value,):
            out += _loads(e, guards, loops, lets)
    elif isinstance(s, If):
        out += _loads(s.cond, guards, loops, lets)
        cond = _substitute(s.cond, lets)
        out += _collect(s.then_body, guards + (cond,), loops, dict(lets))
        if s.else_body is not None:
            out += _collect(s.else_body, guards + (Unary("not", cond, "bool"),), loops,
                            dict(lets))
    elif isinstance(s, For):
        out += _collect(s.body, guards, loops + (s,), dict(lets))
    else:
        # atomics never conflict; tile ops, allocations and the rest are not indexed here
        for e in _exprs_of(s):
            out += _loads(e, guards, loops, lets)
    return out


def _exprs_of(s) -> list:
    from ..ir.nodes import Atomic
    if isinstance(s, Atomic):
        return list(s.indices) + [s.value]
    return []


def _loads(e, guards, loops, lets) -> list[Access]:
    out: list[Access] = []
    if isinstance(e, Load):
        indices = tuple(_substitute(i, lets) for i in e.indices)
        out.append(Access(e, e.buffer.name, indices, False, guards, loops))
        for i in e.indices:
            out += _loads(i, guards, loops, lets)
    elif isinstance(e, Select):
        out += _loads(e.cond, guards, loops, lets)
        cond = _substitute(e.cond, lets)
        out += _loads(e.true_value, guards + (cond,), loops, lets)
        out += _loads(e.false_value, guards + (Unary("not", cond, "bool"),), loops, lets)
    elif isinstance(e, (Binary,)):
        out += _loads(e.lhs, guards, loops, lets) + _loads(e.rhs, guards, loops, lets)
    elif isinstance(e, (Unary, Cast)):
        out += _loads(e.operand if isinstance(e, Unary) else e.value, guards, loops, lets)
    elif isinstance(e, Call):
        for a in e.args:
            out += _loads(a, guards, loops, lets)
    return out


def _substitute(e, lets: dict):
    """`e` with the lets bound inside the nest replaced by their values."""
    if not lets:
        return e
    if isinstance(e, Var):
        return lets.get(e, e)
    if isinstance(e, Binary):
        return Binary(e.op, _substitute(e.lhs, lets), _substitute(e.rhs, lets), e.dtype)
    if isinstance(e, Unary):
        return Unary(e.op, _substitute(e.operand, lets), e.dtype)
    if isinstance(e, Cast):
        return Cast(_substitute(e.value, lets), e.dtype)
    if isinstance(e, Select):
        return Select(_substitute(e.cond, lets), _substitute(e.true_value, lets),
                      _substitute(e.false_value, lets), e.dtype)
    if isinstance(e, Call):
        return Call(e.name, tuple(_substitute(a, lets) for a in e.args), e.dtype)
    return e


# ----------------------------------------------------------------------------- the space

class _Space:
    """The parallel points P of a nest, as index arrays over a flat enumeration."""

    def __init__(self, chain: list[For]):
        self.vars = [f.var for f in chain]
        self.extents = [_const(f.extent) for f in chain]
        self.mins = [_const(f.min) for f in chain]
        self.size = prod(self.extents)
        if self.size < 2 or self.size > MAX_POINTS:
            raise Unknown

    def points(self, loops: tuple) -> tuple[dict, np.ndarray]:
        """(var -> values, flat P index) over P x (the inner loops), all points."""
        extents = self.extents + [_const(f.extent) for f in loops]
        mins = self.mins + [_const(f.min) for f in loops]
        if prod(extents) > MAX_POINTS:
            raise Unknown
        grids = np.indices(extents).reshape(len(extents), -1)
        env = {v: grids[k] + mins[k] for k, v in enumerate(self.vars + [f.var for f in loops])}
        flat_p = np.ravel_multi_index(tuple(grids[:len(self.vars)]), self.extents)
        return env, flat_p

    def conflict(self, w: Access, a: Access):
        """(point of w, point of a, element) where both touch one element from two
        different parallel points, or None."""
        inner = set(self.vars) | {f.var for f in w.loops + a.loops}
        wi, ai = _split_all(w.indices, inner), _split_all(a.indices, inner)
        if [o for _, o in wi] != [o for _, o in ai]:
            raise Unknown       # the outer parts differ: their values decide
        wdims, wp = self._dims(w, wi)
        adims, ap = self._dims(a, ai)
        if wp.size == 0 or ap.size == 0:
            return None
        wkeys, akeys = _linearize(wdims, adims, wp.size, ap.size)
        order = np.argsort(wkeys, kind="stable")
        sk, sp = wkeys[order], wp[order]
        uniq, first = np.unique(sk, return_index=True)
        last = np.append(first[1:], sk.size) - 1
        pmin, pmax = np.minimum.reduceat(sp, first), np.maximum.reduceat(sp, first)
        pos = np.clip(np.searchsorted(uniq, akeys), 0, uniq.size - 1)
        found = uniq[pos] == akeys
        clash = found & ((pmin[pos] != pmax[pos]) | (pmin[pos] != ap))
        if not clash.any():
            return None
        k = int(np.argmax(clash))
        p_a = int(ap[k])
        same_key = sp[first[pos[k]]:last[pos[k]] + 1]
        p_w = int(same_key[same_key != p_a][0])
        return p_w, p_a

    def _dims(self, access: Access, split):
        """(the index arrays, the P index) at the points where `access` runs."""
        env, flat_p = self.points(access.loops)
        mask = np.ones(flat_p.shape, dtype=bool)
        for g in access.guards:
            mask &= np.broadcast_to(_eval(g, env), flat_p.shape).astype(bool)
        dims = [np.broadcast_to(_eval_terms(terms, env), flat_p.shape)[mask]
                for terms, _ in split]
        return dims, flat_p[mask]

    def describe(self, flat: int) -> str:
        idx = np.unravel_index(flat, self.extents)
        return ", ".join(f"{v.name.split('%')[0]}={int(i) + m}"
                         for v, i, m in zip(self.vars, idx, self.mins))


def _const(e) -> int:
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return int(e.value)
    raise Unknown


def _linearize(wdims: list, adims: list, nw: int, na: int):
    """One int64 key per point for the index tuples of two accesses (`nw` and `na`
    points; mixed radix over their common range, so equal keys are equal elements)."""
    wkey, akey = np.zeros(nw, dtype=np.int64), np.zeros(na, dtype=np.int64)
    span = 1
    for wd, ad in zip(reversed(wdims), reversed(adims)):
        lo = min(int(wd.min()), int(ad.min()))
        hi = max(int(wd.max()), int(ad.max()))
        wkey += (wd.astype(np.int64) - lo) * span
        akey += (ad.astype(np.int64) - lo) * span
        span *= hi - lo + 1
        if span > 1 << 62:
            raise Unknown
    return wkey, akey


# ----------------------------------------------------------------------------- affine split

def _split_all(indices, inner: set) -> list:
    """Per index: (terms over inner vars and constants, outer terms as a canonical
    multiset). The outer terms of two accesses must be equal for their values to cancel."""
    return [_split(i, inner) for i in indices]


def _split(e, inner: set):
    terms: list = []
    _flatten(e, 1, terms)
    inside, outside = [], Counter()
    for coeff, term in terms:
        if term is None or _uses(term, inner):
            inside.append((coeff, term))
        else:
            outside[term] += coeff
    return inside, sorted(((repr(t), c) for t, c in outside.items() if c != 0))


def _flatten(e, scale: int, out: list) -> None:
    """`e` as a sum of (coefficient, term); constants have term None."""
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        out.append((scale * int(e.value), None))
    elif isinstance(e, Binary) and e.op in ("+", "-"):
        _flatten(e.lhs, scale, out)
        _flatten(e.rhs, -scale if e.op == "-" else scale, out)
    elif isinstance(e, Binary) and e.op == "*" and _is_int_const(e.rhs):
        _flatten(e.lhs, scale * int(e.rhs.value), out)
    elif isinstance(e, Binary) and e.op == "*" and _is_int_const(e.lhs):
        _flatten(e.rhs, scale * int(e.lhs.value), out)
    elif isinstance(e, Unary) and e.op == "-":
        _flatten(e.operand, -scale, out)
    else:
        out.append((scale, e))


def _is_int_const(e) -> bool:
    return isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool)


def _uses(e, names: set) -> bool:
    if isinstance(e, Var):
        return e in names
    if isinstance(e, Load):
        return True            # a value read at run time: never an outer constant
    for child in _children(e):
        if _uses(child, names):
            return True
    return False


def _children(e):
    if isinstance(e, Binary):
        return (e.lhs, e.rhs)
    if isinstance(e, Unary):
        return (e.operand,)
    if isinstance(e, Cast):
        return (e.value,)
    if isinstance(e, Select):
        return (e.cond, e.true_value, e.false_value)
    if isinstance(e, Call):
        return e.args
    return ()


# ----------------------------------------------------------------------------- evaluation

def _eval_terms(terms, env):
    total = 0
    for coeff, term in terms:
        total = total + coeff * (1 if term is None else _eval(term, env))
    return np.asarray(total, dtype=np.int64)


_OPS = {"+": np.add, "-": np.subtract, "*": np.multiply, "min": np.minimum,
        "max": np.maximum, "<": np.less, "<=": np.less_equal, ">": np.greater,
        ">=": np.greater_equal, "==": np.equal, "!=": np.not_equal,
        "and": np.logical_and, "or": np.logical_or}


def _eval(e: Expr, env: dict):
    """Integer / bool values of `e` at every point; Unknown for anything else."""
    if isinstance(e, Const):
        if isinstance(e.value, float):
            raise Unknown
        return np.asarray(e.value)
    if isinstance(e, Var):
        if e not in env:
            raise Unknown
        return env[e]
    if isinstance(e, Binary):
        a, b = _eval(e.lhs, env), _eval(e.rhs, env)
        if e.op in _OPS:
            return _OPS[e.op](a, b)
        if e.op in ("//", "%"):
            if np.any(b == 0):
                raise Unknown
            return np.floor_divide(a, b) if e.op == "//" else np.mod(a, b)
        raise Unknown
    if isinstance(e, Unary):
        v = _eval(e.operand, env)
        return np.logical_not(v) if e.op == "not" else np.negative(v)
    if isinstance(e, Cast) and e.dtype != "bool" and not e.dtype.startswith(("float", "bfloat")):
        return _eval(e.value, env)
    if isinstance(e, Select):
        return np.where(_eval(e.cond, env), _eval(e.true_value, env),
                        _eval(e.false_value, env))
    if isinstance(e, Call) and e.name == "ceildiv":
        a, b = (_eval(x, env) for x in e.args)
        if np.any(b == 0):
            raise Unknown
        return -np.floor_divide(-a, b)
    raise Unknown


# ----------------------------------------------------------------------------- diagnostic

def _diagnostic(w: Access, a: Access, hit, space: _Space):
    p_w, p_a = hit
    name = w.buffer
    what = "writes" if a.is_store else "reads"
    message = (f"iterations of this T.Parallel loop depend on each other: iteration "
               f"{space.describe(p_a)} {what} an element of `{name}` that iteration "
               f"{space.describe(p_w)} writes")
    if a.node is w.node:
        message = (f"iterations of this T.Parallel loop write the same element of `{name}`: "
                   f"iterations {space.describe(p_w)} and {space.describe(p_a)}")
    secondary = [] if a.node is w.node else [(w.node.span, "written here")]
    return fail(C3.DEPENDENT_PARALLEL, message, a.node.span,
                "another iteration's element" if a.node is not w.node else "same element",
                secondary=secondary,
                help="T.Parallel iterations run in any order (all at once on tcsim): use a "
                     "serial loop (`range`, `T.serial`) for a recurrence, or T.atomic_add / "
                     "T.reduce_* for a reduction")
