"""The sector-granular L2 cache of the simulated machine, and the sector count of a store.

Residency is kept per `sector` bytes of each tensor, so a box hits for exactly the
sectors an earlier access brought in, whatever box that was (a V tile inside the K tile
of the same KV block, a gathered row, a misaligned or narrower slice), and a miss fetches
whole sectors from HBM.

Replacement: each sector remembers the value of a *miss clock* (sectors fetched so far)
when it was last touched; it is resident while fewer than `capacity / sector` sectors
have been fetched since. That is LRU where only insertions age a line (a hit on an older
line does not push a younger one out): the same for the streaming and tiled patterns
kernels have, and optimistic only for working sets right at the capacity. Tensors are
mapped row by row (every dim but the last picks a row, the last runs along sectors); a
row starts on a sector boundary.

Two shortcuts give the sector map's answers without reading it (tests/tcsim/test_l2.py
checks them against a plain sector map on random access sequences):
* *tiled tensors*: while every access of a tensor is one box shape at starts that are
  multiples of it, and no two such boxes share a sector (the box's last-dim bytes are
  a multiple of the sector, or it spans the whole row), every sector of a box carries
  the box's last stamp — a seen box is all hit or all miss, an unseen one all miss.
  Such a tensor keeps one stamp per box and no map (a streaming copy's map of a GiB
  tensor would be 256 MiB). The first access that breaks the pattern writes the
  boxes' stamps into a map, and the tensor goes on sector by sector.
* *exact repeats*: a box of a mapped tensor whose sectors were all touched within the
  capacity is a hit; its touch is written to the map only before the map is next read
  (stamps only grow, so writing the latest stamp of each box, in order, gives the same
  map).
"""
from __future__ import annotations

import numpy as np


class _Tiling:
    """A tiled tensor's state: its one box shape and each seen box's (stamp, sectors)."""
    __slots__ = ("shape", "itemsize", "box", "stamps")

    def __init__(self, shape, itemsize: int, box):
        self.shape, self.itemsize, self.box = shape, itemsize, box
        self.stamps: dict = {}                # starts -> (last-touch clock, sectors)

    def copy(self) -> "_Tiling":
        new = _Tiling(self.shape, self.itemsize, self.box)
        new.stamps = dict(self.stamps)
        return new


class L2:
    """The cache (module docstring): `access` counts a load's hits and misses."""

    def __init__(self, capacity: int, sector: int = 32):
        self.sector = sector
        self.capacity = max(1, capacity // sector)   # in sectors
        self.clock = 0
        self.maps: dict = {}                  # tensor -> last-touch clock per sector
        self.tiled: dict = {}                 # tensor -> _Tiling, while it is tiled
        self.boxes: dict = {}         # (tensor, starts, box, itemsize) -> (clock, sectors)
        self.pending: dict = {}               # tensor -> {box key: touches to write}
        self.hits = self.misses = 0           # sectors

    def access(self, name: str, shape, itemsize: int, starts, box) -> tuple[int, int]:
        """(sectors that hit, sectors fetched from HBM) of a load of `box` at
        `starts` of tensor `name`; the fetched ones become resident."""
        tiling = self.tiled.get(name)
        if tiling is not None:
            if box == tiling.box and itemsize == tiling.itemsize:
                stamps = tiling.stamps
                seen = stamps.get(starts)             # only aligned starts are kept
                if seen is not None:                  # a seen box: all hit or all miss
                    total = seen[1]
                    if self.clock - seen[0] < self.capacity:
                        stamps[starts] = (self.clock, total)
                        self.hits += total
                        return total, 0
                    return self._miss_tile(tiling, starts, total)
                if _aligned(starts, box):
                    return self._new_tile(tiling, starts)
            self._untile(name)
        elif name not in self.maps and _tiles(shape, itemsize, starts, box, self.sector):
            tiling = self.tiled[name] = _Tiling(shape, itemsize, box)
            return self._new_tile(tiling, starts)
        return self._sector_access(name, shape, itemsize, starts, box)

    # ------------------------------------------------------------------ tiled tensors
    def _new_tile(self, tiling, starts) -> tuple[int, int]:
        total = sectors(tiling.shape, tiling.itemsize, starts, tiling.box, self.sector)
        if not total:
            return 0, 0                        # outside the tensor: touches nothing
        return self._miss_tile(tiling, starts, total)

    def _miss_tile(self, tiling, starts, total: int) -> tuple[int, int]:
        self.clock += total
        tiling.stamps[starts] = (self.clock, total)
        self.misses += total
        if self.clock > REBASE:
            self._rebase()
        return 0, total

    def _untile(self, name: str) -> None:
        """The tensor leaves the tiled pattern: its boxes' stamps go into a sector map
        (boxes never overlap, so the order does not matter) and the repeat shortcut."""
        tiling = self.tiled.pop(name)
        box = tiling.box
        # the map's rows are as the tensor's first access (the tiling's) sized them
        self._map(name, tiling.shape, tiling.itemsize)
        for starts, (stamp, total) in tiling.stamps.items():
            self._view(name, tiling.shape, tiling.itemsize, starts, box)[...] = stamp
            self.boxes[(name, starts, box, tiling.itemsize)] = (stamp, total)

    # ------------------------------------------------------------------ the sector map
    def _sector_access(self, name, shape, itemsize, starts, box) -> tuple[int, int]:
        key = (name, starts, box, itemsize)     # the same box of another width is not
        seen = self.boxes.get(key)               # a repeat: its sectors differ
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
        if self.clock > REBASE:
            self._rebase()
        return hit, miss

    def _flush(self, name: str) -> None:
        """Write the touches the repeat shortcut deferred for tensor `name`."""
        touched = self.pending.pop(name, None)
        if touched:
            for (_, starts, box, _), (shape, itemsize, clock) in touched.items():
                self._view(name, shape, itemsize, starts, box)[...] = clock

    def _map(self, name, shape, itemsize):
        """The tensor's map of last-touch clocks, made (nothing resident) at its first
        use: a row of `itemsize`-byte elements per index of the leading dims."""
        m = self.maps.get(name)
        if m is None:
            row = -(-shape[-1] * itemsize // self.sector)
            m = np.full(tuple(shape[:-1]) + (row,), -(self.capacity + 1), np.int64)
            self.maps[name] = m
        return m

    def _view(self, name, shape, itemsize, starts, box):
        """The sectors of `box` in the tensor's map (a numpy view), None if empty."""
        m = self._map(name, shape, itemsize)
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

    # ------------------------------------------------------------------ clocks, copies
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
        for tiling in self.tiled.values():    # a forgotten box reads as never seen
            tiling.stamps = {k: (c - shift, n) for k, (c, n) in tiling.stamps.items()
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
        new.tiled = {k: v.copy() for k, v in self.tiled.items()}
        new.boxes = dict(self.boxes)
        return new


# stamps are rebased past this clock (dma.compiled_starts reads it once a run)
REBASE = 1 << 40


def _aligned(starts, box) -> bool:
    for s, e in zip(starts, box):
        if s % e:
            return False
    return True


def _tiles(shape, itemsize: int, starts, box, sector: int) -> bool:
    """Whether `box` at `starts` can begin a tiled tensor: a non-empty box shape at
    starts that are multiples of it, whose boxes share no sector."""
    if min(box) <= 0 or not _aligned(starts, box):
        return False
    return (box[-1] * itemsize) % sector == 0 or box[-1] >= shape[-1]


def sectors(shape, itemsize: int, starts, box, sector: int = 32) -> int:
    """Sectors a store of `box` writes (rows times the sectors one row spans)."""
    last = len(shape) - 1
    rows = 1
    for i in range(last):               # min / max written out (a hot path)
        s, end, n = starts[i], starts[i] + box[i], shape[i]
        c = (end if end < n else n) - (s if s > 0 else 0)
        if c <= 0:
            return 0
        rows *= c
    s, end, n = starts[last], starts[last] + box[last], shape[last]
    lo, hi = (s if s > 0 else 0) * itemsize, (end if end < n else n) * itemsize
    if hi <= lo:
        return 0
    return rows * (-(-hi // sector) - lo // sector)
