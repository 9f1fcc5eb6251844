"""The handle a dispatch returns: everything combine (and a cached dispatch) needs to
route the same tokens again. Opaque, but indexable where DeepEP's tests read its handle
tuple: on one host (DeepEP's intranode 6-tuple) `handle[0]` is the rank prefix matrix
and `handle[4]` is_token_in_rank; across hosts (its internode 10-tuple) `handle[0]` is
is_token_in_rank and `handle[6]` (`handle[-4]`) this rank's receive prefix sum over the
source ranks. Negative indices count from the end of that tuple."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .plan import Plan

_INTRANODE = {0: "rank_prefix_matrix", 4: "is_token_in_rank"}
_INTERNODE = {0: "is_token_in_rank", 6: "recv_gbl_rank_prefix_sum"}


@dataclass(eq=False)
class Handle:
    plan: Plan
    slots: np.ndarray               # [num_tokens, R] int32: index among tokens for rank r
    is_token_in_rank: np.ndarray
    num_experts: int
    hidden: int

    @property
    def _fields(self) -> tuple[dict, int]:
        """DeepEP's readable positions and the length of its tuple."""
        if len(set(self.plan.hosts)) > 1:
            return _INTERNODE, 10
        return _INTRANODE, 6

    def __len__(self) -> int:
        return self._fields[1]

    def __getitem__(self, i):
        fields, n = self._fields
        name = fields.get(i + n if isinstance(i, int) and -n <= i < 0 else i)
        if name == "rank_prefix_matrix":
            return self.plan.rank_prefix_matrix
        if name == "recv_gbl_rank_prefix_sum":
            return np.ascontiguousarray(self.plan.rank_prefix_matrix[:, self.plan.rank])
        if name == "is_token_in_rank":
            return self.is_token_in_rank
        readable = ", ".join(f"handle[{k}] is {v}" for k, v in fields.items())
        raise TypeError(f"a tilelang.ep dispatch handle is opaque: {readable}; pass it to "
                        f"combine or to dispatch(x, handle=...)")

    def __iter__(self):
        raise TypeError("a tilelang.ep dispatch handle is opaque and cannot be unpacked; "
                        "index it (handle[0]) or pass it to combine")

    def __repr__(self) -> str:
        return (f"<tilelang.ep handle: {self.slots.shape[0]} tokens -> {self.plan.num_recv} "
                f"received on rank {self.plan.rank}>")


__all__ = ["Handle"]
