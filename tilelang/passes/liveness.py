"""Liveness of block-local buffers over the linearised block program.

The kernel body is numbered in program order: every leaf statement, every loop header and
every `if` condition is one *point*. A buffer's live interval starts at its first access
and ends at its last one (writes count: a dead store still needs the buffer's memory).
Loops then widen intervals, because a loop runs its body more than once:

* a buffer used inside loop L and also before or after it is live for the whole of L
  (a value from before the loop is read in every iteration; a value the loop leaves
  behind must survive the iterations that no longer touch it);
* a buffer that an iteration of L may read before that iteration fully writes it (an
  *upward-exposed* read: the value comes from the previous iteration, across the back
  edge) is live for the whole of L;
* a *stage buffer* of a `T.Pipelined(n, num_stages=s)` loop with s > 1 — filled from global
  memory by one statement of the body, written nowhere else and used only inside the loop —
  is live for the whole loop, since a pipelined backend issues the loads of later
  iterations while earlier ones still read it; where the target multi-buffers it
  (`rings`), it takes s copies.

These rules are applied to a fixed point (widening for an inner loop can make a buffer
reach outside an outer one). What a statement reads and writes is its `effects()` (tile
ops and lowered loops of stores alike; a statement that does not say reads and writes
every buffer it mentions, which is always safe); which buffers are stage buffers is
`ir/pipelining.py`'s rule, the one tcsim's code generator follows too.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from .. import dtypes
from ..ir.nodes import (Alloc, Buffer, Const, For, If, Kernel, Let, Load, Seq, Stmt, Store,
                        Var, While)
from ..ir.pipelining import stage_producers
from ..ir.visitor import walk

PLANNED_SCOPES = ("shared", "fragment", "local")   # scalars (`var`) stay in registers


@dataclass(frozen=True)
class Live:
    """One planned buffer: its live interval [start, end] in program points (inclusive)
    and the number of copies it needs (pipeline stages kept apart; 1 otherwise)."""
    buffer: Buffer
    start: int
    end: int
    stages: int = 1

    @property
    def name(self) -> str:
        return self.buffer.name

    @property
    def nbytes(self) -> int:
        return buffer_bytes(self.buffer)

    def overlaps(self, other: "Live") -> bool:
        return self.start <= other.end and other.start <= self.end


def buffer_bytes(buf: Buffer) -> int:
    return prod(int(d.value) for d in buf.shape) * dtypes.nbytes(buf.dtype)


def plannable(buf: Buffer) -> bool:
    return buf.scope in PLANNED_SCOPES and all(isinstance(d, Const) for d in buf.shape)


def kernel_of(body) -> Kernel | None:
    return next((n for n in walk(body) if isinstance(n, Kernel)), None)


def block_liveness(kernel: Kernel, rings: bool = False) -> list[Live]:
    """The live interval of every plannable block-local buffer of `kernel`, in
    allocation order. `rings`: pipeline stage buffers take `num_stages` copies."""
    lin = _Linear()
    lin.visit(kernel.body)
    flow = _Flow()
    intervals = {n: [min(ps), max(ps)] if ps else [lin.alloc_pos[n]] * 2
                 for n, ps in ((n, lin.uses.get(n, [])) for n in lin.allocs)}
    stage_of = {id(loop): _stage_buffers(loop, lin, start, end)
                for start, end, loop in lin.loops}
    stages = {}
    for _, _, loop in lin.loops:
        for name in stage_of[id(loop)]:
            stages[name] = max(stages.get(name, 1), int(loop.annotation("num_stages")))
    _widen(intervals, lin.loops, flow, stage_of)
    return [Live(buf, *intervals[buf.name], stages.get(buf.name, 1) if rings else 1)
            for buf in lin.allocs.values()]


def _widen(intervals: dict, loops, flow: "_Flow", stage_of: dict) -> None:
    """Apply the loop rules of the module docstring until nothing changes (`stage_of`:
    id of a loop -> its stage buffers)."""
    changed = True
    while changed:
        changed = False
        for start, end, loop in loops:
            carried = flow.exposed(loop.body) | stage_of[id(loop)]
            for name, iv in intervals.items():
                if iv[1] < start or iv[0] > end:
                    continue
                inside = start <= iv[0] and iv[1] <= end
                if inside and name not in carried:
                    continue
                new = [min(iv[0], start), max(iv[1], end)]
                if new != iv:
                    intervals[name] = new
                    changed = True


def _stage_buffers(loop: For, lin: "_Linear", start: int, end: int) -> frozenset:
    """The stage buffers of a pipelined loop with more than one stage (docstring)."""
    if not isinstance(loop, For) or loop.kind != "pipelined" or int(loop.annotation("num_stages", 1) or 1) < 2:
        return frozenset()
    outside = {name for name, points in lin.uses.items()
               if any(p < start or p > end for p in points)}
    return frozenset(stage_producers(loop.body, lambda name: name in lin.allocs, outside))


# ----------------------------------------------------------------------------- program points

class _Linear:
    """Numbers the program points; records each buffer's use points and every loop's
    span of points."""

    def __init__(self):
        self.pos = -1
        self.allocs: dict[str, Buffer] = {}
        self.alloc_pos: dict[str, int] = {}
        self.uses: dict[str, list[int]] = {}
        self.loops: list[tuple[int, int, For]] = []

    def point(self, *nodes) -> int:
        self.pos += 1
        for node in nodes:
            if node is None:
                continue
            for n in walk(node):
                if isinstance(n, Buffer) and n.name in self.allocs:
                    self.uses.setdefault(n.name, []).append(self.pos)
        return self.pos

    def visit(self, s) -> None:
        if isinstance(s, Seq):
            for c in s.stmts:
                self.visit(c)
        elif isinstance(s, Alloc):
            if plannable(s.buffer):
                self.allocs[s.buffer.name] = s.buffer
                self.alloc_pos[s.buffer.name] = self.pos + 1
            self.point(s.init)
        elif isinstance(s, For):
            start = self.point(s.min, s.extent)
            self.visit(s.body)
            self.loops.append((start, self.pos, s))
        elif isinstance(s, While):               # the condition is re-read each iteration
            start = self.point(s.cond)
            self.visit(s.body)
            self.loops.append((start, self.pos, s))
        elif isinstance(s, If):
            self.point(s.cond)
            self.visit(s.then_body)
            if s.else_body is not None:
                self.visit(s.else_body)
        else:
            self.point(s)


# ----------------------------------------------------------------------------- data flow

class _Flow:
    """Which buffers a statement may read before it has fully written them
    (`exposed`), and which it surely overwrites completely (`kills`)."""

    def __init__(self):
        self._memo: dict[int, tuple[frozenset, frozenset]] = {}

    def exposed(self, s) -> frozenset:
        return self._facts(s)[0]

    def kills(self, s) -> frozenset:
        return self._facts(s)[1]

    def _facts(self, s) -> tuple[frozenset, frozenset]:
        key = id(s)
        if key not in self._memo:
            self._memo[key] = (s, self._compute(s))   # keep s alive: ids stay unique
        return self._memo[key][1]

    def _compute(self, s) -> tuple[frozenset, frozenset]:
        if isinstance(s, Seq):
            exposed, killed = set(), set()
            for c in s.stmts:
                ex, k = self._facts(c)
                exposed |= ex - killed
                killed |= k
            return frozenset(exposed), frozenset(killed)
        if isinstance(s, If):
            ex = _loads(s.cond) | self.exposed(s.then_body)
            if s.else_body is None:
                return ex, frozenset()
            return ex | self.exposed(s.else_body), \
                self.kills(s.then_body) & self.kills(s.else_body)
        if isinstance(s, For):
            return self._loop(s)
        if isinstance(s, While):                 # may run zero times: kills nothing
            return _loads(s.cond) | self.exposed(s.body), frozenset()
        effects = s.effects()
        return effects.reads(), effects.overwrites()

    def _loop(self, s: For) -> tuple[frozenset, frozenset]:
        """A loop may run zero times, so it kills nothing, except a *covering nest*:
        perfectly nested constant loops from 0 whose innermost body stores, at its top
        level, to every element of a buffer (indices: distinct nest variables with the
        buffer's extents). Reads of that buffer after the store at the same indices see
        this iteration's value and are not exposed."""
        bounds = _loads(s.min, s.extent)
        chain, body = _nest(s)
        stmts = body.stmts if isinstance(body, Seq) else (body,)
        exposed, killed = set(self.exposed(body)), set()
        for i, st in enumerate(stmts):
            if isinstance(st, Store) and _covers(st, chain):
                name = st.buffer.name
                killed.add(name)
                before = Seq(tuple(stmts[:i]))
                if name not in self.exposed(before) and name not in _loads(st.value) and \
                        not any(_reads_elsewhere(x, name, st.indices) for x in stmts[i + 1:]):
                    exposed.discard(name)
        return bounds | frozenset(exposed), frozenset(killed)


def _nest(s: For) -> tuple[dict, object]:
    """(var -> extent of the perfectly nested constant loops from 0 starting at `s`,
    their innermost body); ({}, s.body) when one of them is not such a loop."""
    chain, node = {}, s
    while True:
        if not (_is_zero(node.min) and isinstance(node.extent, Const)):
            return {}, s.body
        chain[node.var] = int(node.extent.value)
        inner = node.body
        if isinstance(inner, Seq) and len(inner.stmts) == 1:
            inner = inner.stmts[0]
        if not isinstance(inner, For):
            return chain, node.body
        node = inner


def _covers(st: Store, chain: dict) -> bool:
    used = []
    for idx, dim in zip(st.indices, st.buffer.shape):
        if not (isinstance(idx, Var) and idx in chain and isinstance(dim, Const)
                and chain[idx] == int(dim.value)):
            return False
        used.append(idx)
    return len(set(used)) == len(used) == st.buffer.ndim


def _reads_elsewhere(s, name: str, indices) -> bool:
    """Does `s` read buffer `name` other than at exactly `indices`, or touch it by anything
    but loads and stores (a tile op, an atomic)?"""
    for n in walk(s):
        if isinstance(n, Load) and n.buffer.name == name and n.indices != indices:
            return True
        if isinstance(n, Stmt) and not isinstance(n, _PLAIN) and name in n.effects().names():
            return True
    return False


# statements whose accesses are their loads and stores, which `_reads_elsewhere` sees
# one by one, or whose children it walks
_PLAIN = (Seq, For, If, Kernel, Let, Alloc, Store)


def _is_zero(e) -> bool:
    return isinstance(e, Const) and e.value == 0


def _loads(*nodes) -> frozenset:
    return frozenset(n.buffer.name for node in nodes if node is not None
                     for n in walk(node) if isinstance(n, Load))
