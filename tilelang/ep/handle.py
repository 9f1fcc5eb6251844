"""The handle a dispatch returns: everything combine (and a cached dispatch) needs to
route the same tokens again. Opaque; `handle[0]` is DeepEP's rank prefix matrix (its
tests read it) and `handle[4]` the is_token_in_rank matrix."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .plan import Plan


@dataclass(eq=False)
class Handle:
    plan: Plan
    slots: np.ndarray               # [num_tokens, R] int32: index among tokens for rank r
    is_token_in_rank: np.ndarray
    num_experts: int
    hidden: int

    def __getitem__(self, i):
        if i == 0:
            return self.plan.rank_prefix_matrix
        if i == 4:
            return self.is_token_in_rank
        raise TypeError("a tilelang.ep dispatch handle is opaque: handle[0] is the rank "
                        "prefix matrix, handle[4] is_token_in_rank; pass it to combine or "
                        "to dispatch(x, handle=...)")

    def __repr__(self) -> str:
        return (f"<tilelang.ep handle: {self.slots.shape[0]} tokens -> {self.plan.num_recv} "
                f"received on rank {self.plan.rank}>")


__all__ = ["Handle"]
