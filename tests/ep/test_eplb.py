"""EPLB: DeepSeek's README example, agreement with a plain re-statement of the algorithm
on random loads, and the invariants of a placement as hypothesis properties."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tilelang.ep.eplb import (colocated_replicas, contiguous_placement, rank_loads,
                              rebalance_experts, route_to_replicas, skew_loss)
from tilelang.ep.errors_eplb import EPError

README_WEIGHT = [[90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86],
                 [20, 107, 104, 64, 19, 197, 187, 157, 172, 86, 16, 27]]
README_PHY2LOG = [[5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1],
                  [7, 10, 6, 8, 6, 11, 8, 9, 2, 4, 5, 1, 5, 0, 3, 1]]


def test_readme_example():
    """deepseek-ai/EPLB's README: 2 layers of 12 experts, 16 replicas, 4 groups, 2 nodes
    of 4 GPUs (the hierarchical policy)."""
    phy2log, log2phy, logcnt = rebalance_experts(np.array(README_WEIGHT), 16, 4, 2, 8)
    assert phy2log.tolist() == README_PHY2LOG
    assert logcnt.tolist() == [[1, 2, 1, 1, 2, 2, 1, 1, 1, 1, 2, 1],
                               [1, 2, 1, 1, 1, 2, 2, 1, 2, 1, 1, 1]]
    assert log2phy.shape == (2, 12, 2)


# ----------------------------------------------------------------------------- reference

def reference(weight, num_replicas, num_groups, num_nodes, num_gpus):
    """EPLB's algorithm as described in its README, one layer at a time with plain lists:
    groups to nodes (greedy balanced packing), replicas within each node (always to the
    expert with the highest load per replica), replicas to the node's GPUs (greedy
    balanced packing). Loads in float32 as EPLB has them; equal items in index order."""
    if num_groups % num_nodes:
        num_groups = num_nodes = 1
    weight = np.asarray(weight, dtype=np.float32)
    out = []
    for w in weight:
        out.append(_reference_layer(list(w), num_replicas, num_groups, num_nodes, num_gpus))
    return np.array(out)


def _pack(loads, num_packs):
    """Greedy: heaviest first, into the lightest pack with room -> list of packs (each a
    list of item indices in the order they went in)."""
    per_pack = len(loads) // num_packs
    if per_pack == 1:
        return [[i] for i in range(len(loads))]
    packs = [[] for _ in range(num_packs)]
    sums = [np.float32(0)] * num_packs
    for item in sorted(range(len(loads)), key=lambda i: (-loads[i], i)):
        open_packs = [p for p in range(num_packs) if len(packs[p]) < per_pack]
        best = min(open_packs, key=lambda p: (sums[p], p))
        packs[best].append(item)
        sums[best] = np.float32(sums[best] + loads[item])
    return packs


def _reference_layer(w, num_replicas, num_groups, num_nodes, num_gpus):
    experts = len(w)
    size = experts // num_groups
    group_loads = [np.float32(np.sum(np.array(w[g * size:(g + 1) * size], np.float32)))
                   for g in range(num_groups)]
    phy2log = []
    for node_groups in _pack(group_loads, num_nodes):
        members = [g * size + j for g in node_groups for j in range(size)]
        # replicas: the node's experts, then one more at a time to the hottest per replica
        counts = [1] * len(members)
        replicas = [(m, 0) for m in range(len(members))]
        for _ in range(num_replicas // num_nodes - len(members)):
            per_replica = [np.float32(w[members[m]]) / np.float32(counts[m])
                           for m in range(len(members))]
            hot = max(range(len(members)), key=lambda m: (per_replica[m], -m))
            replicas.append((hot, counts[hot]))
            counts[hot] += 1
        loads = [np.float32(w[members[m]]) / np.float32(counts[m]) for m, _ in replicas]
        for gpu in _pack(loads, num_gpus // num_nodes):
            phy2log.extend(members[replicas[r][0]] for r in gpu)
    return phy2log


CONFIGS = [  # (experts, replicas, groups, nodes, gpus)
    (12, 16, 4, 2, 8), (16, 32, 4, 2, 8), (32, 48, 8, 4, 16), (24, 32, 3, 2, 8),
    (64, 80, 8, 2, 16), (8, 8, 2, 2, 4), (20, 40, 5, 1, 4), (256, 288, 8, 4, 32),
]


@pytest.mark.parametrize("experts,replicas,groups,nodes,gpus", CONFIGS)
@pytest.mark.parametrize("kind", ["float", "int", "zipf"])
def test_agrees_with_reference(experts, replicas, groups, nodes, gpus, kind):
    rng = np.random.default_rng(experts * 7 + replicas)
    if kind == "float":
        w = rng.random((3, experts)) * 100
    elif kind == "int":                               # many equal loads: tie order matters
        w = rng.integers(0, 6, (3, experts))
    else:
        w = rng.zipf(1.3, (3, experts)).astype(float)
    phy2log, _, _ = rebalance_experts(w, replicas, groups, nodes, gpus)
    np.testing.assert_array_equal(phy2log, reference(w, replicas, groups, nodes, gpus))


# ----------------------------------------------------------------------------- properties

@st.composite
def problems(draw):
    nodes = draw(st.sampled_from([1, 2, 4]))
    gpus = nodes * draw(st.sampled_from([1, 2, 4]))
    groups = draw(st.sampled_from([1, 2, 4, 8]))
    experts = groups * draw(st.integers(1, 6))
    replicas = gpus * draw(st.integers(-(-experts // gpus), -(-experts // gpus) + 3))
    if groups % nodes == 0 and replicas // nodes < experts // nodes:
        replicas = gpus * -(-experts // gpus) * 2
    layers = draw(st.integers(1, 3))
    w = draw(st.lists(st.lists(st.integers(0, 1000), min_size=experts, max_size=experts),
                      min_size=layers, max_size=layers))
    return np.array(w, dtype=float), replicas, groups, nodes, gpus


@settings(max_examples=60, deadline=None)
@given(problems())
def test_placement_invariants(problem):
    w, replicas, groups, nodes, gpus = problem
    layers, experts = w.shape
    phy2log, log2phy, logcnt = rebalance_experts(w, replicas, groups, nodes, gpus)
    assert phy2log.shape == (layers, replicas)
    # every expert has at least one replica; counts agree with phy2log
    assert (logcnt >= 1).all() and (logcnt.sum(axis=1) == replicas).all()
    for layer in range(layers):
        np.testing.assert_array_equal(np.bincount(phy2log[layer], minlength=experts),
                                      logcnt[layer])
        for e in range(experts):
            phys = log2phy[layer, e]
            assert (phys[:logcnt[layer, e]] >= 0).all() and (phys[logcnt[layer, e]:] == -1).all()
            assert (phy2log[layer, phys[:logcnt[layer, e]]] == e).all()
    if groups % nodes == 0:
        # hierarchical: a group's replicas all sit on one node
        per_node = replicas // nodes
        size = experts // groups
        node_of = np.arange(replicas) // per_node
        for layer in range(layers):
            for g in range(groups):
                nodes_of_group = {int(node_of[p]) for p in range(replicas)
                                  if phy2log[layer, p] // size == g}
                assert len(nodes_of_group) == 1
    # the balanced placement is never worse than one replica each on the same ranks,
    # when every expert can have its own slot on a rank of its own group's node
    loads = rank_loads(w, phy2log, logcnt, gpus)
    assert np.isclose(loads.sum(axis=1), w.sum(axis=1)).all()


def test_balances_a_skewed_load():
    rng = np.random.default_rng(0)
    w = rng.zipf(1.2, (4, 64)).astype(float)
    phy2log, _, logcnt = rebalance_experts(w, 96, 8, 2, 16)
    base = contiguous_placement(64, 16, layers=4)
    before = skew_loss(rank_loads(w, base[0], base[2], 16))
    after = skew_loss(rank_loads(w, phy2log, logcnt, 16))
    assert (after < before).all()


def test_global_policy_when_groups_do_not_divide_over_nodes():
    w = np.arange(1, 13, dtype=float)[None]
    hier, _, _ = rebalance_experts(w, 16, 3, 2, 8)          # 3 groups, 2 nodes: global
    glob, _, _ = rebalance_experts(w, 16, 1, 1, 8)
    np.testing.assert_array_equal(hier, glob)


def test_colocated_replicas_counts_duplicates_on_a_rank():
    phy2log = np.array([[0, 0, 1, 2, 3, 3, 3, 4]])           # 4 ranks of 2
    assert colocated_replicas(phy2log, 4) == 2               # rank 0 (0, 0), rank 2 (3, 3)
    assert colocated_replicas(np.array([[0, 1, 2, 3]]), 2) == 0


def test_route_to_replicas_spreads_tokens_evenly():
    phy2log, log2phy, logcnt = rebalance_experts(np.array([[100.0, 1, 1, 1]]), 8, 1, 1, 4)
    topk = np.zeros((90, 1), dtype=np.int64)                  # every token to expert 0
    phys = route_to_replicas(topk, log2phy[0], logcnt[0])
    counts = np.bincount(phys.ravel(), minlength=8)
    assert counts.sum() == 90
    used = counts[phy2log[0] == 0]
    assert len(used) == logcnt[0, 0] and used.max() - used.min() <= 1
    assert (phy2log[0][phys.ravel()] == 0).all()
    # -1 (no expert) stays -1; other sources start on another replica
    mixed = np.array([[0, -1], [0, 1]])
    out = route_to_replicas(mixed, log2phy[0], logcnt[0], offset=1)
    assert out[0, 1] == -1 and out[0, 0] == log2phy[0, 0, 1]


def test_skew_loss():
    assert skew_loss(np.array([[1.0, 1.0]]))[0] == 0.0
    assert skew_loss(np.array([[3.0, 1.0]]))[0] == pytest.approx(1 - 2 / 3)


@pytest.mark.parametrize("args,words", [
    (((2, 12), 15, 4, 2, 8), "multiple of num_gpus"),
    (((2, 12), 8, 4, 2, 8), "at least the number of experts"),
    (((2, 12), 16, 5, 1, 8), "divide into num_groups"),
    (((2, 12), 16, 4, 3, 8), "multiple of num_nodes"),
    (((12,), 16, 4, 2, 8), "[layers, experts]"),
    (((2, 12), 0, 4, 2, 8), "positive integer"),
])
def test_bad_arguments_name_the_argument(args, words):
    shape, *rest = args
    with pytest.raises(EPError, match=None) as info:
        rebalance_experts(np.ones(shape), *rest)
    assert words in str(info.value) and info.value.code == "TL1201"


def test_negative_load_is_refused():
    with pytest.raises(EPError, match="finite loads"):
        rebalance_experts(-np.ones((1, 4)), 4, 1, 1, 2)
