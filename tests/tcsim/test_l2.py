"""The L2 cache's shortcuts (tiled tensors, exact repeats) against a plain sector map:
on random access sequences — tiled, then breaking the pattern, across `fresh_counts`
copies and clock rebases — every access has the same hits and misses."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from tilelang.runtime.tcsim import l2 as l2mod
from tilelang.runtime.tcsim.l2 import L2

SECTOR = 8


class PlainL2:
    """The definition: one last-touch clock per sector, read and written at every access."""

    def __init__(self, capacity: int):
        self.capacity = capacity // SECTOR
        self.clock = 0
        self.maps = {}

    def access(self, name, shape, itemsize, starts, box):
        m = self.maps.get(name)
        if m is None:
            row = -(-shape[-1] * itemsize // SECTOR)
            m = self.maps[name] = np.full(tuple(shape[:-1]) + (row,), -(self.capacity + 1))
        index = [slice(max(s, 0), min(s + e, n)) for s, e, n in
                 zip(starts[:-1], box[:-1], shape[:-1])]
        lo = max(starts[-1], 0) * itemsize
        hi = min(starts[-1] + box[-1], shape[-1]) * itemsize
        if hi <= lo or any(i.stop <= i.start for i in index):
            return 0, 0
        view = m[tuple(index + [slice(lo // SECTOR, -(-hi // SECTOR))])]
        hit = int(np.count_nonzero(view > self.clock - self.capacity))
        miss = view.size - hit
        self.clock += miss
        view[...] = self.clock
        return hit, miss

    def copy(self):
        new = PlainL2(self.capacity * SECTOR)
        new.clock = self.clock
        new.maps = {k: v.copy() for k, v in self.maps.items()}
        return new


TENSORS = {"A": ((5, 24), 4), "B": ((3, 37), 2), "C": ((4, 3, 13), 1)}


@st.composite
def accesses(draw):
    """Per tensor a box shape; then a sequence of loads, most of them tiles of that box
    (starts on its multiples, some outside the tensor), some anywhere, some copies."""
    boxes = {}
    for name, (shape, itemsize) in TENSORS.items():
        box = [draw(st.integers(1, n)) for n in shape[:-1]]
        unit = max(1, SECTOR // itemsize)
        last = draw(st.sampled_from([unit, 2 * unit, shape[-1], shape[-1] + 3, 3]))
        boxes[name] = tuple(box + [last])
    ops = []
    for _ in range(draw(st.integers(1, 60))):
        kind = draw(st.sampled_from(["tile"] * 6 + ["any", "fresh", "scalar"]))
        name = draw(st.sampled_from(sorted(TENSORS)))
        shape, itemsize = TENSORS[name]
        if kind == "tile":
            box = boxes[name]
            starts = tuple(draw(st.integers(-1, -(-n // e))) * e for n, e in zip(shape, box))
            ops.append((name, starts, box, itemsize))
        elif kind == "any":
            box = tuple(draw(st.integers(0, n + 2)) for n in shape)
            starts = tuple(draw(st.integers(-2, n)) for n in shape)
            ops.append((name, starts, box, itemsize))
        elif kind == "scalar":        # a scalar load (LDG), which may read another width
            starts = tuple(draw(st.integers(0, n - 1)) for n in shape)
            ops.append((name, starts, (1,) * len(shape), draw(st.sampled_from([1, 4]))))
        else:
            ops.append(None)
    return ops


def _replay(ops, capacity):
    cache, plain = L2(capacity, SECTOR), PlainL2(capacity)
    for op in ops:
        if op is None:                       # the next grid: a copy of the contents
            cache, plain = cache.fresh_counts(), plain.copy()
            continue
        name, starts, box, itemsize = op
        shape = TENSORS[name][0]
        assert cache.access(name, shape, itemsize, starts, box) == \
            plain.access(name, shape, itemsize, starts, box), op
    return cache, plain


@settings(max_examples=300, deadline=None)
@given(accesses(), st.sampled_from([16, 64, 256, 4096]))
def test_the_shortcuts_answer_as_the_sector_map(ops, capacity):
    cache, plain = _replay(ops, capacity)
    assert cache.clock == plain.clock


@settings(max_examples=100, deadline=None)
@given(accesses(), st.sampled_from([16, 64]))
def test_rebasing_the_clock_keeps_every_answer(ops, capacity):
    saved = l2mod.REBASE
    l2mod.REBASE = 40                       # rebase every few dozen misses
    try:
        _replay(ops, capacity)
    finally:
        l2mod.REBASE = saved


def test_a_tiled_tensor_keeps_no_map_until_the_pattern_breaks():
    cache = L2(1 << 20, 32)                  # 32768 sectors
    shape = (1024, 1024)                     # 128 sectors a row
    for i in (0, 64):
        assert cache.access("A", shape, 4, (i, 0), (64, 1024)) == (0, 64 * 128)
    assert cache.access("A", shape, 4, (0, 0), (64, 1024)) == (64 * 128, 0)
    assert "A" not in cache.maps
    # a box across two tiles, one of them never loaded: half of it resident
    assert cache.access("A", shape, 4, (96, 0), (64, 1024)) == (32 * 128, 32 * 128)
    assert "A" in cache.maps and "A" not in cache.tiled


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 40), st.integers(0, 12), st.integers(1, 30)),
                min_size=1, max_size=3), st.sampled_from([1, 2, 4, 8]))
def test_sectors_counts_the_rows_times_the_sectors_a_row_spans(dims, itemsize):
    starts, box, shape = (tuple(x) for x in zip(*dims))
    m = np.zeros(tuple(shape[:-1]) + (-(-shape[-1] * itemsize // 32),))
    index = tuple(slice(max(s, 0), max(min(s + e, n), 0)) for s, e, n in
                  zip(starts[:-1], box[:-1], shape[:-1]))
    lo, hi = max(starts[-1], 0) * itemsize, min(starts[-1] + box[-1], shape[-1]) * itemsize
    want = 0 if hi <= lo else m[index + (slice(lo // 32, -(-hi // 32)),)].size
    assert l2mod.sectors(shape, itemsize, starts, box) == want
