"""The cluster model's entry point: a routing in, the collective's time and the load of
every link out.

    result = simulate(dest, ClusterSpec(ranks=128), "dispatch", "hierarchical",
                      token_bytes=token_bytes(7168, "fp8"))
    result.time, result.bottleneck(), result.link_rows()
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors_eplb import EPError
from .replay import replay
from .spec import KINDS, KINDS_PER_RANK, ClusterSpec
from .traffic import build, pairs

DTYPE_BYTES = {"fp8": 1, "bf16": 2, "fp32": 4}
FP8_BLOCK = 128          # one fp32 scale per 128 fp8 values (DeepEP, DeepGEMM)


def token_bytes(hidden: int, dtype: str) -> float:
    """Bytes of one token's hidden state: fp8 carries one fp32 scale per 128 values."""
    if dtype not in DTYPE_BYTES:
        raise EPError(f"dtype must be one of {', '.join(DTYPE_BYTES)}, not {dtype!r}")
    scales = 4 * -(-hidden // FP8_BLOCK) if dtype == "fp8" else 0
    return float(hidden * DTYPE_BYTES[dtype] + scales)


@dataclass
class CollectiveResult:
    collective: str
    routing: str
    time: float                 # s
    messages: int
    pool_bytes: np.ndarray      # [ranks, kinds]
    pool_busy: np.ndarray       # [ranks, kinds], s
    bandwidth: np.ndarray       # [ranks, kinds], bytes / s

    def utilisation(self) -> np.ndarray:
        """[ranks, kinds]: bytes / (time x bandwidth)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            u = self.pool_bytes / (self.time * self.bandwidth)
        return np.nan_to_num(u)

    def bottleneck(self) -> tuple[str, int, float]:
        """(link kind, rank, utilisation) of the busiest pool: bytes / time / bandwidth."""
        busy = np.where(np.isinf(self.bandwidth), 0.0, self.pool_busy)
        rank, kind = np.unravel_index(int(np.argmax(busy)), busy.shape)
        return KINDS[kind], int(rank), float(self.utilisation()[rank, kind])

    def link_rows(self) -> list[tuple[str, float, float, float]]:
        """Per link kind that carried bytes: (kind, max bytes on one rank, mean bytes,
        max utilisation)."""
        util = self.utilisation()
        return [(KINDS[k], float(self.pool_bytes[:, k].max()),
                 float(self.pool_bytes[:, k].mean()), float(util[:, k].max()))
                for k in range(len(KINDS)) if self.pool_bytes[:, k].any()]


def simulate(dest, spec: ClusterSpec, collective: str, routing: str = "hierarchical", *,
             token_bytes: float, chunk: int = 128, triples=None) -> CollectiveResult:
    """Replay one collective for `dest[source rank, token, k]` (ranks, -1: none)."""
    msgs = build(dest, spec, collective, routing, token_bytes, chunk, triples)
    return replay_messages(msgs, spec, collective, routing)


def replay_messages(msgs, spec: ClusterSpec, collective: str, routing: str):
    """Replay messages `traffic.build` made (possibly `.with_token_bytes(...)`)."""
    bandwidth = spec.bandwidths()
    r = replay(msgs, bandwidth)
    shape = (spec.ranks, KINDS_PER_RANK)
    return CollectiveResult(collective, routing if spec.nodes > 1 else "flat", r.time,
                            len(msgs), r.pool_bytes.reshape(shape),
                            r.pool_busy.reshape(shape), np.array(bandwidth).reshape(shape))


def deepep_logical_bytes(dest, spec: ClusterSpec, token_bytes: float) -> float:
    """The bytes a rank moves as DeepEP's tests count them for their bandwidth figure:
    within a node, the tokens a rank receives (its own included); across nodes, the
    (token, node) pairs a rank sends over RDMA (its own node included). Mean over ranks."""
    s, t, d = pairs(dest, spec)
    if spec.nodes == 1:
        return len(d) / spec.ranks * token_bytes
    node_pairs = np.unique((s * len(dest[0]) + t) * spec.nodes + d // spec.local_ranks)
    return len(node_pairs) / spec.ranks * token_bytes
