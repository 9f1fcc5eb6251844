"""`predicate`: make every global access that may fall outside its tensor safe.

Ragged sizes (M = 503 with 128-row tiles) make the boundary blocks' tiles hang over the
tensor's edge. For each Load / Store / Atomic on a "global" buffer, the conditions
`0 <= index` and `index < shape[d]` that the interval analysis (bounds.py) cannot prove
become guards: stores and atomics are wrapped in `If(cond, ...)`, loads in
`Select(cond, load, 0)` (codegen evaluates only the chosen arm, and T.copy defines
out-of-bounds reads as 0).

A load whose conditions are already implied (by the guard of the store it feeds, by an
enclosing `if`, or by the condition of an enclosing `T.if_then_else`) is not guarded
again. Adjacent statements with the same guard share one `if`, and guard conjuncts that
do not depend on a loop's variable are hoisted out of that loop, so the innermost loop
tests only its own index.

Block-local buffers are not guarded; an access that surely leaves one is reported as a
user error (local_bounds.py).
"""
from __future__ import annotations

from dataclasses import replace

from ..ir import (Expr, Const, Var, Binary, Cast, Select, Load, Stmt, Seq, Let, Alloc, For, If,
                  Kernel, Module, PrimFunc, Buffer, walk)
from .bounds import Bounds, loop_interval, snapshot
from ..ir.canon import canonicalize, make_body
from .fold import zero
from .local_bounds import check_local_bounds


def predicate(module: Module) -> Module:
    return canonicalize(replace(module, funcs=tuple(_predicate_func(f) for f in module.funcs)))


def _predicate_func(func: PrimFunc) -> PrimFunc:
    check_local_bounds(func)
    guard = _Guard(Bounds({s.name for s in func.symbols}))
    return replace(func, body=guard.stmt(func.body, {}, frozenset()))


def conjuncts(cond: Expr) -> list[Expr]:
    if isinstance(cond, Binary) and cond.op == "and":
        return conjuncts(cond.lhs) + conjuncts(cond.rhs)
    return [cond]


def conjoin(conds: list[Expr], span=None) -> Expr:
    result = conds[0]
    for c in conds[1:]:
        result = Binary("and", result, c, "bool", span=span or c.span)
    return result


class _Guard:
    def __init__(self, bounds: Bounds):
        self.bounds = bounds

    # ------------------------------------------------------------------ conditions

    def access_conds(self, env: dict, buf: Buffer, indices) -> list[Expr]:
        """The conditions, not provable statically, under which buf[indices] is inside."""
        if buf.scope != "global":
            return []
        conds = []
        for index, size in zip(indices, buf.shape):
            low_ok, high_ok = self.bounds.in_bounds(env, index, size)
            if not low_ok:
                conds.append(Binary(">=", index, zero(index.dtype), "bool", span=index.span))
            if not high_ok:
                if size.dtype != index.dtype:
                    size = Cast(size, index.dtype, span=size.span)
                conds.append(Binary("<", index, size, "bool", span=index.span))
        return conds

    # ------------------------------------------------------------------ expressions

    def expr(self, e: Expr, env: dict, implied: frozenset) -> Expr:
        if isinstance(e, (Const, Var)):
            return e
        if isinstance(e, Load):
            indices = tuple(self.expr(i, env, implied) for i in e.indices)
            load = e if indices == e.indices else replace(e, indices=indices)
            missing = [c for c in self.access_conds(env, e.buffer, indices)
                       if c not in implied]
            if not missing:
                return load
            return Select(conjoin(missing, e.span), load, zero(e.dtype), e.dtype, span=e.span)
        if isinstance(e, Select):
            cond = self.expr(e.cond, env, implied)
            # The true arm only runs where the condition holds.
            inside = implied | frozenset(conjuncts(cond))
            return replace(e, cond=cond, true_value=self.expr(e.true_value, env, inside),
                           false_value=self.expr(e.false_value, env, implied))
        return self._rebuild(e, env, implied)

    def _rebuild(self, e: Expr, env: dict, implied: frozenset) -> Expr:
        changes = {}
        for name in ("lhs", "rhs", "operand", "value"):
            child = getattr(e, name, None)
            if isinstance(child, Expr):
                new = self.expr(child, env, implied)
                if new is not child:
                    changes[name] = new
        if hasattr(e, "args"):
            args = tuple(self.expr(a, env, implied) for a in e.args)
            if any(a is not b for a, b in zip(args, e.args)):
                changes["args"] = args
        return replace(e, **changes) if changes else e

    # ------------------------------------------------------------------ statements

    def stmt(self, s: Stmt, env: dict, implied: frozenset) -> Stmt:
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            return s            # tile ops: lowered before this pass runs
        return method(s, env, implied)

    def s_Seq(self, s: Seq, env: dict, implied: frozenset) -> Stmt:
        env = dict(env)         # Lets bind for the rest of this Seq only
        return replace(s, stmts=_merge_guards([self.stmt(x, env, implied) for x in s.stmts]))

    def s_Let(self, s: Let, env: dict, implied: frozenset) -> Stmt:
        value = self.expr(s.value, env, implied)
        env[s.var.name] = snapshot(self.bounds.interval(env, value))
        return replace(s, value=value)

    def s_Alloc(self, s: Alloc, env: dict, implied: frozenset) -> Stmt:
        if s.init is None:
            return s
        return replace(s, init=self.expr(s.init, env, implied))

    def s_Store(self, s, env: dict, implied: frozenset) -> Stmt:
        indices = tuple(self.expr(i, env, implied) for i in s.indices)
        conds = [c for c in self.access_conds(env, s.buffer, indices) if c not in implied]
        value = self.expr(s.value, env, implied | frozenset(conds))
        new = replace(s, indices=indices, value=value)
        return If(conjoin(conds, s.span), new, span=s.span) if conds else new

    s_Atomic = s_Store

    def s_If(self, s: If, env: dict, implied: frozenset) -> Stmt:
        cond = self.expr(s.cond, env, implied)
        # Memory may change inside the body, so only load-free facts stay true there.
        facts = frozenset(c for c in conjuncts(cond) if _load_free(c))
        then = self.stmt(s.then_body, env, implied | facts)
        other = None if s.else_body is None else self.stmt(s.else_body, env, implied)
        return replace(s, cond=cond, then_body=then, else_body=other)

    def s_For(self, s: For, env: dict, implied: frozenset) -> Stmt:
        start = self.expr(s.min, env, implied)
        extent = self.expr(s.extent, env, implied)
        inner = dict(env)
        inner[s.var.name] = loop_interval(self.bounds, env, start, extent)
        body = self.stmt(s.body, inner, implied)
        return _hoist(replace(s, min=start, extent=extent, body=body))

    def s_Kernel(self, s: Kernel, env: dict, implied: frozenset) -> Stmt:
        grid = tuple(self.expr(g, env, implied) for g in s.grid)
        inner = dict(env)
        for var, g in zip(s.block_vars, grid):
            inner[var.name] = loop_interval(self.bounds, env, zero(g.dtype), g)
        return replace(s, grid=grid, body=self.stmt(s.body, inner, implied))


def _hoist(loop: For) -> Stmt:
    """For(v, If(a and b, S)) -> If(a, For(v, If(b, S))) when `a` does not mention v
    and reads no memory.

    Only a guard that is the loop's whole body is hoisted: then no statement of the loop
    runs without it, and skipping the loop when `a` is false changes nothing."""
    body = loop.body
    if isinstance(body, Seq) and len(body.stmts) == 1:
        body = body.stmts[0]
    if not isinstance(body, If) or body.else_body is not None:
        return loop
    outer, inner = [], []
    for c in conjuncts(body.cond):
        uses = {n.name for n in walk(c) if isinstance(n, Var)}
        # A load may read what the loop writes: such a guard must stay per iteration.
        invariant = loop.var.name not in uses and _load_free(c)
        (outer if invariant else inner).append(c)
    if not outer:
        return loop
    new_body = body.then_body if not inner else replace(body, cond=conjoin(inner, body.span))
    return If(conjoin(outer, body.span), replace(loop, body=new_body), span=body.span)


def _merge_guards(stmts: list[Stmt]) -> tuple[Stmt, ...]:
    """Adjacent `if c:` statements with the same load-free condition share one `if`
    (the condition cannot change between them), so a loop body of several guarded
    stores becomes a single guard that `_hoist` can lift."""
    out: list[Stmt] = []
    for s in stmts:
        prev = out[-1] if out else None
        if (isinstance(s, If) and isinstance(prev, If) and s.else_body is None
                and prev.else_body is None and s.cond == prev.cond and _load_free(s.cond)):
            out[-1] = replace(prev, then_body=make_body([prev.then_body, s.then_body]))
        else:
            out.append(s)
    return tuple(out)


def _load_free(e: Expr) -> bool:
    return not any(isinstance(n, Load) for n in walk(e))


__all__ = ["predicate", "conjuncts", "conjoin"]
