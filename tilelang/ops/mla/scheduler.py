"""FlashMLA's tile scheduler: the batch's cache blocks cut into runs of equal cost, one
run per block of the split grid.

A request of n tokens is max(1, ceil(n / 64)) blocks of 64; a split costs
FIXED_OVERHEAD blocks more (loading Q, writing a partial, combining it). The runs walk the
requests in order: each takes `ceil(total / parts) + FIXED_OVERHEAD` of cost, finishing
requests while they fit and cutting the next one where it runs out, so a long request is
spread over several runs (its splits) and short ones share a run.

The metadata rows have FlashMLA's layout (`DecodingSchedMeta`, 8 int32 each):
begin_req, end_req (both inclusive), begin_block, end_block (in the first / last request:
inclusive / exclusive), begin_split (the first request's split index), is_first_split,
is_last_split, padding. `num_splits` (b + 1) is the running count of splits: request i's
partial results go to slots num_splits[i] .. num_splits[i + 1] - 1.
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

BLOCK = 64
FIXED_OVERHEAD = 5
META_FIELDS = 8

_FORCED = threading.local()


@contextlib.contextmanager
def forced_splits(splits: int):
    """Test knob: within the block, every request is cut into `splits` runs of equal
    block counts (fewer when it has fewer blocks), one part each, instead of FlashMLA's
    balanced runs. Covers 1 split (the combine copies) to many."""
    if not isinstance(splits, int) or splits < 1:
        raise ValueError(f"splits must be a positive int, got {splits!r}")
    old = getattr(_FORCED, "splits", None)
    _FORCED.splits = splits
    try:
        yield
    finally:
        _FORCED.splits = old


def request_blocks(cache_seqlens) -> np.ndarray:
    """Blocks of each request: FlashMLA gives an empty request one (it still has a
    split, whose output is 0)."""
    n = np.asarray(cache_seqlens, np.int64)
    return np.maximum(-(-n // BLOCK), 1)


def schedule(cache_seqlens, num_parts: int, fixed_overhead: int = FIXED_OVERHEAD):
    """(metadata (num_parts, 8) int32, num_splits (b + 1,) int32) for these lengths."""
    forced = getattr(_FORCED, "splits", None)
    if forced is not None:
        return _even(request_blocks(cache_seqlens), forced)
    return _balanced(request_blocks(cache_seqlens), num_parts, fixed_overhead)


def _balanced(blocks: np.ndarray, num_parts: int, fixed: int):
    b = len(blocks)
    total = int(blocks.sum()) + fixed * b
    payload = -(-total // num_parts) + fixed
    meta = np.zeros((num_parts, META_FIELDS), np.int32)
    num_splits = np.zeros(b + 1, np.int32)
    req = block = split = cum = 0
    for p in range(num_parts):
        begin = (req, block, split)
        first_cut = block != 0
        left = payload
        while req < b:
            remain = int(blocks[req]) - block
            if left >= remain + fixed:          # the rest of this request fits
                cum += split + 1
                num_splits[req + 1] = cum
                left -= remain + fixed
                req, block, split = req + 1, 0, 0
            else:                               # cut it here
                if left - fixed > 0:
                    block += left - fixed
                    split += 1
                break
        end_req = req if block > 0 else req - 1
        end_block = block if block > 0 else (int(blocks[end_req]) if end_req >= 0 else 0)
        last_cut = 0 <= end_req < b and end_block != blocks[end_req]
        if begin[0] == end_req:
            first_cut = last_cut = first_cut or last_cut
        meta[p] = (begin[0], end_req, begin[1], end_block, begin[2], first_cut, last_cut, 0)
    assert req == b and block == 0 and split == 0, "FlashMLA's payload covers every block"
    return meta, num_splits


def _even(blocks: np.ndarray, splits: int):
    """Each request cut into min(splits, blocks) runs; one part per run."""
    rows, counts = [], []
    for r, n in enumerate(int(x) for x in blocks):
        k = min(splits, n)
        edges = [n * i // k for i in range(k + 1)]
        for s in range(k):
            rows.append((r, r, edges[s], edges[s + 1], s, int(k > 1), int(k > 1), 0))
        counts.append(k)
    meta = np.array(rows, np.int32).reshape(-1, META_FIELDS)
    num_splits = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return meta, num_splits


__all__ = ["schedule", "forced_splits", "request_blocks", "BLOCK", "FIXED_OVERHEAD"]


def metadata_input(cache_seqlens, shape) -> np.ndarray:
    """`tilec run --index sched=mla_schedule:cache_seqlens`: the metadata of a schedule
    over shape[0] parts for these lengths."""
    if len(shape) != 2 or shape[1] != META_FIELDS:
        raise ValueError(f"the metadata tensor is (parts, {META_FIELDS}), not {tuple(shape)}")
    return schedule(cache_seqlens, int(shape[0]))[0]


def splits_input(cache_seqlens, shape, parts: int) -> np.ndarray:
    """`--index num_splits=mla_splits:cache_seqlens:sched`: the cumulative split counts
    of the schedule over `parts` parts (the metadata tensor's rows)."""
    if tuple(shape) != (len(cache_seqlens) + 1,):
        raise ValueError(f"num_splits is (batch + 1,) = ({len(cache_seqlens) + 1},), not "
                         f"{tuple(shape)}")
    return schedule(cache_seqlens, parts)[1]
