"""Rank programs of the EP tests, run by the launcher (`shm`) or mpiexec (`mpi`):
`python ep_workers.py SCENARIO`. Every rank regenerates every rank's inputs from the
seed, so it can check exactly what it must receive. A failed check raises (non-zero
exit); the last line a rank prints is `RANK r OK`."""
from __future__ import annotations

import os
import sys
import time

import ml_dtypes
import numpy as np

import tilelang.ep as ep

BF16 = ml_dtypes.bfloat16
SEED = 1234


def inputs(rank: int, num_tokens: int, hidden: int, num_topk: int, num_experts: int):
    """(x_rand bf16, topk_idx with -1s, topk_weights) of `rank`."""
    rng = np.random.default_rng(SEED + rank)
    x = rng.standard_normal((num_tokens, hidden)).astype(np.float32).astype(BF16)
    scores = rng.random((num_tokens, num_experts)) + 0.1
    topk = np.argsort(-scores, axis=1)[:, :num_topk].astype(np.int64)
    topk[rng.random((num_tokens, num_topk)) < 0.1] = -1          # some slots not routed
    topk[::11] = -1                                               # some tokens nowhere
    w = rng.random((num_tokens, num_topk)).astype(np.float32)
    return x, topk, w


def layout_ref(topk, num_experts: int, num_ranks: int):
    per_expert = np.array([(topk == e).sum() for e in range(num_experts)], np.int32)
    owner = np.where(topk >= 0, topk // (num_experts // num_ranks), -1)
    in_rank = np.stack([(owner == r).any(axis=1) for r in range(num_ranks)], axis=1)
    return in_rank.sum(axis=0).astype(np.int32), per_expert, in_rank


def rounded_once(out, exact, abs_sum, num_terms):
    """Where bf16 `out` is `exact` (the float64 sum) rounded once: within half a bf16 ulp
    of it, plus what the fp32 accumulation may lose (num_terms * 2^-24 * sum |term|)."""
    scale = np.maximum(np.abs(exact), np.finfo(np.float32).tiny)
    half_ulp = 2.0 ** (np.floor(np.log2(scale)) - 8)
    slack = num_terms * 2.0 ** -24 * abs_sum
    return np.abs(out.astype(np.float64) - exact) <= half_ulp + slack


def recipe(group, num_tokens=96, hidden=256, num_topk=4, experts_per_rank=4):
    """DeepEP's test_intranode, on numpy."""
    me, R = group.rank(), group.size()
    E = experts_per_rank * R
    size = ep.Buffer.get_buffer_size_hint(num_tokens, hidden, R, num_topk, x_bytes=4)
    if group.transport == "mpi":            # DeepEP's spelling for an mpi4py communicator
        buffer = ep.Buffer(None, size, comm=group.comm)
        assert buffer.group is group
    else:
        buffer = ep.Buffer(group, size)
    data = [inputs(s, num_tokens, hidden, num_topk, E) for s in range(R)]
    refs = [layout_ref(d[1], E, R) for d in data]
    x, topk, w = data[me]

    # layout
    per_rank, rdma, per_expert, in_rank, event = buffer.get_dispatch_layout(topk, E)
    event.current_stream_wait()
    assert np.array_equal(per_rank, refs[me][0]), (per_rank, refs[me][0])
    assert np.array_equal(per_expert, refs[me][1])
    assert np.array_equal(in_rank, refs[me][2])
    assert (rdma is None) == (group.num_hosts == 1)
    layout = dict(num_tokens_per_rank=per_rank, is_token_in_rank=in_rank,
                  num_tokens_per_expert=per_expert)

    # rows filled with the source rank and token index arrive in (source, index) order
    tagged = np.repeat((me * 100000 + np.arange(num_tokens, dtype=np.float32))[:, None],
                       hidden, axis=1)
    recv, ridx, rw, counts, handle, _ = buffer.dispatch(tagged, topk_idx=topk,
                                                        topk_weights=w, **layout)
    order = [(s, t) for s in range(R) for t in np.flatnonzero(refs[s][2][:, me])]
    want = np.array([s * 100000 + t for s, t in order], np.float32)
    assert recv.shape == (len(order), hidden), (recv.shape, len(order))
    assert np.array_equal(recv, np.repeat(want[:, None], hidden, axis=1))
    assert recv.shape[0] == sum(refs[s][0][me] for s in range(R))
    if group.num_hosts == 1:              # DeepEP's intranode handle: the prefix matrix
        prefix = handle[0]
        assert prefix.shape == (R, R) and len(handle) == 6
        assert np.array_equal(handle[-2], in_rank)
    else:                                 # its internode one: is_token_in_rank first
        assert len(handle) == 10 and np.array_equal(handle[0], in_rank)
        prefix = np.repeat(handle[-4][:, None], R, axis=1)
    assert prefix[R - 1, me] == len(order)
    assert [int(prefix[s, me]) for s in range(R)] == \
        list(np.cumsum([refs[s][2][:, me].sum() for s in range(R)]))
    # received expert ids are local ids or -1; per-expert counts are the global sums
    mine = slice(me * experts_per_rank, (me + 1) * experts_per_rank)
    glob = sum(refs[s][1] for s in range(R))[mine]
    assert counts == [int(c) for c in glob], (counts, glob)
    assert ((ridx == -1) | ((ridx >= 0) & (ridx < experts_per_rank))).all()
    for e in range(experts_per_rank):
        assert (ridx == e).sum() == glob[e]
    src_topk = np.concatenate([data[s][1][t][None] for s, t in order]) if order else \
        np.zeros((0, num_topk), np.int64)
    src_w = np.concatenate([data[s][2][t][None] for s, t in order]) if order else \
        np.zeros((0, num_topk), np.float32)
    local = (src_topk >= mine.start) & (src_topk < mine.stop)
    assert np.array_equal(ridx, np.where(local, src_topk - mine.start, -1))
    assert np.array_equal(rw, np.where(local, src_w, 0))

    # expert alignment pads the per-expert counts
    *_, aligned, _, _ = buffer.dispatch(tagged, topk_idx=topk, topk_weights=w,
                                        expert_alignment=8, **layout)
    assert aligned == [int(-(-c // 8) * 8) for c in glob]

    # combine(dispatch(x)) == x * (ranks reached), and the weights come back
    recv, ridx, rw, counts, handle, _ = buffer.dispatch(x, topk_idx=topk, topk_weights=w,
                                                        **layout)
    fresh = np.array(recv, copy=True)         # recv is a view, valid until the next one
    combined, cw, _ = buffer.combine(recv, handle, topk_weights=rw)
    reach = np.maximum(in_rank.sum(axis=1), 1)[:, None]
    routed = in_rank.any(axis=1)
    diff = ep.calc_diff(combined.astype(np.float64)[routed] / reach[routed],
                        x.astype(np.float64)[routed])
    assert diff < 5e-6, diff
    assert np.all(combined[~routed].astype(np.float32) == 0)
    assert np.allclose(cw, np.where(topk >= 0, w, 0), rtol=1e-6), np.abs(cw - w).max()
    # an x outside the heap is copied in first; an x written into combine_input is not
    again, again_w, _ = buffer.combine(fresh, handle, topk_weights=np.array(rw))
    assert np.array_equal(again.view(np.uint16), combined.view(np.uint16))
    assert np.array_equal(again_w, cw)
    into = np.full(combined.shape, 7, combined.dtype)
    same, _, _ = buffer.combine(recv, handle, out=into)
    assert same is into and np.array_equal(into.view(np.uint16), combined.view(np.uint16))
    staged = buffer.combine_input(handle)
    staged[:] = fresh
    third, _, _ = buffer.combine(staged, handle)
    assert np.array_equal(third.view(np.uint16), combined.view(np.uint16))

    # DeepEP's constant rows: x = rank, received rows equal their source rank
    const = (np.ones((num_tokens, hidden), np.float32) * me).astype(BF16)
    recv_c, _, _, _, handle_c, _ = buffer.dispatch(const, **layout)
    start = 0
    for s in range(R):
        end = int(handle_c.plan.rank_prefix_matrix[s, me])
        assert np.all(recv_c[start:end].astype(np.float32) == s)
        start = end

    # copy=True hands out arrays of their own instead of views of the heap
    own, own_idx, _, _, _, _ = buffer.dispatch(x, topk_idx=topk, topk_weights=w, copy=True,
                                               **layout)
    assert not buffer.heap.contains(own.ctypes.data, own.nbytes) and own.flags.owndata
    assert np.array_equal(own.view(np.uint16), fresh.view(np.uint16))

    # a cached dispatch through the handle equals the fresh one
    again, none1, none2, none3, none4, _ = buffer.dispatch(x, handle=handle)
    assert none1 is None and none2 is None and none3 is None and none4 is None
    assert np.array_equal(again.view(np.uint16), fresh.view(np.uint16))

    # fp8 dispatch: the e4m3 rows and their scales arrive bit for bit
    q, scales = ep.per_token_cast_to_fp8(x.astype(np.float32))
    (rq, rs), *_ = buffer.dispatch((q, scales), topk_idx=topk, topk_weights=w, **layout)
    src = [ep.per_token_cast_to_fp8(data[s][0].astype(np.float32)) for s in range(R)]
    want_q = np.concatenate([src[s][0][t][None] for s, t in order]).view(np.uint8)
    want_s = np.concatenate([src[s][1][t][None] for s, t in order])
    assert np.array_equal(rq.view(np.uint8), want_q) and np.array_equal(rs, want_s)
    back = ep.per_token_cast_back(rq, rs)
    ref = np.concatenate([data[s][0][t][None] for s, t in order]).astype(np.float32)
    assert ep.calc_diff(back, ref) < 1e-3

    # num_worst_tokens pads the received tensors; padding rows route nowhere
    worst = num_tokens * R
    rx, ri, rwt, lst, _, _ = buffer.dispatch(x, topk_idx=topk, topk_weights=w,
                                             num_worst_tokens=worst, **layout)
    assert rx.shape[0] == worst and ri.shape[0] == worst and lst == []
    assert np.all(ri[len(order):] == -1)
    return buffer


def scenario_recipe():
    group = ep.init()
    recipe(group)
    print(f"RANK {group.rank()} OK", flush=True)


def scenario_recipe_wide():
    """Rows of several dispatch blocks with a ragged end, most of them off a cache line
    (hidden 1100: 2200-byte bf16, 4400-byte fp32 and 1100-byte fp8 rows), so dispatch
    streams some rows whole and stores others through the cache."""
    group = ep.init()
    recipe(group, num_tokens=40, hidden=1100)
    print(f"RANK {group.rank()} OK", flush=True)


def scenario_bad_expert():
    """Rank 1 routes a token to expert E: every rank raises before any data moves."""
    group = ep.init()
    me, R = group.rank(), group.size()
    E, T_, H = 4 * R, 32, 128
    buffer = ep.Buffer(group, 1 << 22)
    x, topk, w = inputs(me, T_, H, 2, E)
    layout = buffer.get_dispatch_layout(topk, E)
    if me == 1:
        topk = topk.copy()
        topk[5, 1] = E
    recv_rows = buffer.get_local_buffer_tensor(np.uint8)
    recv_rows[:] = 0
    group.barrier()
    try:
        buffer.dispatch(x, topk_idx=topk, topk_weights=w, num_tokens_per_rank=layout[0],
                        is_token_in_rank=layout[3], num_tokens_per_expert=layout[2])
    except ep.RoutingError as e:
        assert e.code == "TL0909" and "rank 1" in str(e) and "token 5" in str(e), str(e)
        assert not recv_rows.any(), "data moved before the check"
        print(f"RANK {me} RAISED {e}", flush=True)
        print(f"RANK {me} OK", flush=True)
        return
    raise AssertionError("no error")


def scenario_small_heap():
    """A dispatch, then a combine, too big for the heap raise TL0910 on every rank before
    any data moves; the same Buffer goes straight on to a dispatch and combines (one
    with DeepEP's bias pair) that fit (a rank that raised without its peers in step would put its next counts into a
    peer that had not read these yet)."""
    group = ep.init()
    me, R = group.rank(), group.size()
    E, H = 4 * R, 128
    buffer = ep.Buffer(group, 0)                 # the smallest heap: 1 MiB of rows
    rows = buffer.get_local_buffer_tensor(np.uint8)
    big = inputs(me, 4096, H, 2, E)              # each rank receives ~2 MiB of rows
    small = [inputs(s, 32, H, 2, E) for s in range(R)]

    def dispatch(x, topk, w):
        per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(topk, E)
        return buffer.dispatch(x, topk_idx=topk, topk_weights=w, num_tokens_per_rank=per_rank,
                               is_token_in_rank=in_rank, num_tokens_per_expert=per_expert)

    def expect_too_small(call, what):
        try:
            call()
        except ep.BufferTooSmallError as e:
            assert e.code == "TL0910" and f"this {what} needs" in str(e), str(e)
            print(f"RANK {me} RAISED {e.code} {e}", flush=True)
            return
        raise AssertionError(f"no error: {what}")

    for rep in range(3):
        rows[:] = 0
        group.barrier()
        expect_too_small(lambda: dispatch(*big), "dispatch")
        assert not rows.any(), "data moved before the check"
        recv_x, _, _, _, handle, _ = dispatch(*small[me])
        in_rank = [layout_ref(d[1], E, R)[2] for d in small]
        want = np.concatenate([small[s][0][in_rank[s][:, me]] for s in range(R)])
        assert np.array_equal(recv_x, want)
        wide = np.zeros((recv_x.shape[0], 128 * H), BF16)    # ~4 MiB of combine rows
        expect_too_small(lambda: buffer.combine(wide, handle), "combine")
        combined, _, _ = buffer.combine(recv_x, handle)
        copies = in_rank[me].sum(axis=1, keepdims=True)
        exact = small[me][0].astype(np.float64) * copies
        assert np.array_equal(combined, exact.astype(np.float32).astype(BF16))
        # expert outputs that differ by rank, and DeepEP's bias pair nearly cancelling
        # their sum: added in fp32, rounded once (a sum rounded before the bias is off)
        def expert_out(r, rows):
            return (rows.astype(np.float32) * (1 + 0.37 * r)).astype(BF16).astype(np.float64)
        outs = [expert_out(r, small[me][0]) for r in range(R)]
        exact = sum(np.where(in_rank[me][:, r:r + 1], outs[r], 0) for r in range(R))
        noise = np.random.default_rng(rep).standard_normal(exact.shape) * 0.01
        bias = ((-exact).astype(BF16), noise.astype(BF16))
        combined, _, _ = buffer.combine(expert_out(me, recv_x).astype(BF16), handle,
                                        bias=bias)
        exact = exact + bias[0].astype(np.float64) + bias[1].astype(np.float64)
        assert rounded_once(combined, exact, 3 * sum(np.abs(o) for o in outs), R + 2).all()
    buffer.destroy()
    print(f"RANK {me} OK", flush=True)


def scenario_dies():
    """Rank 1 dies in the middle of a dispatch (after notify, before its rows)."""
    group = ep.init()
    me, R = group.rank(), group.size()
    E, T_, H = 4 * R, 32, 128
    buffer = ep.Buffer(group, 1 << 22)
    x, topk, w = inputs(me, T_, H, 2, E)
    per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(topk, E)
    if me == 1:
        def die(*args, **kwargs):
            os._exit(17)
        buffer._move = die
    start = time.monotonic()
    try:
        buffer.dispatch(x, topk_idx=topk, topk_weights=w, num_tokens_per_rank=per_rank,
                        is_token_in_rank=in_rank, num_tokens_per_expert=per_expert)
    except ep.RankError as e:
        print(f"RANK {me} RAISED after {time.monotonic() - start:.1f} s: "
              f"{type(e).__name__} {e.code} {e}", flush=True)
        print(f"RANK {me} OK", flush=True)
        return
    raise AssertionError("no error")


def scenario_ring():
    """The multi-rank primitives in one kernel (kernels/ring.tl)."""
    import tilelang
    group = ep.init()
    me, R = group.rank(), group.size()
    k = tilelang.compile(os.path.join(os.path.dirname(__file__), "kernels", "ring.tl"))
    heap = group.heap(1 << 20)
    N = 7
    x = heap.alloc((N, 64), np.float32)
    x[:] = me * 100 + np.arange(N, dtype=np.float32)[:, None]
    recv = heap.alloc((N, 64), np.float32)
    sig, bar = heap.alloc((16,), np.int32), heap.alloc((16,), np.int32)
    back, counter = np.zeros((N, 64), np.float32), np.zeros(1, np.int32)
    slots, ids = np.zeros(N, np.int32), np.zeros(2, np.int32)
    pulled, pushed = np.zeros((N, 64), np.float32), heap.alloc((N, 64), np.float32)
    group.barrier()
    for rep in range(2):                         # barriers and signals keep counting
        k(x, recv, back, sig, bar, counter, slots, ids, pulled, pushed)
    group.barrier()                              # every rank has streamed into `pushed`
    prev = (me - 1) % R
    assert np.array_equal(recv, prev * 100 + np.arange(N, dtype=np.float32)[:, None] +
                          np.zeros((1, 64), np.float32))
    assert np.array_equal(back, x)               # my rows, read back from the next rank
    assert np.array_equal(pulled, x)             # ... and through a view of its `recv`
    assert np.array_equal(pushed, recv)          # the previous rank's rows, streamed
    assert sorted(slots) == list(range(N, 2 * N)) and counter[0] == 2 * N
    assert ids.tolist() == [me, R]
    assert sig[prev] == 2 * N and bar[:R].tolist() == [2 * N] * R
    group.barrier()
    print(f"RANK {me} OK", flush=True)


if __name__ == "__main__":
    globals()[f"scenario_{sys.argv[1]}"]()
