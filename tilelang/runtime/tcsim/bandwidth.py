"""Shared bandwidth: processor-sharing pools (HBM, L2) and a sector-granular L2 cache.

A pool of bandwidth R bytes/cycle is shared equally by its n active transfers, each also
capped at its core's port rate: every transfer moves at min(cap, R / n). Because all
active transfers of a pool move at the same rate, one "virtual work" clock V (bytes each
active transfer has moved since the pool began) orders their completions: a transfer of
b bytes that starts at V0 finishes when V reaches V0 + b. Each arrival or departure is
O(log n) — the simulator stays fast with hundreds of transfers in flight.
"""
from __future__ import annotations

import heapq

import numpy as np


class Pool:
    __slots__ = ("name", "rate_total", "cap", "v", "t", "heap", "n", "version", "seq",
                 "bytes")

    def __init__(self, name: str, bytes_per_clk: float, cap: float):
        self.name = name
        self.rate_total = bytes_per_clk
        self.cap = cap
        self.v = 0.0
        self.t = 0.0
        self.heap: list = []
        self.n = 0
        self.version = 0
        self.seq = 0
        self.bytes = 0.0

    def rate(self) -> float:
        """Bytes per cycle of each active transfer."""
        if not self.n:
            return 0.0
        share = self.rate_total / self.n
        return share if share < self.cap else self.cap

    def advance(self, now: float) -> None:
        if now > self.t:
            if self.n:
                self.v += self.rate() * (now - self.t)
            self.t = now

    def add(self, now: float, nbytes: float, job) -> None:
        if now > self.t:                  # self.advance(now), written out (a hot path)
            if self.n:
                self.v += self.rate() * (now - self.t)
            self.t = now
        self.seq += 1
        heapq.heappush(self.heap, (self.v + nbytes, self.seq, job))
        self.n += 1
        self.bytes += nbytes
        self.version += 1

    def next_finish(self) -> float | None:
        """Absolute time of the next completion, at the current rate."""
        if not self.heap:
            return None
        left = self.heap[0][0] - self.v
        share = self.rate_total / self.n              # self.rate(), written out
        return self.t + (left if left > 0.0 else 0.0) / (share if share < self.cap else self.cap)

    def pop_done(self, now: float) -> list:
        self.advance(now)
        done = []
        eps = 1e-9 * max(1.0, self.v)
        while self.heap and self.heap[0][0] <= self.v + eps:
            done.append(heapq.heappop(self.heap)[2])
        if done:
            self.n -= len(done)
            self.version += 1
        return done


class L2:
    """A sector-granular L2: residency is kept per `sector` bytes of each tensor, so a
    box hits for exactly the sectors an earlier access brought in, whatever box that
    was (a V tile inside the K tile of the same KV block, a gathered row, a misaligned
    or narrower slice), and a miss fetches whole sectors from HBM.

    Replacement: each sector remembers the value of a *miss clock* (sectors fetched
    so far) when it was last touched; it is resident while fewer than `capacity /
    sector` sectors have been fetched since. That is LRU where only insertions age a
    line (a hit on an older line does not push a younger one out): the same for the
    streaming and tiled patterns kernels have, and optimistic only for working sets
    right at the capacity. Tensors are mapped row by row (every dim but the last picks
    a row, the last runs along sectors); a row starts on a sector boundary.

    An exact repeat of a box whose sectors were all touched within the capacity is a
    hit without looking at the sectors (the common case of tiled kernels); its touch
    is written to the sector map only before the map is next read (stamps only grow,
    so writing the latest stamp of each box, in order, gives the same map)."""

    def __init__(self, capacity: int, sector: int = 32):
        self.sector = sector
        self.capacity = max(1, capacity // sector)   # in sectors
        self.clock = 0
        self.maps: dict = {}                  # tensor -> last-touch clock per sector
        self.boxes: dict = {}                 # (tensor, starts, box) -> (clock, sectors)
        self.pending: dict = {}               # tensor -> {box key: touches to write}
        self.hits = self.misses = 0           # sectors
        self.hit_bytes = self.miss_bytes = 0.0

    def access(self, name: str, shape, itemsize: int, starts, box) -> tuple[int, int]:
        """(sectors that hit, sectors fetched from HBM) of a load of `box` at
        `starts` of tensor `name`; the fetched ones become resident."""
        key = (name, starts, box)
        seen = self.boxes.get(key)
        if seen is not None and self.clock - seen[0] < self.capacity:
            self.boxes[key] = (self.clock, seen[1])
            later = self.pending.setdefault(name, {})
            later.pop(key, None)                  # kept in the order of last touch
            later[key] = (shape, itemsize, self.clock)
            self.hits += seen[1]
            return seen[1], 0
        self._flush(name)
        view = self._view(name, shape, itemsize, starts, box)
        if view is None:
            return 0, 0
        total = view.size
        hit = int(np.count_nonzero(view > self.clock - self.capacity))
        miss = total - hit
        self.clock += miss
        view[...] = self.clock
        self.boxes[key] = (self.clock, total)
        self.hits += hit
        self.misses += miss
        if self.clock > _REBASE:
            self._rebase()
        return hit, miss

    def _flush(self, name: str) -> None:
        """Write the touches the fast path deferred for tensor `name`."""
        touched = self.pending.pop(name, None)
        if touched:
            for (_, starts, box), (shape, itemsize, clock) in touched.items():
                self._view(name, shape, itemsize, starts, box)[...] = clock

    def _view(self, name, shape, itemsize, starts, box):
        """The sectors of `box` in the tensor's map (a numpy view), None if empty."""
        m = self.maps.get(name)
        if m is None:
            row = -(-shape[-1] * itemsize // self.sector)
            m = np.full(tuple(shape[:-1]) + (row,), -(self.capacity + 1), np.int64)
            self.maps[name] = m
        index = []
        for s, e, n in zip(starts[:-1], box[:-1], shape[:-1]):
            lo, hi = max(s, 0), min(s + e, n)
            if hi <= lo:
                return None
            index.append(slice(lo, hi))
        s, e, n = starts[-1], box[-1], shape[-1]
        lo, hi = max(s, 0) * itemsize, min(s + e, n) * itemsize
        if hi <= lo:
            return None
        index.append(slice(lo // self.sector, -(-hi // self.sector)))
        return m[tuple(index)]

    def _rebase(self) -> None:
        """Keep the clocks small: shift them, forgetting what is long evicted."""
        for name in list(self.pending):
            self._flush(name)
        shift = self.clock - self.capacity
        for m in self.maps.values():
            np.subtract(m, shift, out=m)
            np.maximum(m, -(self.capacity + 1), out=m)
        self.boxes = {k: (c - shift, n) for k, (c, n) in self.boxes.items()
                      if c - shift > -self.capacity}
        self.clock -= shift

    def fresh_counts(self) -> "L2":
        """A cache holding what this one holds, with its counters at zero: the next grid
        of a kernel finds in L2 what the previous one left there (a copy, so that a
        grid simulated again at another clock starts from the same contents)."""
        for name in list(self.pending):            # the deferred touches first
            self._flush(name)
        new = L2(self.capacity * self.sector, self.sector)
        new.clock = self.clock
        new.maps = {k: v.copy() for k, v in self.maps.items()}
        new.boxes = dict(self.boxes)
        return new


_REBASE = 1 << 40


def sectors(shape, itemsize: int, starts, box, sector: int = 32) -> int:
    """Sectors a store of `box` writes (rows times the sectors one row spans)."""
    rows = 1
    for s, e, n in zip(starts[:-1], box[:-1], shape[:-1]):
        c = min(s + e, n) - max(s, 0)
        if c <= 0:
            return 0
        rows *= c
    s, e, n = starts[-1], box[-1], shape[-1]
    lo, hi = max(s, 0) * itemsize, min(s + e, n) * itemsize
    if hi <= lo:
        return 0
    return rows * (-(-hi // sector) - lo // sector)
