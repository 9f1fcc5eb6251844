"""The reference interpreter's machine: statements and expressions of every stage.

Parallel (`T.Parallel`, `T.vectorized`) loops run as lanes: the loop variable is an
array with one element per iteration (a new leading axis), every statement of the body
runs once for all lanes, `if`s and loops whose bounds differ between lanes run under a
mask. That is what "iterations are independent" allows, and it is what makes the
interpreter fast enough. Each parallel loop logs the elements its lanes touch and
reports two lanes touching one element, one writing (undefined behaviour). Serial,
unrolled and pipelined loops run iteration by iteration.

One method per node kind (`s_<Stmt>`, `e_<Expr>`): a new IR node is one more method.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ... import dtypes
from ..nodes import Alloc, Buffer, Kernel, Let, Seq
from ..visitor import walk
from . import tileops
from .memory import Arena, Buf
from .ranks import RankOps
from .values import (V, NotSupported, UndefinedBehavior, binary, bitcast, call, const,
                     convert,
                     either, npdt, select, unary, wide)

PARALLEL_KINDS = ("parallel", "vectorized")


class Machine(RankOps):
    def __init__(self, magnitudes: bool = False, check_races: bool = True,
                 block_order=None, rank: int = 0, world=None):
        self.magnitudes = magnitudes
        self.check_races = check_races
        self.block_order = block_order          # None, "reverse" or a numpy Generator
        self.env: dict = {}
        self.bufs: dict = {}
        self.lanes: tuple = ()
        self.mask = np.True_
        self.regions: list = []                 # parallel loops being run (logs)
        self.block: int | None = None
        self.arenas: dict = {}
        self._written: dict = {}
        self.rank, self.world = rank, world

    # ------------------------------------------------------------------ statements

    def stmt(self, s) -> None:
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise NotSupported(f"the interpreter cannot run `{type(s).__name__}`")
        method(s)

    def s_Seq(self, s: Seq) -> None:
        for x in s.stmts:
            self.stmt(x)

    def s_Let(self, s: Let) -> None:
        self.env[s.var] = self.expr(s.value)

    def s_Alloc(self, s: Alloc) -> None:
        b = s.buffer
        if self.lanes:
            raise NotSupported(f"T.alloc of `{b.name}` inside a parallel loop")
        if s.pe is not None:
            raise NotSupported(f"`{b.name}`, a view of another rank's tensor")
        shape = tuple(self.scalar_int(d, "a buffer extent") for d in b.shape)
        if b.scope == "global":                  # a workspace: zeroed, like the ABI's
            buf = Buf(b.name, b.dtype, shape, "global", initialized=True,
                      magnitudes=self.magnitudes)
            if self.check_races:
                buf.track_blocks()
        elif s.offset is not None:
            arena = self.arenas.get(b.scope)
            if arena is None:
                raise NotSupported(f"placed buffer `{b.name}` outside a kernel")
            buf = Buf(b.name, b.dtype, shape, b.scope, arena=arena, offset=s.offset,
                      magnitudes=self.magnitudes)
        else:
            buf = Buf(b.name, b.dtype, shape, b.scope, magnitudes=self.magnitudes)
        self.bufs[b.name] = buf
        if s.init is not None:
            v = convert(self.expr(s.init), b.dtype, s.span)
            buf.scatter((), v, np.True_, None, s.span)

    def s_Store(self, s) -> None:
        buf = self.buf(s.buffer)
        idx = self.indices(s.indices, s.span)
        value = convert(self.expr(s.value), buf.dtype, s.span, self.mask)
        self.log(buf, idx, True)
        buf.scatter(idx, value, self.mask, self.block, s.span)

    def s_Atomic(self, s) -> None:
        buf = self.buf(s.buffer)
        idx = self.indices(s.indices, s.span)
        value = convert(self.expr(s.value), buf.dtype, s.span, self.mask)
        tileops.atomic_update(self, buf, s.op, idx, value, self.mask, s.span)

    def s_Prefetch(self, s) -> None:
        pass                                     # a cache hint: no effect on values

    def s_If(self, s) -> None:
        cond = self.decide(s.cond, s.span)
        if cond.ndim == 0:
            branch = s.then_body if cond else s.else_body
            if branch is not None:
                self.stmt(branch)
            return
        self.masked(s.then_body, cond)
        if s.else_body is not None:
            self.masked(s.else_body, ~cond)

    def s_While(self, s) -> None:
        """Per lane, until its condition is false: lanes that are done are masked off
        while the others run the body again."""
        saved = self.mask
        try:
            while True:
                cond = self.decide(s.cond, s.span)
                if cond.ndim == 0:
                    if not cond:
                        return
                    self.stmt(s.body)
                    continue
                self.mask = self.mask & cond
                if not np.any(self.mask):
                    return
                self.stmt(s.body)
        finally:
            self.mask = saved

    def masked(self, body, cond) -> None:
        saved = self.mask
        self.mask = saved & cond
        try:
            if np.any(self.mask):
                self.stmt(body)
        finally:
            self.mask = saved

    def s_For(self, s) -> None:
        lo = self.decide(s.min, s.span, "a loop bound")
        extent = self.decide(s.extent, s.span, "a loop bound")
        env = dict(self.env)
        try:
            if s.kind in PARALLEL_KINDS:
                self.parallel(s, lo, extent)
            else:
                self.serial(s, lo, extent)
        finally:
            self.env = env

    def serial(self, s, lo, extent) -> None:
        if lo.ndim == 0 and extent.ndim == 0:
            for k in range(int(lo), int(lo) + int(extent)):
                self.env[s.var] = V(np.asarray(k, dtype=npdt(s.var.dtype)), s.var.dtype)
                self.stmt(s.body)
            return
        active = np.broadcast_to(self.mask, np.broadcast(lo, extent, self.mask).shape)
        n = int(np.max(np.where(active, extent, 0), initial=0))
        saved = self.mask
        try:
            for k in range(n):
                self.mask = saved & (k < extent)
                if not np.any(self.mask):
                    continue
                self.env[s.var] = V((lo + k).astype(npdt(s.var.dtype)), s.var.dtype)
                self.stmt(s.body)
        finally:
            self.mask = saved

    def parallel(self, s, lo, extent) -> None:
        """A new leading lane axis over the iterations; the body runs once."""
        active = np.broadcast_to(self.mask, np.broadcast(lo, extent, self.mask).shape)
        n = int(np.max(np.where(active, extent, 0), initial=0))
        if n <= 0:
            return
        depth = len(self.lanes)
        saved_lanes, saved_mask = self.lanes, self.mask
        offset = np.arange(n).reshape((n,) + (1,) * depth)
        self.lanes = (n,) + self.lanes
        self.mask = np.broadcast_to(saved_mask & (offset < extent), self.lanes)
        self.env[s.var] = V((lo + offset).astype(npdt(s.var.dtype)), s.var.dtype)
        region = None
        if self.check_races:
            written = self.written_in(s)
            region = _Region(s, len(self.lanes), written) if written else None
        if region is not None:
            self.regions.append(region)
        try:
            if np.any(self.mask):
                self.stmt(s.body)
        finally:
            self.lanes, self.mask = saved_lanes, saved_mask
            if region is not None:
                self.regions.pop()
        if region is not None:
            region.check()

    def s_Kernel(self, s: Kernel) -> None:
        if self.lanes:
            raise NotSupported("T.Kernel inside a loop")
        grid = [self.scalar_int(g, "a grid size") for g in s.grid]
        count = prod(max(g, 0) for g in grid)
        order = range(count)
        if self.block_order == "reverse":
            order = reversed(order)
        elif self.block_order is not None:
            order = self.block_order.permutation(count)
        if self.check_races:
            for buf in self.bufs.values():
                if buf.is_global:
                    buf.track_blocks()
        sizes = _arena_sizes(s)
        env, bufs = dict(self.env), dict(self.bufs)
        for flat in order:
            rest = int(flat)
            for var, g in zip(s.block_vars, grid):
                self.env[var] = V(np.asarray(rest % g, dtype=npdt(var.dtype)), var.dtype)
                rest //= g
            self.block = int(flat)
            self.arenas = {scope: Arena(n) for scope, n in sizes.items()}
            self.stmt(s.body)
            self.env, self.bufs = dict(env), dict(bufs)
        self.block = None

    # ------------------------------------------------------------------ tile ops

    def s_Copy(self, s) -> None:
        tileops.copy(self, s)

    def s_Fill(self, s) -> None:
        tileops.fill(self, s)

    def s_Gemm(self, s) -> None:
        tileops.gemm(self, s)

    def s_Reduce(self, s) -> None:
        tileops.reduce(self, s)

    def s_TileAtomic(self, s) -> None:
        tileops.tile_atomic(self, s)

    # ------------------------------------------------------------------ expressions

    def expr(self, e) -> V:
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            raise NotSupported(f"the interpreter cannot evaluate `{type(e).__name__}`")
        return method(e)

    def e_Const(self, e) -> V:
        return const(e.value, e.dtype, self.magnitudes)

    def e_Var(self, e) -> V:
        v = self.env.get(e)
        if v is None:
            raise NotSupported(f"variable `{e.name}` used before it is bound")
        return v

    def e_Binary(self, e) -> V:
        if e.op in ("and", "or"):
            return self.logical(e)
        return binary(e.op, self.expr(e.lhs), self.expr(e.rhs), e.dtype, self.magnitudes)

    def logical(self, e) -> V:
        """`a and b` evaluates b only where a holds (`or`: where it does not)."""
        lhs = self.expr(e.lhs)
        a = lhs.a.astype(bool)
        need = a if e.op == "and" else ~a
        rhs = self.under(np.broadcast_to(need, np.broadcast(need, self.mask).shape)
                         if np.ndim(need) else need, e.rhs)
        if rhs is None:
            return V(a, "bool", lhs.poison)
        b = rhs.a.astype(bool)
        out = (a & b) if e.op == "and" else (a | b)
        poison = lhs.poison
        if rhs.poison is not None:
            poison = either(poison, need & rhs.poison)
        return V(out, "bool", poison)

    def under(self, cond, e):
        """`e` evaluated only in the lanes where `cond` holds; None if there are none."""
        if np.ndim(cond) == 0:
            return self.expr(e) if cond and np.any(self.mask) else None
        saved = self.mask
        self.mask = saved & cond
        try:
            return self.expr(e) if np.any(self.mask) else None
        finally:
            self.mask = saved

    def e_Unary(self, e) -> V:
        return unary(e.op, self.expr(e.operand), e.dtype)

    def e_Call(self, e) -> V:
        if e.name in ("get_rank", "get_num_ranks"):
            return self.rank_query(e.name)
        if e.name == "cycle_counter":          # the profiler's timer: any increasing count
            import time
            return V(np.asarray(time.perf_counter_ns(), dtype=np.int64), "int64")
        return call(e.name, [self.expr(a) for a in e.args], e.dtype, self.magnitudes)

    def e_Cast(self, e) -> V:
        return convert(self.expr(e.value), e.dtype, e.span, self.mask)

    def e_BitCast(self, e) -> V:
        return bitcast(self.expr(e.value), e.dtype)

    def e_Select(self, e) -> V:
        cond = self.decide(e.cond, e.span)
        t = self.under(cond, e.true_value)
        f = self.under(~cond if np.ndim(cond) else not cond, e.false_value)
        if t is None and f is None:
            return const(0, e.dtype, self.magnitudes)
        if t is None or f is None:
            return t if f is None else f
        return select(cond, t, f, e.dtype)

    def e_Load(self, e) -> V:
        buf = self.buf(e.buffer)
        idx = self.indices(e.indices, e.span)
        self.log(buf, idx, False)
        v = buf.gather(idx, self.mask, self.block, e.span)
        return v if v.dtype == e.dtype else convert(v, e.dtype, e.span, self.mask)

    # ------------------------------------------------------------------ helpers

    def buf(self, b: Buffer) -> Buf:
        buf = self.bufs.get(b.name)
        if buf is None:
            raise NotSupported(f"buffer `{b.name}` used before it is allocated")
        return buf

    def indices(self, exprs, span) -> tuple:
        out = []
        for e in exprs:
            v = self.expr(e)
            self.no_poison(v, span, "an index")
            out.append(wide(v).astype(np.int64))
        return tuple(out)

    def decide(self, e, span, what: str = "a condition"):
        """The value of a condition / bound: it must not depend on poison."""
        v = self.expr(e)
        self.no_poison(v, span, what)
        return v.a.astype(bool) if v.dtype == "bool" else wide(v)

    def no_poison(self, v: V, span, what: str) -> None:
        if v.poison is not None and np.any(v.poison & self.mask):
            raise UndefinedBehavior("uninitialized", f"{what} depends on memory that was "
                                                     f"never written", span)

    def scalar_int(self, e, what: str) -> int:
        v = self.decide(e, getattr(e, "span", None), what)
        if np.ndim(v) != 0:
            raise NotSupported(f"{what} that differs between parallel iterations")
        return int(v)

    def log(self, buf: Buf, idx: tuple, write: bool) -> None:
        """Note the elements the active lanes touch, for every parallel loop around
        that writes the buffer (elements nobody writes cannot conflict)."""
        for region in self.regions:
            if buf.name in region.written:
                region.note(buf, idx, self.mask, self.lanes, write)

    def written_in(self, loop) -> frozenset:
        """Names of the buffers stored to inside `loop` (computed once per node)."""
        key = id(loop)
        hit = self._written.get(key)
        if hit is None or hit[0] is not loop:
            names = frozenset(n.buffer.name for n in walk(loop.body)
                              if type(n).__name__ in ("Store", "Copy", "Fill", "Gemm",
                                                      "Reduce"))
            hit = self._written[key] = (loop, names)
        return hit[1]


_LANE_IDS: dict = {}


def _lane_ids(lanes: tuple, depth: int):
    """Per lane, its index among the lanes of the outer `depth` axes."""
    key = (lanes, depth)
    ids = _LANE_IDS.get(key)
    if ids is None:
        own = lanes[len(lanes) - depth:]
        ids = np.broadcast_to(np.arange(prod(own)).reshape(own), lanes)
        if len(_LANE_IDS) > 256:
            _LANE_IDS.clear()
        _LANE_IDS[key] = ids
    return ids


class _Region:
    """One run of a parallel loop: which lane touched which element."""

    def __init__(self, loop, depth: int, written: frozenset):
        self.loop, self.depth, self.written = loop, depth, written
        self.keys, self.lanes, self.writes, self.names = [], [], [], {}

    def note(self, buf: Buf, idx: tuple, mask, lanes: tuple, write: bool) -> None:
        shape = lanes
        active = np.broadcast_to(mask, shape)
        if idx:
            idx = tuple(np.broadcast_to(i, shape) for i in idx)
            take = active & buf.in_bounds(idx)
            flat = np.ravel_multi_index(tuple(np.where(take, i, 0) for i in idx), buf.shape)
        else:
            take, flat = active, np.zeros(shape, np.int64)
        lane = _lane_ids(lanes, self.depth)
        self.keys.append(flat[take] + (buf.id << 40))
        self.lanes.append(lane[take])
        self.writes.append(np.full(int(take.sum()), write))
        self.names[buf.id] = buf

    def check(self) -> None:
        if not self.keys:
            return
        keys, lanes = np.concatenate(self.keys), np.concatenate(self.lanes)
        writes = np.concatenate(self.writes)
        if not writes.any():
            return
        uk, inv = np.unique(keys, return_inverse=True)
        lo = np.full(uk.size, np.iinfo(np.int64).max)
        hi = np.full(uk.size, -1)
        np.minimum.at(lo, inv, lanes)
        np.maximum.at(hi, inv, lanes)
        written = np.zeros(uk.size, bool)
        np.logical_or.at(written, inv, writes)
        clash = written & (lo != hi)
        if clash.any():
            key = int(uk[np.argmax(clash)])
            buf = self.names[key >> 40]
            where = list(np.unravel_index(key & ((1 << 40) - 1), buf.shape)) if buf.shape else []
            raise UndefinedBehavior(
                "parallel-conflict", f"two iterations of a parallel loop touch "
                f"`{buf.name}`{[int(w) for w in where]} and one of them writes it",
                self.loop.span)


def _arena_sizes(kernel) -> dict:
    """scope -> bytes of the arena holding the buffers memory_reuse placed (a pipeline
    ring keeps its stages side by side, so a buffer may take several times its size)."""
    sizes: dict = {}
    for n in walk(kernel):
        if isinstance(n, Alloc) and n.offset is not None:
            count = prod(int(d.value) for d in n.buffer.shape)
            end = n.offset + count * dtypes.nbytes(n.buffer.dtype)
            sizes[n.buffer.scope] = max(sizes.get(n.buffer.scope, 0), end)
    return sizes


__all__ = ["Machine"]
