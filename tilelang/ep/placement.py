"""Dispatch with a placement: a token's logical expert goes to one of its physical replicas.

    placement = ExpertPlacement.balanced(loads, num_ranks=group.size(), num_redundant=8)
    placement.install(buffer)                       # the Buffer's expert -> rank map
    phys = placement.physical_topk(topk_idx, group.rank())
    per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(phys,
                                                                     placement.num_physical)
    recv_x, recv_idx, recv_w, counts, handle, _ = buffer.dispatch(
        x, topk_idx=phys, topk_weights=w, num_tokens_per_rank=per_rank,
        is_token_in_rank=in_rank, num_tokens_per_expert=per_expert)
    # recv_idx: local indices of this rank's physical experts; placement.logical_of(rank,
    # recv_idx) names their logical experts. combine is unchanged.

Physical expert p lives on rank `p // (num_physical / num_ranks)`. An expert's tokens
take its replicas in turn, in token order, each source rank starting at another replica
(`eplb.route_to_replicas`), so a hot expert's load spreads evenly over its copies.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .eplb import contiguous_placement, rank_of_physical, rebalance_experts, route_to_replicas
from .errors_eplb import EPError


@dataclass(frozen=True)
class ExpertPlacement:
    phy2log: np.ndarray         # [physical] logical expert of each physical one
    log2phy: np.ndarray         # [experts, max replicas], -1 padded
    logcnt: np.ndarray          # [experts] replicas of each expert
    num_ranks: int

    @classmethod
    def contiguous(cls, num_experts: int, num_ranks: int) -> "ExpertPlacement":
        """Expert e on rank e // (experts / ranks), one replica each."""
        p, l, c = contiguous_placement(num_experts, num_ranks)
        return cls(p[0], l[0], c[0], num_ranks)

    @classmethod
    def balanced(cls, load, num_ranks: int, num_redundant: int, num_groups: int = 1,
                 num_nodes: int = 1) -> "ExpertPlacement":
        """EPLB's placement for one layer's expert `load` (`[experts]` tokens)."""
        load = np.asarray(load, dtype=np.float64)
        if load.ndim != 1:
            raise EPError(f"load must be one layer's [experts], not shape {load.shape}")
        p, l, c = rebalance_experts(load[None], load.size + num_redundant, num_groups,
                                    num_nodes, num_ranks)
        return cls(p[0], l[0], c[0], num_ranks)

    @property
    def num_physical(self) -> int:
        return len(self.phy2log)

    @property
    def expert_rank(self) -> np.ndarray:
        """[physical] the rank of each physical expert (`Buffer.set_expert_placement`)."""
        return rank_of_physical(self.num_physical, self.num_ranks)

    def install(self, buffer) -> None:
        """Tell a `tilelang.ep.Buffer` where the physical experts live."""
        buffer.set_expert_placement(self.expert_rank)

    def physical_topk(self, topk_idx, rank: int) -> np.ndarray:
        """[tokens, k] int64 physical experts for logical `topk_idx` of source `rank`."""
        topk = np.asarray(topk_idx)
        if topk.size and (topk.max() >= len(self.logcnt) or topk.min() < -1):
            raise EPError(f"topk_idx names experts outside 0..{len(self.logcnt) - 1}")
        return route_to_replicas(topk, self.log2phy, self.logcnt, offset=rank)

    def logical_of(self, rank: int, local_idx) -> np.ndarray:
        """Logical experts of a rank's local physical expert indices (-1 stays -1), as
        `Buffer.dispatch` returns them in `recv_topk_idx`."""
        local_idx = np.asarray(local_idx)
        per_rank = self.num_physical // self.num_ranks
        phys = rank * per_rank + np.maximum(local_idx, 0)
        return np.where(local_idx >= 0, self.phy2log[phys], -1)
