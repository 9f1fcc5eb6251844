"""Buffers of the reference interpreter: values, what was written, who touched what.

A `Buf` holds a buffer's elements in its own dtype. Block-local buffers remember which
elements were written (reading one that was not is poison, not an error: it only
matters if it reaches an output or decides something). Buffers that `memory_reuse`
placed in an arena are views of that arena's bytes, as on the machine, and the arena
records which buffer last wrote each byte: a read of bytes another buffer has written
since is poison too (a wrong placement shows up as a wrong or poisoned output).

Global buffers record, per element, the block that wrote it and the block(s) that read
it, so that two blocks of one grid touching an element one of them writes is reported
(blocks are independent; docs/semantics.md).
"""
from __future__ import annotations

from math import prod

import numpy as np

from ... import dtypes
from .values import V, UndefinedBehavior, npdt, either

NOBODY, MANY = -1, -2


class Arena:
    """The bytes of one scope's arena for one block, and which buffer wrote each byte."""

    def __init__(self, nbytes: int):
        self.bytes = np.full(max(nbytes, 1), 0xA5, dtype=np.uint8)   # garbage
        self.owner = np.zeros(max(nbytes, 1), dtype=np.int32)        # 0: never written


class Buf:
    _ids = 0

    def __init__(self, name: str, dtype: str, shape: tuple, scope: str, data=None,
                 initialized: bool = False, arena: Arena | None = None, offset: int = 0,
                 magnitudes: bool = False):
        Buf._ids += 1
        self.id = Buf._ids
        self.name, self.dtype, self.shape, self.scope = name, dtype, tuple(shape), scope
        self.nbytes_elem = dtypes.nbytes(dtype)
        count = prod(self.shape)
        self.arena, self.offset = arena, offset
        if data is not None:
            self.data = data
        elif arena is not None:
            raw = arena.bytes[offset:offset + count * self.nbytes_elem]
            self.data = raw.view(npdt(dtype)).reshape(self.shape)
        else:
            self.data = np.zeros(self.shape, dtype=npdt(dtype))
        # per element: was it written (None: all were, e.g. tensors and workspaces)
        self.written = None if initialized or arena is not None else np.zeros(self.shape, bool)
        self.poison = None                       # bool per element, once any is poisoned
        self.mag = None
        if magnitudes and dtypes.is_float(dtype):
            self.mag = np.abs(self.data.astype(np.float64)) if initialized else \
                np.zeros(self.shape, np.float64)
        self.writer = self.reader = None         # block race tracking (globals)

    @property
    def is_global(self) -> bool:
        return self.scope == "global"

    def track_blocks(self) -> None:
        self.writer = np.full(self.shape, NOBODY, dtype=np.int64)
        self.reader = np.full(self.shape, NOBODY, dtype=np.int64)

    # ------------------------------------------------------------------ access

    def in_bounds(self, idx: tuple):
        ok = True
        for i, n in zip(idx, self.shape):
            ok = ok & (i >= 0) & (i < n)
        return np.asarray(ok)

    def gather(self, idx: tuple, active, block: int | None, span=None) -> V:
        """The elements at `idx` (int64 arrays of one shape) where `active`; elsewhere,
        and for a global buffer out of bounds, 0."""
        shape = np.broadcast(*idx, active).shape if idx else np.shape(active)
        idx, take = self._bounded(idx, active, shape, "read", span)
        if self.data.size == 0:                 # nothing in bounds: every read gives 0
            return V(np.zeros(shape, self.data.dtype), self.dtype, None,
                     None if self.mag is None else np.zeros(shape))
        safe = tuple(np.where(take, i, 0) for i in idx)
        a = self.data[safe] if idx else np.broadcast_to(self.data, shape).copy()
        if not np.all(take):
            a = np.where(take, a, np.zeros((), a.dtype))
        poison = self._poison_at(safe, take, shape)
        mag = None
        if self.mag is not None:
            mag = np.where(take, self.mag[safe] if idx else np.broadcast_to(self.mag, shape),
                           0.0)
        if block is not None and self.reader is not None and idx:
            self._note_read(safe, take, block, span)
        return V(a, self.dtype, poison, mag)

    def _bounded(self, idx: tuple, active, shape, access: str, span):
        """(idx broadcast to `shape`, where an active element is in bounds). Out of bounds
        an on-chip access is undefined behaviour; a global one reads 0 / drops the write."""
        idx = tuple(np.broadcast_to(i, shape) for i in idx)
        active = np.broadcast_to(active, shape)
        inb = self.in_bounds(idx) if idx else np.ones(shape, bool)
        if not self.is_global and np.any(active & ~inb):
            bad = tuple(int(i[active & ~inb].flat[0]) for i in idx)
            raise UndefinedBehavior("out-of-bounds", f"{access} of `{self.name}`{list(bad)} "
                                    f"outside its shape {self.shape}", span)
        return idx, active & inb

    def _poison_at(self, safe, take, shape):
        poison = None
        if self.written is not None:
            w = self.written[safe] if safe else np.broadcast_to(self.written, shape)
            poison = take & ~w
        elif self.arena is not None:
            poison = take & ~self._owned(safe, shape)
        if self.poison is not None:
            p = self.poison[safe] if safe else np.broadcast_to(self.poison, shape)
            poison = either(poison, take & p)
        if poison is not None and not poison.any():
            return None
        return poison

    def _owned(self, safe, shape):
        flat = np.ravel_multi_index(safe, self.shape) if safe else np.zeros(shape, np.int64)
        start = self.offset + flat * self.nbytes_elem
        ok = np.ones(np.shape(flat), dtype=bool)
        for b in range(self.nbytes_elem):
            ok &= self.arena.owner[start + b] == self.id
        return ok

    def scatter(self, idx: tuple, value: V, active, block: int | None, span=None) -> None:
        """Store `value` (already of this dtype) at `idx` where `active`; a global buffer
        drops the elements outside it."""
        shape = np.broadcast(*idx, active, value.a).shape if idx else \
            np.broadcast(active, value.a).shape
        idx, put = self._bounded(idx, active, shape, "write", span)
        if not put.any():
            return
        sel = tuple(i[put] for i in idx)
        if block is not None and self.writer is not None and idx:
            self._note_write(sel, block, span)
        vals = np.broadcast_to(value.a, shape)[put]
        if idx:
            self.data[sel] = vals
        else:
            self.data[()] = vals[-1]
        self._mark_written(sel)
        self._set_poison(sel, value, shape, put)
        if self.mag is not None:
            m = value.mag if value.mag is not None else np.abs(value.a.astype(np.float64))
            m = np.broadcast_to(m, shape)[put]
            if idx:
                self.mag[sel] = m
            else:
                self.mag[()] = m[-1]

    def _mark_written(self, sel) -> None:
        if self.written is not None:
            if sel:
                self.written[sel] = True
            else:
                self.written[()] = True
        elif self.arena is not None:
            flat = np.ravel_multi_index(sel, self.shape) if sel else np.zeros(1, np.int64)
            start = self.offset + flat * self.nbytes_elem
            for b in range(self.nbytes_elem):
                self.arena.owner[start + b] = self.id

    def _set_poison(self, sel, value: V, shape, put) -> None:
        if value.poison is None and self.poison is None:
            return
        if self.poison is None:
            self.poison = np.zeros(self.shape, dtype=bool)
        p = np.broadcast_to(value.poison if value.poison is not None else False, shape)[put]
        if sel:
            self.poison[sel] = p
        else:
            self.poison[()] = bool(p[-1])

    # ------------------------------------------------------------------ block races

    def _note_read(self, safe, take, block, span) -> None:
        sel = tuple(i[take] for i in safe)
        w = self.writer[sel]
        if np.any((w != NOBODY) & (w != block)):
            self._race(sel, (w != NOBODY) & (w != block), block, span, "reads")
        r = self.reader[sel]
        self.reader[sel] = np.where((r == NOBODY) | (r == block), block, MANY)

    def _note_write(self, sel, block, span) -> None:
        w, r = self.writer[sel], self.reader[sel]
        clash = ((w != NOBODY) & (w != block)) | ((r != NOBODY) & (r != block))
        if np.any(clash):
            self._race(sel, clash, block, span, "writes")
        self.writer[sel] = block

    def _race(self, sel, clash, block, span, what) -> None:
        where = [int(i[clash].flat[0]) for i in sel]
        raise UndefinedBehavior("block-race", f"block {block} {what} `{self.name}`{where}, "
                                f"which another block of the grid writes or reads", span)
