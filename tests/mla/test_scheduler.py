"""FlashMLA's tile scheduler: every cache block of every request lands in exactly one
part, each request's splits are numbered in order, and the parts' costs (a fixed cost
per split plus one per block) stay within FlashMLA's payload."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from tilelang.ops.mla.scheduler import FIXED_OVERHEAD, forced_splits, request_blocks, schedule


def _runs(meta, blocks):
    """(request, block range, split index) of every part's run of each request."""
    out = []
    for p in meta:
        for r in range(p[0], p[1] + 1):
            first = p[2] if r == p[0] else 0
            last = p[3] if r == p[1] else blocks[r]
            out.append((p, r, first, last, p[4] if r == p[0] else 0))
    return out


@settings(max_examples=60, deadline=None)
@given(lens=st.lists(st.integers(0, 9000), min_size=1, max_size=40),
       parts=st.integers(1, 140))
def test_schedule_covers_every_block_once(lens, parts):
    blocks = request_blocks(lens)
    meta, splits = schedule(lens, parts)
    assert meta.shape == (parts, 8) and splits.shape == (len(lens) + 1,)
    seen = [np.zeros(n, int) for n in blocks]
    by_req = {}
    for p, r, first, last, split in _runs(meta, blocks):
        seen[r][first:last] += 1
        by_req.setdefault(r, []).append((first, num := split))
        del num
    assert all((s == 1).all() for s in seen)
    assert splits[0] == 0 and (np.diff(splits) >= 1).all()
    for r, runs in by_req.items():               # splits 0, 1, ... in block order
        assert [s for _, s in sorted(runs)] == list(range(splits[r + 1] - splits[r]))
    payload = -(-(int(blocks.sum()) + FIXED_OVERHEAD * len(lens)) // parts) + FIXED_OVERHEAD
    for p in meta:
        cost = sum(last - first + FIXED_OVERHEAD for q, r, first, last, _ in _runs([p], blocks))
        assert cost <= payload + FIXED_OVERHEAD


def test_long_request_is_spread_over_the_parts():
    meta, splits = schedule([64 * 100, 64], 4)
    assert splits.tolist() == [0, 4, 5]          # the long one in 4 splits, the short in 1
    assert meta[:, 0].tolist() == [0, 0, 0, 0]


def test_forced_splits():
    with forced_splits(3):
        meta, splits = schedule([64 * 10, 64 * 2, 0], 99)
    assert splits.tolist() == [0, 3, 5, 6] and len(meta) == 6
