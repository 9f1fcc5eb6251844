"""Which buffers of a `T.Pipelined` loop are stage buffers: the one rule.

A pipelined backend issues the loads of later iterations while earlier ones still compute,
so a buffer those loads fill needs its own copy per stage (tcsim's rings), and the arena
planner must keep it live for the whole loop (`passes/liveness.py`). Both ask this module.

Statement i of the loop body is the *producer* of a stage buffer B when (from `effects()`):
it writes B and nothing else; B is block-local; it reads global buffers only (at least
one); no earlier statement of the body mentions B (its allocation included) and no later
one writes B; B is not used
outside the loop; and no statement of the loop writes what the producer reads (else a load
issued ahead would miss that write) — its offsets included, through the body's lets
(`offset = idx[0]; T.copy(A[offset], B)` with `idx` written in the loop is no producer).
"""
from __future__ import annotations

from .nodes import Buffer, Let, Load, Seq, Stmt
from .visitor import walk


def stage_producers(body: Stmt, is_local, used_outside) -> dict[str, int]:
    """{stage buffer name: index of its producer among the loop body's statements}.
    `is_local(name)`: whether the buffer is block-local (the caller's allocations);
    `used_outside`: names of buffers used outside the loop."""
    stmts = body.stmts if isinstance(body, Seq) else (body,)
    effects = [s.effects() for s in stmts]
    loop_writes = frozenset().union(*(e.writes() for e in effects))
    found = {}
    for i, eff in enumerate(effects):
        written = eff.writes()
        if len(written) != 1:
            continue
        (name,) = written
        reads = eff.read_buffers()
        if not is_local(name) or name in used_outside or not reads \
                or any(b.scope != "global" for b in reads) \
                or any(b.name in loop_writes for b in reads):
            continue
        if any(name in _mentioned(s) for s in stmts[:i]) \
                or any(name in e.writes() for e in effects[i + 1:]):
            continue
        if _offsets_read(stmts[i], stmts[:i]) & loop_writes:
            continue
        found[name] = i
    return found


def _offsets_read(stmt: Stmt, before) -> set[str]:
    """Buffers `stmt` loads from in its expressions (offsets), following the lets among
    the statements `before` it."""
    lets = {s.var: s.value for s in before if isinstance(s, Let)}
    seen, todo, names = set(), [stmt], set()
    while todo:
        for n in walk(todo.pop()):
            if isinstance(n, Load):
                names.add(n.buffer.name)
            elif n in lets and id(n) not in seen:
                seen.add(id(n))
                todo.append(lets[n])
    return names


def _mentioned(stmt: Stmt) -> frozenset[str]:
    return frozenset(n.name for n in walk(stmt) if isinstance(n, Buffer))
