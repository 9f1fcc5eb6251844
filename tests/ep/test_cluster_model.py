"""The cluster model: a 2-rank dispatch and combine against timelines computed by hand,
a hierarchical case, and properties of the replay on random routings."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tilelang.ep.cluster.model import deepep_logical_bytes, simulate, token_bytes
from tilelang.ep.cluster.replay import _Generations, replay, replay_events
from tilelang.ep.cluster.spec import KINDS, ClusterSpec, Link
from tilelang.ep.cluster.traffic import build
from tilelang.ep.errors_eplb import EPError

# 1000 B/s links, 100-byte tokens: a token takes 0.1 s to send; NVLink latency 0.5 s
SLOW = dict(nvlink=Link(1000.0, 0.5), rdma=Link(500.0, 1.0), local=Link(4000.0, 0.0))
TWO = ClusterSpec(ranks=2, **SLOW)
# rank 0: token 0 -> rank 1, token 1 -> ranks 0 and 1, token 2 -> rank 0 (twice);
# rank 1: token 0 -> rank 0, its other tokens nowhere
DEST = np.array([[[1, -1], [0, 1], [0, 0]],
                 [[0, -1], [-1, -1], [-1, -1]]])


def test_two_ranks_dispatch_timeline():
    """One token a chunk. Rank 0's port sends, in token order, destination order rotated
    from itself: to itself t1 [0, .1], to 1 t0 [.1, .2] (+.5 latency, into rank 1's port
    [.7, .8]), to itself t2 [.2, .3], to 1 t1 [.3, .4] (into rank 1 [.9, 1.0]). Rank 1
    sends t0 to 0: [0, .1], into rank 0's port [.6, .7]. Last arrival: 1.0 s."""
    r = simulate(DEST, TWO, "dispatch", "flat", token_bytes=100, chunk=1)
    assert r.time == pytest.approx(1.0)
    assert r.messages == 5
    out, inn = KINDS.index("nvlink out"), KINDS.index("nvlink in")
    assert r.pool_bytes[0, out] == 400 and r.pool_bytes[1, inn] == 200
    assert r.pool_bytes[1, out] == 100 and r.pool_bytes[0, inn] == 100
    assert r.bottleneck() == ("nvlink out", 0, pytest.approx(0.4))


def test_two_ranks_combine_timeline():
    """The same messages back, in chunk order, destinations rotated from the sender:
    rank 1 returns t0 [0, .1] (into 0: [.6, .7]) and t1 [.1, .2] (into 0: [.7, .8]);
    rank 0 copies its own t1 [0, .1], returns rank 1's t0 [.1, .2] (into 1: [.7, .8]),
    copies its t2 [.2, .3]. Last arrival: 0.8 s."""
    r = simulate(DEST, TWO, "combine", "flat", token_bytes=100, chunk=1)
    assert r.time == pytest.approx(0.8)
    assert r.messages == 5


def test_chunks_group_tokens():
    """Two tokens a chunk: rank 0 sends to itself [0, .2], to rank 1 [.2, .4] (into 1
    [.9, 1.1]); rank 1 to 0 [0, .1] (into 0 [.6, .7])."""
    r = simulate(DEST, TWO, "dispatch", "flat", token_bytes=100, chunk=2)
    assert r.messages == 3
    assert r.time == pytest.approx(1.1)


def test_local_copy_engine():
    """self_copies="local": rank 0's own tokens go through its 4000 B/s local engine
    ([0, .025], [.025, .05]), its port sends only to rank 1: [0, .1], [.1, .2]; into
    rank 1 [.6, .7], [.7, .8]."""
    spec = TWO.with_(self_copies="local")
    r = simulate(DEST, spec, "dispatch", "flat", token_bytes=100, chunk=1)
    assert r.time == pytest.approx(0.8)


def test_hierarchical_forwards_through_the_same_index_rank():
    """2 nodes of 2 ranks. Rank 0's token goes to ranks 2 and 3 (node 1): one RDMA
    message to rank 2 (0.2 s at 500 B/s, +1 s), then rank 2 copies it to itself (its
    port, 0.1 s) and forwards it to rank 3 (0.1 s, +0.5 s, into 3: 0.1 s)."""
    spec = ClusterSpec(ranks=4, ranks_per_node=2, **SLOW)
    dest = np.full((4, 1, 2), -1)
    dest[0, 0] = [2, 3]
    r = simulate(dest, spec, "dispatch", "hierarchical", token_bytes=100, chunk=1)
    # RDMA out [0, .2], in at 1.2 [1.2, 1.4]; rank 2 port: self [1.4, 1.5], to 3
    # [1.5, 1.6] +.5 -> into 3 [2.1, 2.2]
    assert r.time == pytest.approx(2.2)
    assert r.messages == 3
    flat = simulate(dest, spec, "dispatch", "flat", token_bytes=100, chunk=1)
    assert flat.messages == 2              # one RDMA message per destination rank
    # the combine reduces on rank 2 before one RDMA message goes back
    back = simulate(dest, spec, "combine", "hierarchical", token_bytes=100, chunk=1)
    # rank 3 -> 2 [0, .1] +.5, into 2 [.6, .7]; rank 2 self [0, .1];
    # reduced chunk RDMA out of 2 [.7, .9] +1, into 0 [1.9, 2.1]
    assert back.time == pytest.approx(2.1)


def test_token_bytes_counts_fp8_scales():
    assert token_bytes(7168, "bf16") == 14336
    assert token_bytes(7168, "fp8") == 7168 + 56 * 4
    with pytest.raises(EPError, match="dtype"):
        token_bytes(7168, "fp4")


def test_deepep_logical_bytes():
    # intranode: tokens received per rank, own included: rank 0 gets 2 + 1, rank 1 gets 2
    assert deepep_logical_bytes(DEST, TWO, 1.0) == pytest.approx(2.5)
    spec = ClusterSpec(ranks=4, ranks_per_node=2, **SLOW)
    dest = np.full((4, 1, 2), -1)
    dest[0, 0] = [2, 3]
    dest[1, 0] = [0, 2]                      # its own node and node 1
    assert deepep_logical_bytes(dest, spec, 1.0) == pytest.approx((1 + 2) / 4)


def test_bad_routing_is_refused():
    with pytest.raises(EPError, match="ranks=2"):
        simulate(np.zeros((3, 1, 1), int), TWO, "dispatch", token_bytes=1)
    with pytest.raises(EPError, match="outside"):
        simulate(np.full((2, 1, 1), 5), TWO, "dispatch", token_bytes=1)
    with pytest.raises(EPError, match="routing"):
        simulate(DEST, TWO, "dispatch", "ring", token_bytes=1)
    with pytest.raises(EPError, match="ranks do not fill"):
        ClusterSpec(ranks=12, ranks_per_node=8)


@st.composite
def routings(draw):
    per_node = draw(st.sampled_from([1, 2, 4]))
    nodes = draw(st.sampled_from([1, 2, 3]))
    ranks = per_node * nodes
    tokens = draw(st.integers(1, 12))
    topk = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2 ** 16))
    dest = np.random.default_rng(seed).integers(-1, ranks, (ranks, tokens, topk))
    return ClusterSpec(ranks=ranks, ranks_per_node=per_node, **SLOW), dest


@settings(max_examples=40, deadline=None)
@given(routings(), st.sampled_from(["flat", "hierarchical"]),
       st.sampled_from(["dispatch", "combine"]), st.integers(1, 5))
def test_replay_properties(case, routing, collective, chunk):
    spec, dest = case
    r = simulate(dest, spec, collective, routing, token_bytes=100, chunk=chunk)
    msgs = build(dest, spec, collective, routing, 100, chunk)
    busy = r.pool_busy.max()
    # no faster than its busiest pool, no slower than all pools and latencies in series
    assert r.time >= busy - 1e-9
    assert r.time <= r.pool_busy.sum() + msgs.latency.sum() + 1e-9
    # every byte leaves through exactly one first pool
    assert r.pool_bytes[:, [0, 2]].sum() + (0 if spec.self_copies == "port" else
                                           r.pool_bytes[:, 4].sum()) == pytest.approx(
        msgs.nbytes.sum())
    # a flat collective moves each (token, rank) pair once
    if routing == "flat" or spec.nodes == 1:
        pairs = sum(len({int(d) for d in row if d >= 0}) for src in dest for row in src)
        assert msgs.nbytes.sum() == pytest.approx(pairs * 100)
    assert 0 <= r.bottleneck()[2] <= 1 + 1e-9


def test_shared_memory_charges_the_copying_rank():
    """shared_memory: a copy passes the sender's pool only. Dispatch: rank 0 makes all 4
    of its copies ([0, .4]; the last, to rank 1, +0.5 latency: 0.9). Combine: rank 0
    copies its t1 [0, .1], returns rank 1's t0 [.1, .2] (+.5: .7), copies t2 [.2, .3];
    rank 1 returns t0 [0, .1] (+.5: .6) and t1 [.1, .2] (+.5: .7); then each owner adds
    up its rows once they are all in: rank 0 its 4, [.7, 1.1]; rank 1 its 1, [.7, .8]."""
    spec = TWO.with_(shared_memory=True)
    d = simulate(DEST, spec, "dispatch", "flat", token_bytes=100, chunk=1)
    out = KINDS.index("nvlink out")
    assert d.pool_bytes[0, out] == 400 and d.pool_bytes[1, out] == 100
    assert not d.pool_bytes[:, KINDS.index("nvlink in")].any()
    assert d.time == pytest.approx(0.9)
    c = simulate(DEST, spec, "combine", "flat", token_bytes=100, chunk=1)
    assert c.pool_bytes[0, out] == 300 + 400 and c.pool_bytes[1, out] == 200 + 100
    assert c.messages == 5 + 2
    assert c.time == pytest.approx(1.1)


def same_replay(a, b) -> bool:
    return a.time == b.time and all(np.array_equal(x, y) for x, y in (
        (a.finish, b.finish), (a.pool_bytes, b.pool_bytes), (a.pool_busy, b.pool_busy)))


@settings(max_examples=40, deadline=None)
@given(routings(), st.sampled_from(["flat", "hierarchical"]),
       st.sampled_from(["dispatch", "combine"]), st.integers(1, 5),
       st.sampled_from(["port", "local"]))
def test_replay_by_generations_is_the_event_simulation_bit_for_bit(case, routing, collective,
                                                                  chunk, self_copies):
    spec, dest = case
    spec = spec.with_(self_copies=self_copies)
    msgs = build(dest, spec, collective, routing, 100, chunk)
    fast = _Generations(msgs, spec.bandwidths()).run()
    assert fast is not None            # finite links: nothing arrives when it is sent
    assert same_replay(fast, replay_events(msgs, spec.bandwidths()))


@pytest.mark.parametrize("spec", [
    TWO.with_(self_copies="local", local=Link(float("inf"), 0.0)),        # a copy
    TWO.with_(nvlink=Link(float("inf"), 0.5), local=Link(4000.0, 0.25))])  # a port
def test_an_instant_hop_hands_over_to_the_event_simulation(spec):
    """A pool of infinite bandwidth (and, for copies, no latency): a message leaves it
    the instant it arrives, so only the events can order what follows it."""
    for collective in ("dispatch", "combine"):
        msgs = build(DEST, spec, collective, "flat", 100, 1)
        assert _Generations(msgs, spec.bandwidths()).run() is None
        assert same_replay(replay(msgs, spec.bandwidths()),
                           replay_events(msgs, spec.bandwidths()))
