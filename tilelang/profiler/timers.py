"""The CPU timers build: the kernel with cycle-counter reads around its phases.

`instrument(func)` returns the kernel with one more tensor parameter per grid,
`tl_timers<g>` (int64, one row per block), and, in every block:

    t_block = T.cycle_counter()
    ... each phase statement s becomes:  t = T.cycle_counter(); s;
                                         tl_timers[b, 2 + phase] += T.cycle_counter() - t
    tl_timers[b, 0] = t_block; tl_timers[b, 1] = T.cycle_counter()

A phase statement is a tile op (a copy from global memory into a buffer a `T.gemm`
reads is "pack A" / "pack B", any other one "load"; a copy into global memory "store";
`T.gemm` "gemm"; reductions and elementwise loops "elementwise"; fills "fill"), wrapped
where it stands, inside the loops around it, so the rest of the kernel compiles as
before. The instrumented kernel is compiled by the ordinary pipeline (the passes see
tile ops as usual) and cached like any kernel. Its overhead — the timed build against
the plain one, measured by the profiler — is reported beside the figures.
"""
from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field, replace

from ..ir import nodes as ir

START, END, FIRST_PHASE = 0, 1, 2
_I32, _I64 = "int32", "int64"


@dataclass(frozen=True)
class TimedGrid:
    index: int                  # position of the grid in the kernel
    param: str                  # the timers tensor of this grid
    symbol: str                 # its row count (= blocks of the grid)
    phases: tuple[str, ...]     # column FIRST_PHASE + i accumulates phases[i]


def instrument(func: ir.PrimFunc) -> tuple[ir.PrimFunc, list[TimedGrid]]:
    """The kernel with phase timers, and what each grid's timers tensor holds."""
    grids: list[TimedGrid] = []
    new_params, new_symbols = [], []
    names = itertools.count()

    def on_kernel(node):
        if not isinstance(node, ir.Kernel):
            return None
        g = len(grids)
        roles = _gemm_roles(node)
        phases = _phases(node.body, roles)
        sym = ir.Var(f"tl_timer_blocks{g}", _I32)
        buf = ir.Buffer(f"tl_timers{g}", (sym, ir.Const(FIRST_PHASE + len(phases), _I32)),
                        _I64)
        grids.append(TimedGrid(g, buf.name, sym.name, tuple(phases)))
        new_params.append(buf)
        new_symbols.append(sym)
        block = ir.Var(f"tl_block{g}", _I32)
        timer = _Timer(buf, block, phases, roles, names)
        start = ir.Var(f"tl_start{g}", _I64)
        body = ir.Seq((ir.Let(block, _linear_block(node)), ir.Let(start, _now()),
                       timer.wrap(node.body),
                       ir.Store(buf, (block, _c(START)), start),
                       ir.Store(buf, (block, _c(END)), _now())))
        return replace(node, body=body)

    from ..ir.visitor import rewrite
    body = rewrite(func.body, on_kernel)
    timed = replace(func, params=func.params + tuple(new_params),
                    symbols=func.symbols + tuple(new_symbols), body=body)
    return timed, grids


def _c(v: int) -> ir.Const:
    return ir.Const(v, _I32)


def _now() -> ir.Call:
    return ir.Call(ir.CYCLE_COUNTER, (), _I64)


def _linear_block(k: ir.Kernel) -> ir.Expr:
    """bx + gx * (by + gy * bz): the block's row in the timers tensor."""
    expr = None
    for var, extent in reversed(list(zip(k.block_vars, k.grid))):
        expr = var if expr is None else ir.Binary("+", var, ir.Binary("*", extent, expr, _I32),
                                                  _I32)
    return expr if expr is not None else _c(0)


def _gemm_roles(k: ir.Kernel) -> dict:
    """{buffer name: "A" | "B"} for the operands the kernel's T.gemms read."""
    from ..ir.visitor import walk
    roles = {}
    for node in walk(k.body):
        if isinstance(node, ir.Gemm):
            roles.setdefault(node.a.buffer.name, "A")
            roles.setdefault(node.b.buffer.name, "B")
    return roles


def phase_of(stmt, roles: dict) -> str | None:
    """The phase a statement is timed as, or None (not a phase: recurse or leave)."""
    if isinstance(stmt, ir.Copy):
        src, dst = stmt.src.buffer, stmt.dst.buffer
        if src.scope == "global" and dst.scope != "global":
            role = roles.get(dst.name)
            return f"pack {role}" if role else "load"
        return "store" if dst.scope == "global" else "copy"
    if isinstance(stmt, ir.Gemm):
        return "gemm"
    if isinstance(stmt, ir.TileAtomic):
        return "store"
    if isinstance(stmt, ir.Reduce):
        return "elementwise"
    if isinstance(stmt, ir.Fill):
        return "fill"
    if isinstance(stmt, ir.For) and not _has_tile_op(stmt) and _writes(stmt):
        return "elementwise"
    return None


@functools.lru_cache(maxsize=None)
def _has_tile_op(stmt) -> bool:
    from ..ir.visitor import walk
    return any(isinstance(n, (ir.Copy, ir.Gemm, ir.Fill, ir.Reduce, ir.TileAtomic))
               for n in walk(stmt))


def _writes(stmt) -> bool:
    from ..ir.visitor import walk
    return any(isinstance(n, (ir.Store, ir.Atomic)) for n in walk(stmt))


def _phases(body, roles) -> list[str]:
    """The kernel's phases in order of first appearance."""
    found: list[str] = []

    def visit(s):
        p = phase_of(s, roles)
        if p is not None:
            if p not in found:
                found.append(p)
        elif isinstance(s, ir.Seq):
            for x in s.stmts:
                visit(x)
        elif isinstance(s, ir.For):
            visit(s.body)
        elif isinstance(s, ir.If):
            visit(s.then_body)
            if s.else_body is not None:
                visit(s.else_body)
    visit(body)
    return found


class _Timer:
    def __init__(self, buf, block, phases, roles, names):
        self.buf, self.block, self.phases, self.roles, self.names = (
            buf, block, phases, roles, names)

    def wrap(self, s):
        p = phase_of(s, self.roles)
        if p is not None:
            return self._timed(s, p)
        if isinstance(s, ir.Seq):
            return replace(s, stmts=tuple(self.wrap(x) for x in s.stmts))
        if isinstance(s, ir.For):
            return replace(s, body=self.wrap(s.body))
        if isinstance(s, ir.If):
            return replace(s, then_body=self.wrap(s.then_body),
                           else_body=None if s.else_body is None else self.wrap(s.else_body))
        return s

    def _timed(self, s, phase: str):
        t = ir.Var(f"tl_t{next(self.names)}", _I64)
        idx = (self.block, _c(FIRST_PHASE + self.phases.index(phase)))
        spent = ir.Binary("-", _now(), t, _I64)
        total = ir.Binary("+", ir.Load(self.buf, idx, _I64), spent, _I64)
        return ir.Seq((ir.Let(t, _now()), s, ir.Store(self.buf, idx, total)))


# ----------------------------------------------------------------------------- reading

@dataclass
class GridTimes:
    """What the timers of one grid measured, in seconds."""
    index: int
    blocks: int
    threads: int
    phases: dict               # phase -> seconds summed over blocks
    busy: float                # sum over blocks of (end - start)
    span: float                # first block start .. last block end
    idle_at_end: float         # thread-seconds idle after a thread's last block
    thread_ends: list          # when each thread finished its last block (s from start)
    timeline_busy: float = 0.0  # sum of block times in the timeline call
    block_s: list = field(default_factory=list)     # each block's least time, in order

    @property
    def capacity(self) -> float:
        return self.span * min(self.threads, self.blocks)

    @property
    def idle_share(self) -> float:
        """Thread time not spent in a block, over the threads that had blocks (in the
        timeline call)."""
        return max(0.0, 1.0 - self.timeline_busy / self.capacity) if self.capacity else 0.0

    @property
    def idle_at_end_share(self) -> float:
        return self.idle_at_end / self.capacity if self.capacity else 0.0

    def share(self, phase: str) -> float:
        return self.phases.get(phase, 0.0) / self.busy if self.busy else 0.0

    def to_dict(self) -> dict:
        return {"grid": self.index, "blocks": self.blocks, "threads": self.threads,
                "phases_s": self.phases, "busy_s": self.busy, "span_s": self.span,
                "idle_share": self.idle_share, "idle_at_end_share": self.idle_at_end_share,
                "phase_shares": {p: self.share(p) for p in self.phases}}


def read(grid: TimedGrid, tables: list, timeline, threads: int, hz: float) -> GridTimes:
    """The figures of one grid's timers tensors (int64, blocks x columns), one per
    timed call. Another process taking the core only ever adds time, so each block's
    phase times and busy time are the least over the calls; the threads' timeline
    (span, idle at the end) is that of the call `timeline` (the median one)."""
    import numpy as np
    runs = np.stack([np.asarray(t, dtype=np.float64) for t in tables])
    least = runs.min(axis=0)
    phases = {p: float(least[:, FIRST_PHASE + i].sum() / hz)
              for i, p in enumerate(grid.phases)}
    block_s = (runs[:, :, END] - runs[:, :, START]).min(axis=0) / hz
    busy = float(block_s.sum())
    t = np.asarray(timeline, dtype=np.float64)
    starts, ends = t[:, START], t[:, END]
    origin = starts.min() if len(starts) else 0.0
    lanes = _threads_of(starts - origin, ends - origin)
    span = float((ends.max() - origin) / hz) if len(ends) else 0.0
    used = min(threads, len(starts))
    last = sorted((end / hz for end in lanes), reverse=True)[:used]
    last += [0.0] * (used - len(last))
    line_busy = float((ends - starts).sum() / hz)
    return GridTimes(grid.index, len(starts), threads, phases, busy, span,
                     float(sum(span - e for e in last)), sorted(last), line_busy,
                     [float(x) for x in block_s])


def outside_blocks(calls: list, walls: list, hz: float) -> float:
    """The least time a call spends outside its blocks — the launch, waking the
    threads, returning — over the timed calls: each call's wall time (`walls`, s) less
    the union of its blocks' [start, end) stamps over every grid (`calls`: per call,
    each grid's timers table). A process that takes a core while a block runs
    lengthens the block, not this."""
    best = None
    for tables, wall in zip(calls, walls):
        stamps = sorted((int(row[START]), int(row[END])) for t in tables for row in t)
        covered, reach = 0, None
        for start, end in stamps:
            if reach is None or start > reach:
                covered += end - start
            elif end > reach:
                covered += end - reach
            reach = end if reach is None else max(reach, end)
        outside = max(0.0, wall - covered / hz)
        best = outside if best is None else min(best, outside)
    return best or 0.0


def makespan(block_s, threads: int, chunks_per_thread: int = 1) -> float:
    """The time a launch of blocks taking `block_s` (in block order) needs on `threads`
    threads that each take the next chunk of blocks when they become free — the
    runtime's schedule (`runtime/launch.py`: chunks of ceil(n / (threads *
    chunks_per_thread)) blocks). From the blocks' least times, so another process
    taking a core does not change it."""
    import heapq
    n = len(block_s)
    workers = max(1, min(threads, n))
    if not n:
        return 0.0
    if workers == 1:
        return float(sum(block_s))
    chunk = max(1, -(-n // (workers * chunks_per_thread)))
    free = [0.0] * workers
    for begin in range(0, n, chunk):
        t = heapq.heappop(free)
        heapq.heappush(free, t + float(sum(block_s[begin:begin + chunk])))
    return max(free)


def _threads_of(starts, ends) -> list[float]:
    """The end of each thread's last block: blocks ordered by start are given to the
    thread that became free last before they started (a thread runs its blocks one
    after the other), which recovers the threads' timelines from the stamps alone."""
    import bisect
    free: list[float] = []                      # sorted end times of the threads so far
    for s, e in sorted(zip(starts, ends)):
        i = bisect.bisect_right(free, s)
        if i:
            free.pop(i - 1)
        bisect.insort(free, e)
    return free


@functools.lru_cache(maxsize=1)
def counter_hz() -> float:
    """Ticks per second of the cycle counter the timers read (llvm.readcyclecounter),
    calibrated against the wall clock; 0 where the CPU has no readable counter."""
    import ctypes
    import time
    from .hostpeaks import _Jit
    jit = _Jit("define i64 @now() {\n  %t = call i64 @llvm.readcyclecounter()\n"
               "  ret i64 %t\n}\ndeclare i64 @llvm.readcyclecounter()")
    now = ctypes.CFUNCTYPE(ctypes.c_int64)(jit.address("now"))

    def pair():
        """(wall, counter) read together: of a few tries, the one whose counter reads
        around the wall clock's are closest (no preemption between them)."""
        best = None
        for _ in range(8):
            a, w, b = now(), time.perf_counter(), now()
            if best is None or b - a < best[0]:
                best = (b - a, w, (a + b) / 2)
        return best[1], best[2]
    w0, c0 = pair()
    time.sleep(0.05)
    w1, c1 = pair()
    return max(0.0, (c1 - c0) / (w1 - w0))
