"""Expert-parallel load balancing (EPLB): replicate heavy experts and place the replicas
on ranks so that every rank gets about the same load.

`rebalance_experts` has the semantics of DeepSeek's EPLB (github.com/deepseek-ai/EPLB),
on numpy instead of torch:

* **hierarchical** when the expert groups divide evenly over the nodes: the groups are
  packed to nodes (balanced by group load, the same number of groups on each node), each
  node's experts are replicated within the node's share of the replicas (a replica is
  added to the expert whose load per replica is the highest, one at a time), and the
  node's replicas are packed to its ranks (balanced, the same number on each rank).
  With group-limited routing (DeepSeek-V3) a token then reaches few nodes.
* **global** otherwise: the same with one group and one node.

The loads are float32 throughout, as in EPLB, so that ties and near-ties resolve the same
way: a heavier item first, equal items in index order, the first of equal packs.

A *placement* is `phy2log[layer, physical expert] -> logical expert`; physical expert
`p` lives on rank `p // (num_physical // num_ranks)`. `log2phy[layer, expert, i]` is the
i-th replica of an expert (-1 past its `logcnt`). `route_to_replicas` picks a replica for
each routed token, spreading an expert's tokens evenly over its replicas.
"""
from __future__ import annotations

import numpy as np

from .errors_eplb import EPError


# ----------------------------------------------------------------------------- EPLB

def rebalance_experts(weight, num_replicas: int, num_groups: int, num_nodes: int,
                      num_gpus: int):
    """Replicate and place the experts of every layer.

    weight: `[layers, experts]` load of each logical expert (tokens routed to it);
    num_replicas: physical experts per layer, a multiple of `num_gpus`;
    num_groups: expert groups (contiguous ranges of experts, as in group-limited routing);
    num_nodes: nodes (the fast intra-node network spans the ranks of one node);
    num_gpus: ranks, a multiple of `num_nodes`.

    Returns `(phy2log, log2phy, logcnt)` as int64 arrays: `[layers, num_replicas]`,
    `[layers, experts, max replicas]` (padded with -1) and `[layers, experts]`."""
    weight = _check_weight(weight)
    layers, experts = weight.shape
    _check_sizes(experts, num_replicas, num_groups, num_nodes, num_gpus)
    if num_groups % num_nodes == 0:
        phy2log, replica_index, logcnt = _hierarchical(
            weight, num_replicas, num_groups, num_nodes, num_gpus)
    else:
        phy2log, replica_index, logcnt = _hierarchical(weight, num_replicas, 1, 1, num_gpus)
    log2phy = np.full((layers, experts, int(logcnt.max())), -1, dtype=np.int64)
    rows = np.arange(layers)[:, None]
    log2phy[rows, phy2log, replica_index] = np.arange(num_replicas)[None, :]
    return phy2log, log2phy, logcnt


def _hierarchical(weight, num_replicas, num_groups, num_nodes, num_ranks):
    """(phy2log, replica index of each physical expert, logcnt) with groups packed to
    nodes, replicas made within each node and packed to the node's ranks."""
    layers, experts = weight.shape
    group_size = experts // num_groups
    per_node = experts // num_nodes                 # logical experts a node holds
    slots_per_node = num_replicas // num_nodes      # physical experts a node holds

    # 1. groups to nodes. Renumber the experts "node-major": node n holds positions
    #    [n * per_node, (n + 1) * per_node), its groups in the order they were packed.
    group_load = weight.reshape(layers, num_groups, group_size).sum(axis=2)
    node, slot = _balanced_packing(group_load, num_nodes)
    first_pos = (node * (num_groups // num_nodes) + slot) * group_size     # [L, G]
    pos_of_expert = (first_pos[:, :, None] + np.arange(group_size)).reshape(layers, experts)
    expert_at_pos = _inverse(pos_of_expert)

    # 2. replicas within each node: one row per (layer, node)
    node_load = np.take_along_axis(weight, expert_at_pos, axis=1).reshape(-1, per_node)
    local_expert, replica_index, count = _replicate(node_load, slots_per_node)

    # 3. a node's replicas to its ranks, by load per replica
    replica_load = np.take_along_axis(node_load / count.astype(np.float32), local_expert,
                                      axis=1)
    rank, slot_in_rank = _balanced_packing(replica_load, num_ranks // num_nodes)
    # physical slot within the node of each replica -> the replica in each slot
    replica_at_slot = _inverse(rank * (slots_per_node // (num_ranks // num_nodes))
                               + slot_in_rank)

    local_at_slot = np.take_along_axis(local_expert, replica_at_slot, axis=1)
    node_base = (np.arange(num_nodes) * per_node)[None, :, None]
    pos_at_slot = (local_at_slot.reshape(layers, num_nodes, -1) + node_base)
    phy2log = np.take_along_axis(expert_at_pos, pos_at_slot.reshape(layers, -1), axis=1)
    index_at_slot = np.take_along_axis(replica_index, replica_at_slot, axis=1)
    logcnt = np.take_along_axis(count.reshape(layers, experts), pos_of_expert, axis=1)
    return phy2log, index_at_slot.reshape(layers, -1), logcnt


def _balanced_packing(load, num_packs: int):
    """Each row's items into `num_packs` packs of equal item count, greedily: items by
    decreasing load (equal loads in index order), each into the lightest pack that has
    room (the first of equally light ones). Returns (pack, position in the pack)."""
    rows, items = load.shape
    per_pack = items // num_packs
    if per_pack == 1:
        return (np.broadcast_to(np.arange(items), load.shape).copy(),
                np.zeros(load.shape, dtype=np.int64))
    pack = np.empty(load.shape, dtype=np.int64)
    position = np.empty(load.shape, dtype=np.int64)
    order = np.argsort(-load, axis=1, kind="stable")
    for r in range(rows):
        pack_load = np.zeros(num_packs, dtype=np.float32)
        filled = np.zeros(num_packs, dtype=np.int64)
        full = np.zeros(num_packs, dtype=bool)
        for item in order[r]:
            p = int(np.argmin(np.where(full, np.inf, pack_load)))
            pack[r, item] = p
            position[r, item] = filled[p]
            pack_load[p] += load[r, item]
            filled[p] += 1
            full[p] = filled[p] == per_pack
    return pack, position


def _replicate(load, num_slots: int):
    """Grow each row's experts to `num_slots` replicas, one at a time, to the expert
    whose load per replica is the highest (the first of equal ones). Returns the expert
    of each slot (the first `experts` slots are the experts themselves), the replica
    index of each slot, and the replica count of each expert."""
    rows, experts = load.shape
    if num_slots < experts:
        raise EPError(f"{num_slots} physical experts cannot hold {experts} logical ones")
    expert_of = np.tile(np.arange(num_slots), (rows, 1))
    index_of = np.zeros((rows, num_slots), dtype=np.int64)
    count = np.ones((rows, experts), dtype=np.int64)
    every_row = np.arange(rows)
    for slot in range(experts, num_slots):
        hottest = np.argmax(load / count.astype(np.float32), axis=1)
        expert_of[:, slot] = hottest
        index_of[:, slot] = count[every_row, hottest]
        count[every_row, hottest] += 1
    return expert_of, index_of, count


def _inverse(perm):
    """Row-wise inverse of permutations."""
    inv = np.empty_like(perm)
    np.put_along_axis(inv, perm, np.broadcast_to(np.arange(perm.shape[1]), perm.shape),
                      axis=1)
    return inv


def _check_weight(weight):
    w = np.asarray(weight)
    if w.ndim != 2 or w.shape[1] == 0:
        raise EPError(f"weight must be a [layers, experts] array of loads, "
                      f"not shape {w.shape}")
    if not np.issubdtype(w.dtype, np.number) or np.issubdtype(w.dtype, np.complexfloating):
        raise EPError(f"weight must hold real numbers, not {w.dtype}")
    w = w.astype(np.float32)
    if not np.isfinite(w).all() or (w < 0).any():
        raise EPError("weight must hold finite loads >= 0")
    return w


def _check_sizes(experts, num_replicas, num_groups, num_nodes, num_gpus) -> None:
    for name, value in (("num_replicas", num_replicas), ("num_groups", num_groups),
                        ("num_nodes", num_nodes), ("num_gpus", num_gpus)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise EPError(f"{name} must be a positive integer, not {value!r}")
    if num_replicas < experts:
        raise EPError(f"num_replicas ({num_replicas}) must be at least the number of "
                      f"experts ({experts})")
    if num_gpus % num_nodes:
        raise EPError(f"num_gpus ({num_gpus}) must be a multiple of num_nodes ({num_nodes})")
    if num_replicas % num_gpus:
        raise EPError(f"num_replicas ({num_replicas}) must be a multiple of num_gpus "
                      f"({num_gpus})")
    if experts % num_groups:
        raise EPError(f"the experts ({experts}) must divide into num_groups ({num_groups})")
    if num_groups % num_nodes == 0 and (num_replicas // num_nodes) < experts // num_nodes:
        raise EPError("each node needs at least as many replicas as the experts it holds")


# ----------------------------------------------------------------------------- placements

def contiguous_placement(num_experts: int, num_ranks: int, layers: int = 1):
    """The placement without EPLB: expert e on rank e // (experts / ranks), one replica
    each. Returns (phy2log, log2phy, logcnt) shaped like `rebalance_experts`'."""
    if num_experts % num_ranks:
        raise EPError(f"{num_experts} experts do not divide over {num_ranks} ranks")
    phy2log = np.tile(np.arange(num_experts, dtype=np.int64), (layers, 1))
    return phy2log, phy2log[:, :, None].copy(), np.ones((layers, num_experts), np.int64)


def rank_of_physical(num_physical: int, num_ranks: int) -> np.ndarray:
    """The rank of each physical expert: consecutive blocks of equal size."""
    if num_physical % num_ranks:
        raise EPError(f"{num_physical} physical experts do not divide over "
                      f"{num_ranks} ranks")
    return np.arange(num_physical) // (num_physical // num_ranks)


def rank_loads(load, phy2log, logcnt, num_ranks: int) -> np.ndarray:
    """`[layers, ranks]` load when each expert's load `[layers, experts]` is split
    evenly over its replicas."""
    load = np.asarray(load, dtype=np.float64)
    per_replica = np.take_along_axis(load / logcnt, phy2log, axis=1)
    ranks = rank_of_physical(phy2log.shape[1], num_ranks)
    out = np.zeros((load.shape[0], num_ranks))
    for layer in range(load.shape[0]):
        out[layer] = np.bincount(ranks, weights=per_replica[layer], minlength=num_ranks)
    return out


def skew_loss(loads) -> np.ndarray:
    """1 - mean / max of each row of rank loads: the share of the busiest rank's time
    that the others spend waiting. 0 when balanced."""
    loads = np.asarray(loads, dtype=np.float64)
    peak = loads.max(axis=-1)
    return np.where(peak > 0, 1.0 - loads.mean(axis=-1) / np.where(peak > 0, peak, 1), 0.0)


def colocated_replicas(phy2log, num_ranks: int) -> int:
    """How many (layer, rank, expert) hold two or more replicas of one expert on one
    rank (the extra replica adds no balance there)."""
    phy2log = np.asarray(phy2log)
    per_rank = phy2log.reshape(phy2log.shape[0], num_ranks, -1)
    s = np.sort(per_rank, axis=2)
    dup = s[:, :, 1:] == s[:, :, :-1]
    first_dup = dup & ~np.concatenate([np.zeros_like(dup[:, :, :1]), dup[:, :, :-1]], axis=2)
    return int(first_dup.sum())


def route_to_replicas(topk_idx, log2phy, logcnt, offset: int = 0) -> np.ndarray:
    """The physical expert each routed token goes to: `topk_idx[tokens, k]` holds
    logical experts (-1: none), `log2phy[experts, max]`, `logcnt[experts]` one layer's
    placement. An expert's tokens take its replicas in turn, in token order, starting
    at replica `offset` (a source rank passes its rank so that the sources do not all
    start on the same replica). -1 stays -1."""
    topk_idx = np.asarray(topk_idx)
    flat = topk_idx.reshape(-1).astype(np.int64)
    valid = flat >= 0
    experts = flat[valid]
    # occurrence number of each entry among the entries of the same expert
    order = np.argsort(experts, kind="stable")
    sorted_e = experts[order]
    starts = np.searchsorted(sorted_e, sorted_e, side="left")
    occurrence = np.empty_like(order)
    occurrence[order] = np.arange(len(order)) - starts
    replica = (occurrence + offset) % logcnt[experts]
    out = np.full(flat.shape, -1, dtype=np.int64)
    out[valid] = log2phy[experts, replica]
    return out.reshape(topk_idx.shape)
