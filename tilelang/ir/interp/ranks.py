"""Multi-rank statements in the reference interpreter (TileScale-spelled primitives).

`run_ranks` runs one kernel on every rank at once: a thread per rank, each with its own
machine and its own arguments (the symmetric tensors of that rank), all sharing a
`World` that maps (rank, tensor name) to the buffer. A rank's blocks run one after
another, as everywhere in the interpreter; waits poll the peer's element until their
condition holds, and one that cannot hold within `timeout` seconds is reported (a
kernel whose blocks of one rank wait on each other needs them to run at once, which
the interpreter does not do).

Semantics, as the CPU target implements them: `pe = -1` is this rank; `T.put_block` /
`T.get_block` copy `size` contiguous elements; `T.signal_op` / `T.st` set or add one
element on a rank; `T.wait_<cmp>` waits until the element compares to the value;
`T.barrier_blocks(bar)` adds 1 to word `rank` of `bar` on every rank and waits until
each word of its own copy reaches its epoch; `old = T.atomic_add(x[i], v,
return_prev=True)` binds the previous value.
"""
from __future__ import annotations

import threading
import time

import numpy as np

from .values import V, UndefinedBehavior, convert, npdt, wide

_CMP = {"eq": np.equal, "ne": np.not_equal, "ge": np.greater_equal, "le": np.less_equal,
        "gt": np.greater, "lt": np.less}


class World:
    """The ranks of one run: their tensors by (rank, name), one lock for all updates."""

    def __init__(self, num_ranks: int, timeout: float = 30.0):
        self.num_ranks, self.timeout = num_ranks, timeout
        self.bufs: dict = {}
        self.cond = threading.Condition()
        self.failed: BaseException | None = None


class RankOps:
    """The multi-rank statements of the Machine (mixed into it)."""
    rank = 0
    world: World | None = None

    @property
    def num_ranks(self) -> int:
        return 1 if self.world is None else self.world.num_ranks

    def rank_query(self, name: str) -> V:
        return V(np.asarray(self.rank if name == "get_rank" else self.num_ranks,
                            dtype=np.int32), "int32")

    def peer(self, pe_expr, span) -> int:
        pe = int(self.scalar_int(pe_expr, "a rank"))
        pe = self.rank if pe == -1 else pe
        if not 0 <= pe < self.num_ranks:
            raise UndefinedBehavior("bad-rank", f"rank {pe} is not one of the "
                                                f"{self.num_ranks} ranks", span)
        return pe

    def on(self, pe: int, buffer):
        """The Buf of tensor `buffer` on rank `pe`."""
        if pe == self.rank or self.world is None:
            return self.buf(buffer)
        return self.world.bufs[(pe, buffer.name)]

    def flat_at(self, buf, indices, span) -> int:
        idx = [int(wide(self.expr(i))) for i in indices]
        if not all(0 <= i < n for i, n in zip(idx, buf.shape)):
            raise UndefinedBehavior("out-of-bounds", f"`{buf.name}`{idx} outside its "
                                                     f"shape {buf.shape}", span)
        return int(np.ravel_multi_index(idx, buf.shape)) if idx else 0

    def _lock(self):
        return self.world.cond if self.world is not None else _NoLock()

    def s_PeerCopy(self, s) -> None:
        pe = self.peer(s.pe, s.span)
        src = self.on(pe, s.src) if s.kind == "get" else self.buf(s.src)
        dst = self.on(pe, s.dst) if s.kind == "put" else self.buf(s.dst)
        size = self.scalar_int(s.size, "a size")
        a, b = self.flat_at(src, s.src_indices, s.span), self.flat_at(dst, s.dst_indices, s.span)
        for buf, at in ((src, a), (dst, b)):
            if size < 0 or at + size > buf.data.size:
                raise UndefinedBehavior("out-of-bounds", f"{s.kind} of {size} elements at "
                                        f"`{buf.name}` element {at} passes its end", s.span)
        with self._lock():
            dst.data.reshape(-1)[b:b + size] = src.data.reshape(-1)[a:a + size]
            if dst.mag is not None:
                dst.mag.reshape(-1)[b:b + size] = np.abs(
                    src.data.reshape(-1)[a:a + size].astype(np.float64))
            self._notify()

    def s_SignalOp(self, s) -> None:
        buf = self.on(self.peer(s.pe, s.span), s.buffer)
        at = self.flat_at(buf, s.indices, s.span)
        value = wide(convert(self.expr(s.value), buf.dtype))
        with self._lock():
            flat = buf.data.reshape(-1)
            flat[at] = value if s.op == "set" else flat[at] + value
            self._notify()

    def s_AtomicFetch(self, s) -> None:
        buf = self.buf(s.buffer)
        at = self.flat_at(buf, s.indices, s.span)
        value = wide(convert(self.expr(s.value), buf.dtype))
        with self._lock():
            flat = buf.data.reshape(-1)
            old = flat[at].copy()
            combine = {"add": np.add, "max": np.fmax, "min": np.fmin}[s.op]   # maxnum
            flat[at] = combine(wide(V(np.asarray(old), buf.dtype)), value)
            self._notify()
        self.env[s.var] = V(np.asarray(old, dtype=npdt(buf.dtype)), buf.dtype)

    def s_Wait(self, s) -> None:
        buf = self.on(self.peer(s.pe, s.span), s.buffer)
        at = self.flat_at(buf, s.indices, s.span)
        expected = wide(convert(self.expr(s.expected), buf.dtype))
        self._wait_for(lambda: bool(_CMP[s.cmp](buf.data.reshape(-1)[at], expected)), s,
                       f"`{buf.name}` element {at} {s.cmp} {expected}")

    def s_Barrier(self, s) -> None:
        mine = self.buf(s.buffer)
        if mine.data.size < self.num_ranks:
            raise UndefinedBehavior("out-of-bounds", f"barrier `{mine.name}` has "
                                    f"{mine.data.size} words for {self.num_ranks} ranks",
                                    s.span)
        with self._lock():
            words = mine.data.reshape(-1)
            epoch = int(words[self.rank]) + 1
            words[self.rank] = epoch
            for p in range(self.num_ranks):
                if p != self.rank:
                    peer = self.on(p, s.buffer).data.reshape(-1)
                    peer[self.rank] = peer[self.rank] + 1
            self._notify()
        words = mine.data.reshape(-1)
        self._wait_for(lambda: all(int(words[p]) >= epoch for p in range(self.num_ranks)),
                       s, f"every rank at barrier `{mine.name}` epoch {epoch}")

    def _wait_for(self, holds, s, what: str) -> None:
        if self.world is None:
            if not holds():
                raise UndefinedBehavior("deadlock", f"a wait for {what} that nothing can "
                                                    f"satisfy (one rank)", s.span)
            return
        deadline = time.monotonic() + self.world.timeout
        with self.world.cond:
            while not holds():
                if self.world.failed is not None:
                    raise UndefinedBehavior("deadlock", "another rank failed", s.span)
                if time.monotonic() > deadline:
                    raise UndefinedBehavior(
                        "deadlock", f"rank {self.rank} waited {self.world.timeout:.0f} s for "
                                    f"{what}", s.span)
                self.world.cond.wait(0.01)

    def _notify(self) -> None:
        if self.world is not None:
            self.world.cond.notify_all()


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
