"""combine.tl's `combine_reduce` on its own, in one process: every source row lives in this
rank's heap (src_pe 0), so one token can have any number of sources — none, one, two,
more than the kernel stages at once — and the hidden size can end inside a block. The
result must equal numpy's fp32 sum in source order, rounded once to bf16, bit for bit."""
import ml_dtypes
import numpy as np
import pytest

from tilelang.ops.ep import combine_kernels

from ep_workers import rounded_once


def reference(slots, base, x, w):
    out_x = np.zeros((slots.shape[0], x.shape[1]), np.float32)
    out_w = np.zeros((slots.shape[0], w.shape[1]), np.float32)
    for t in range(slots.shape[0]):
        first = True
        for r in range(slots.shape[1]):
            s = slots[t, r]
            if s >= 0:
                row = x[base[r] + s].astype(np.float32)
                out_x[t] = row if first else out_x[t] + row
                out_w[t] += w[base[r] + s]
                first = False
    return out_x.astype(ml_dtypes.bfloat16), out_w


def sources_in_heap(group, rng, counts, num_sources, hidden, topk):
    """Token t's rows on counts[t] of the sources, picked at random: the slot table, each
    source's base row, and the rows (x, w) in a new heap of the group, source after source.
    The heap is returned too: the caller holds it while the kernel runs (its arrays alone do
    not keep it registered)."""
    slots = np.full((len(counts), num_sources), -1, np.int32)
    for t, c in enumerate(counts):
        slots[t, rng.choice(num_sources, c, replace=False)] = t
    base = (np.arange(num_sources) * len(counts)).astype(np.int32)
    rows = num_sources * len(counts)
    heap = group.heap(rows * (hidden * 2 + topk * 4) + (1 << 16))
    x = heap.alloc((rows, hidden), ml_dtypes.bfloat16)
    x[:] = (rng.standard_normal((rows, hidden)) * 3).astype(ml_dtypes.bfloat16)
    w = heap.alloc((rows, topk), np.float32)
    w[:] = rng.random((rows, topk))
    return heap, slots, base, x, w


@pytest.mark.parametrize("hidden", [7, 512, 700, 1100])
def test_sums_any_number_of_sources_in_source_order(solo, hidden):
    rng = np.random.default_rng(hidden)
    num_sources, topk = 19, 3                  # 19 > the 8 rows staged at once
    counts = [0, 1, 2, 3, 8, 9, 17, 19]       # sources of token t
    heap, slots, base, x, w = sources_in_heap(solo, rng, counts, num_sources, hidden, topk)
    out_x = np.empty((len(counts), hidden), ml_dtypes.bfloat16)
    out_w = np.empty((len(counts), topk), np.float32)
    pe = np.zeros(num_sources, np.int32)
    combine_kernels("bfloat16")["combine_reduce"](slots, pe, base, x, w, out_x, out_w)
    ref_x, ref_w = reference(slots, base, x, w)
    assert np.array_equal(out_x.view(np.uint16), ref_x.view(np.uint16))
    np.testing.assert_allclose(out_w, ref_w, rtol=1e-6)


@pytest.mark.parametrize("hidden", [7, 700])
def test_bias_joins_the_fp32_sum_and_is_rounded_once(solo, hidden):
    """DeepEP's bias: sum of the source rows plus the bias, in fp32, rounded once. The
    bias nearly cancels the rows, so a sum rounded to bf16 before the bias is added is off
    by many ulps of the result: the check below tells the two apart."""
    rng = np.random.default_rng(7 + hidden)
    num_sources, topk = 5, 2
    counts = [0, 1, 2, 3, 5]
    heap, slots, base, x, w = sources_in_heap(solo, rng, counts, num_sources, hidden, topk)
    sources = np.zeros((len(counts), hidden))                 # float64 sums of the rows
    abs_sum = np.zeros((len(counts), hidden))
    for t in range(len(counts)):
        for r in np.flatnonzero(slots[t] >= 0):
            row = x[base[r] + slots[t, r]].astype(np.float64)
            sources[t] += row
            abs_sum[t] += np.abs(row)
    bias = (-sources + rng.standard_normal(sources.shape) * 0.01).astype(np.float32)
    exact = sources + bias.astype(np.float64)
    abs_sum += np.abs(bias)
    out_x = np.empty((len(counts), hidden), ml_dtypes.bfloat16)
    out_w = np.empty((len(counts), topk), np.float32)
    pe = np.zeros(num_sources, np.int32)
    combine_kernels("bfloat16")["combine_reduce_bias"](slots, pe, base, x, w, bias, out_x,
                                                       out_w)
    assert rounded_once(out_x, exact, abs_sum, num_sources + 1).all()
    np.testing.assert_allclose(out_w, reference(slots, base, x, w)[1], rtol=1e-6)
    # the sum rounded to bf16, then the bias added and rounded again, fails the check
    twice = (reference(slots, base, x, w)[0].astype(np.float32) + bias).astype(out_x.dtype)
    several = np.array(counts) >= 2                          # one row alone is exact
    off = ~rounded_once(twice, exact, abs_sum, num_sources + 1)[several]
    assert off.mean() > 0.25, off.mean()
