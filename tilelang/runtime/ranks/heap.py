"""The symmetric heap: on every rank a segment of the same size, holding the same
allocations at the same offsets, mapped by every rank of the host.

A kernel reaches a peer's copy of a symmetric buffer by address: the address of the
local copy, moved by (peer's heap base - own heap base) as the rank table gives them —
the CPU analogue of NVLink peer access. Allocation is a bump pointer; every rank makes
the same allocations in the same order, so offsets agree (`check_symmetric` verifies).
"""
from __future__ import annotations

import weakref

import numpy as np

from . import table as T
from .errors import SymmetricHeapError
from .shm import Segment, segment_name
from .wait import timeout_s

ALIGN = 256
_live: "weakref.WeakSet[SymmetricHeap]" = weakref.WeakSet()


class SymmetricHeap:
    def __init__(self, group, nbytes: int, tag: str):
        if nbytes <= 0:
            raise SymmetricHeapError(f"a symmetric heap needs a positive size, got {nbytes}",
                                     group.rank())
        self.group = group
        self.nbytes = nbytes = _round_up(int(nbytes), 4096)
        rank = group.rank()
        names = {r: segment_name(group.session, f"h{group.host}", tag, f"r{r}")
                 for r in group.local_ranks}
        own = Segment(names[rank], nbytes, create=True)
        self.segments = {rank: own}
        try:
            group.local_barrier("the creation of a symmetric heap")
            for r in group.local_ranks:
                if r != rank:
                    self.segments[r] = Segment(names[r], 0, create=False)
            group.local_barrier("the mapping of a symmetric heap")
        finally:
            own.unlink()          # mapped everywhere: nothing is left behind from here on
        for r, seg in self.segments.items():
            if seg.nbytes != nbytes:
                raise SymmetricHeapError(
                    f"rank {rank}: rank {r}'s heap has {seg.nbytes} bytes, this rank's "
                    f"{nbytes}: every rank must create its heaps with the same sizes", rank)
        self.array = own.array
        self.base = own.address
        self._top = 0
        self._committed = 0
        self.table = self._make_table()
        _live.add(self)

    def _make_table(self) -> np.ndarray:
        g = self.group
        t = np.zeros(T.num_words(g.size()), np.int64)
        t[T.RANK], t[T.NUM_RANKS] = g.rank(), g.size()
        t[T.TIMEOUT_NS] = int(timeout_s() * 1e9)
        t[T.ABORT_PTR] = g.control.abort_address if g.control is not None else 0
        t[T.HEAP_BYTES] = self.nbytes
        for r, seg in self.segments.items():
            t[T.BASES + r] = seg.address
        return t

    # -- allocation ---------------------------------------------------------------------

    def alloc(self, shape, dtype, align: int = ALIGN) -> np.ndarray:
        """A zero-initialised symmetric array (zeroed by the page, or explicitly when the
        space is reused). Call it on every rank, in the same order, with the same sizes."""
        dt = np.dtype(dtype)
        shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        start = _round_up(self._top, align)
        if start + n > self.nbytes:
            raise SymmetricHeapError(
                f"rank {self.group.rank()}: symmetric allocation of {n} bytes {shape} does "
                f"not fit: {self.nbytes - start} of the heap's {self.nbytes} bytes are left",
                self.group.rank())
        self._top = start + n
        self.commit(self._top)
        return self.view(start, shape, dt)

    def mark(self) -> int:
        """The allocation point, for `release`."""
        return self._top

    def release(self, mark: int) -> None:
        """Free every allocation made after `mark` (stack discipline)."""
        self._top = mark

    def commit(self, nbytes: int) -> None:
        if nbytes > self._committed:
            try:
                self.segments[self.group.rank()].commit(nbytes)
            except OSError as e:
                raise SymmetricHeapError(
                    f"rank {self.group.rank()}: cannot back {nbytes} bytes of the symmetric "
                    f"heap in /dev/shm ({e.strerror}); free shared memory or use smaller "
                    f"buffers", self.group.rank()) from None
            self._committed = nbytes

    def view(self, offset: int, shape, dtype, rank: int | None = None) -> np.ndarray:
        """A view at byte `offset` of this rank's heap (or of peer `rank`'s, on this host)."""
        dt = np.dtype(dtype)
        seg = self.segments[self.group.rank() if rank is None else rank]
        n = int(np.prod(shape, dtype=np.int64))
        return seg.array[offset:offset + n * dt.itemsize].view(dt).reshape(shape)

    def offset_of(self, array: np.ndarray) -> int:
        return array.ctypes.data - self.base

    def contains(self, address: int, nbytes: int) -> bool:
        return self.base <= address and address + nbytes <= self.base + self.nbytes

    def check_symmetric(self) -> None:
        """Every rank has made the same allocations (a collective)."""
        tops = self.group.allgather(self._top)
        if len(set(tops)) != 1:
            raise SymmetricHeapError(
                f"rank {self.group.rank()}: the symmetric heap is not symmetric: allocation "
                f"points per rank {tops}; allocate the same sizes in the same order on "
                f"every rank", self.group.rank())

    def close(self) -> None:
        _live.discard(self)
        for seg in self.segments.values():
            seg.close()
        self.segments = {}


def find_heap(address: int, nbytes: int) -> SymmetricHeap | None:
    """The live heap holding [address, address + nbytes) on this rank, if any."""
    for heap in list(_live):
        if heap.segments and heap.contains(address, nbytes):
            return heap
    return None


def _round_up(n: int, k: int) -> int:
    return (n + k - 1) // k * k


__all__ = ["SymmetricHeap", "find_heap", "ALIGN"]
