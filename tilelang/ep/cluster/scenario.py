"""One routing trace through the collectives' model, with and without EPLB placement,
flat and hierarchical: the figures `tilec simulate-ep` and the benchmark print.

The trace's first step is the window EPLB is fitted on (its loads); the second is the
one replayed, so EPLB meets loads it has not seen (out of sample). Without EPLB an expert
lives on rank `expert // (experts / ranks)`; with it, a token's expert becomes one of its
replicas as in the collectives (`ExpertPlacement.physical_topk`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..eplb import colocated_replicas
from ..errors_eplb import EPError
from ..placement import ExpertPlacement
from ..trace import RoutingTrace, generate
from .model import CollectiveResult, replay_messages, token_bytes
from .traffic import chunking, pairs
from .spec import ClusterSpec

PAD_ROWS = 128          # a grouped GEMM pads each expert's rows to its block (DeepGEMM)


@dataclass(frozen=True)
class Workload:
    experts: int = 256
    redundant: int = 0          # extra physical experts EPLB may place (0: no EPLB runs)
    topk: int = 8
    tokens: int = 4096          # per rank and step
    hidden: int = 7168
    groups: int = 8             # expert groups (group-limited routing, EPLB's groups)
    topk_groups: int = 4
    zipf: float = 1.0
    drift: float = 0.05
    seed: int = 0
    dispatch_dtype: str = "fp8"
    combine_dtype: str = "bf16"
    chunk: int = 128            # tokens a message

    def trace(self, ranks: int) -> RoutingTrace:
        """Two steps (fit, replay) of one layer for `ranks` ranks."""
        return generate(num_experts=self.experts, topk=self.topk, tokens=self.tokens * ranks,
                        steps=2, layers=1, zipf_s=self.zipf, drift=self.drift,
                        num_groups=self.groups, topk_groups=min(self.topk_groups, self.groups),
                        seed=self.seed)


@dataclass
class Placement:
    name: str                   # "contiguous" | "eplb"
    phys: np.ndarray            # [ranks, tokens, topk] physical expert of each routed token
    rank_of_phys: np.ndarray    # [physical experts] -> rank
    colocated: int = 0          # EPLB's replicas of one expert sharing a rank

    @property
    def dest(self) -> np.ndarray:
        return np.where(self.phys >= 0, self.rank_of_phys[np.maximum(self.phys, 0)], -1)

    def rows_per_rank(self, pad: int = 1) -> np.ndarray:
        """[ranks] rows of expert GEMM each rank computes (each expert's rows padded to a
        multiple of `pad`)."""
        counts = np.bincount(self.phys[self.phys >= 0].ravel(),
                             minlength=len(self.rank_of_phys))
        padded = -(-counts // pad) * pad
        ranks = int(self.rank_of_phys.max()) + 1
        return np.bincount(self.rank_of_phys, weights=padded, minlength=ranks)


@dataclass
class Scenario:
    placement: str
    routing: str
    dispatch: CollectiveResult
    combine: CollectiveResult
    rows: np.ndarray                            # expert rows per rank
    extra: dict = field(default_factory=dict)   # more collectives (the projection's)

    @property
    def name(self) -> str:
        return f"{self.routing}, {'EPLB' if self.placement == 'eplb' else 'no EPLB'}"

    @property
    def skew_loss(self) -> float:
        return float(1.0 - self.rows.mean() / self.rows.max()) if self.rows.max() else 0.0


def placements(trace: RoutingTrace, spec: ClusterSpec, work: Workload) -> list[Placement]:
    """The contiguous placement and, with redundant experts, EPLB's (fitted on step 0),
    both applied to step 1 of layer 0."""
    if trace.steps < 2:
        raise EPError("the trace needs two steps: one to fit EPLB on, one to replay")
    routing = trace.routing(1, 0, spec.ranks).astype(np.int64)
    chosen = [("contiguous", ExpertPlacement.contiguous(trace.num_experts, spec.ranks))]
    if work.redundant:
        chosen.append(("eplb", ExpertPlacement.balanced(
            trace.loads(0)[0], spec.ranks, work.redundant, trace.num_groups, spec.nodes)))
    return [Placement(name, np.stack([p.physical_topk(routing[s], s)
                                      for s in range(spec.ranks)]),
                      p.expert_rank, colocated_replicas(p.phy2log[None], spec.ranks))
            for name, p in chosen]


ALL_CASES = (("contiguous", "flat"), ("contiguous", "hierarchical"), ("eplb", "flat"),
             ("eplb", "hierarchical"))


def run(spec: ClusterSpec, work: Workload, trace: RoutingTrace | None = None,
        cases=ALL_CASES, bf16_dispatch: bool = False) -> list[Scenario]:
    """The (placement, routing) `cases` of the workload (EPLB's only with redundant
    experts; one routing, flat, on one node); `bf16_dispatch` also replays the dispatch
    with bf16 tokens (the backward pass's combine gradient)."""
    trace = trace if trace is not None else work.trace(spec.ranks)
    _check(trace, spec, work)
    d_bytes = token_bytes(work.hidden, work.dispatch_dtype)
    c_bytes = token_bytes(work.hidden, work.combine_dtype)
    out = []
    for placement in placements(trace, spec, work):
        routings = [r for p, r in cases if p == placement.name]
        if spec.nodes == 1 and routings:
            routings = ["flat"]
        if not routings:
            continue
        dest = placement.dest
        triples = pairs(dest, spec)
        for routing in routings:
            chunks = chunking(dest, spec, routing, work.chunk, triples)

            def collective(kind, nbytes, msgs=None):
                msgs = msgs or chunks.messages(kind, 1.0)
                return msgs, replay_messages(msgs.with_token_bytes(nbytes), spec, kind,
                                             routing)
            d_msgs, dispatch = collective("dispatch", d_bytes)
            _, combine = collective("combine", c_bytes)
            sc = Scenario(placement.name, routing, dispatch, combine,
                          placement.rows_per_rank(),
                          {"colocated": placement.colocated,
                           "padded_rows": placement.rows_per_rank(PAD_ROWS)})
            if bf16_dispatch:
                sc.extra["dispatch_bf16"] = collective("dispatch", c_bytes, d_msgs)[1]
            out.append(sc)
    return out


def _check(trace: RoutingTrace, spec: ClusterSpec, work: Workload) -> None:
    if trace.num_experts % spec.ranks:
        raise EPError(f"{trace.num_experts} experts do not divide over {spec.ranks} ranks")
    if (trace.num_experts + work.redundant) % spec.ranks:
        raise EPError(f"{trace.num_experts} experts + {work.redundant} redundant do not "
                      f"divide over {spec.ranks} ranks")
    if trace.tokens % spec.ranks:
        raise EPError(f"the trace's {trace.tokens} tokens a step do not split over "
                      f"{spec.ranks} ranks")
