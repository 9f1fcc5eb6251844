"""Property tests, in one process: the layout and send-slot kernels against numpy for
drawn routings (ragged token counts, -1 slots, any placement of experts on ranks), and
the dispatch plan against a brute-force assignment of rows."""
import numpy as np
from hypothesis import given, settings, strategies as st

from tilelang.ep.plan import Plan
from tilelang.ops.ep import layout_kernels


@st.composite
def routings(draw):
    num_ranks = draw(st.integers(1, 6))
    num_experts = draw(st.integers(1, 24))
    num_tokens = draw(st.integers(0, 150))
    num_topk = draw(st.integers(1, 8))
    seed = draw(st.integers(0, 2 ** 31))
    rng = np.random.default_rng(seed)
    topk = rng.integers(-1, num_experts, (num_tokens, num_topk)).astype(np.int64)
    placement = rng.integers(0, num_ranks, num_experts).astype(np.int32)
    return topk, placement, num_ranks


@settings(max_examples=40, deadline=None)
@given(routings())
def test_layout_matches_numpy(case):
    topk, placement, R = case
    E = placement.size
    lib = layout_kernels()
    per_rank = np.zeros(R, np.int32)
    per_expert = np.zeros(E, np.int32)
    in_rank = np.zeros((topk.shape[0], R), np.bool_)
    invalid = np.array([0, 2 ** 31 - 1], np.int32)
    lib["dispatch_layout"](topk, placement, per_rank, per_expert, in_rank, invalid)
    owner = np.where(topk >= 0, placement[np.maximum(topk, 0)], -1)
    want_in = np.stack([(owner == r).any(axis=1) for r in range(R)], axis=1).reshape(-1, R)
    assert np.array_equal(in_rank, want_in)
    assert np.array_equal(per_rank, want_in.sum(axis=0))
    assert np.array_equal(per_expert, [(topk == e).sum() for e in range(E)])
    assert invalid[0] == 0
    slots = np.empty(in_rank.shape, np.int32)
    lib["send_slots"](in_rank, slots)
    for r in range(R):
        hit = np.flatnonzero(in_rank[:, r])
        assert np.array_equal(slots[hit, r], np.arange(hit.size))
        assert np.all(slots[~in_rank[:, r], r] == -1)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2 ** 31), st.integers(1, 100))
def test_layout_flags_bad_ids(seed, num_tokens):
    rng = np.random.default_rng(seed)
    topk = rng.integers(-1, 8, (num_tokens, 3)).astype(np.int64)
    bad = rng.integers(0, num_tokens)
    topk[bad, 1] = rng.choice([8, 1000, -2, -7])
    per_rank, per_expert = np.zeros(2, np.int32), np.zeros(8, np.int32)
    in_rank = np.zeros((num_tokens, 2), np.bool_)
    invalid = np.array([0, 2 ** 31 - 1], np.int32)
    layout_kernels()["dispatch_layout"](topk, np.repeat(np.arange(2, dtype=np.int32), 4),
                                        per_rank, per_expert, in_rank, invalid)
    assert invalid.tolist() == [1, bad]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(0, 2 ** 31), st.integers(1, 3))
def test_plan_places_every_row_once(R, seed, per_host):
    """Receive rows of each rank are filled exactly once, by source then index, and
    staging rows of other hosts never collide with them."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 9, (R, R))
    hosts = tuple(r // per_host for r in range(R))
    plans = [Plan(counts, me, hosts) for me in range(R)]
    for r in range(R):
        filled = np.zeros(plans[r].recv_rows + plans[r].staging_rows, np.int64) - 1
        for s in range(R):
            pe, base = plans[s].dispatch_targets()
            if pe[r] == r:                                  # written straight into r
                rows = base[r] + np.arange(counts[s, r])
                assert np.all(filled[rows] == -1)
                filled[rows] = s
            else:                                           # staged on s, MPI to r
                assert hosts[s] != hosts[r] and pe[r] == s
                assert base[r] >= plans[s].recv_rows
                rows = plans[r].recv_start(s) + np.arange(counts[s, r])
                assert np.all(filled[rows] == -1)
                filled[rows] = s
        n = counts[:, r].sum()
        assert list(filled[:n]) == sorted(filled[:n]) and np.all(filled[n:] == -1)
        assert plans[r].num_recv == n
        assert np.array_equal(plans[r].rank_prefix_matrix[:, r], np.cumsum(counts[:, r]))
    for me in range(R):
        pe, base = plans[me].combine_sources()
        for r in range(R):
            if hosts[r] == hosts[me]:
                assert pe[r] == r and base[r] == plans[r].recv_start(me)
            else:
                assert pe[r] == me and base[r] == plans[me].staging_start(r)
