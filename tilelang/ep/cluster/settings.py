"""Everything `tilec simulate-ep` can be told, in one record: the command's flags and the
configuration file both fill it (the flags given on the command line win)."""
from __future__ import annotations

from dataclasses import dataclass, fields

from ..errors_eplb import EPError
from .scenario import Workload
from .spec import GB, US, ClusterSpec, Link


@dataclass
class Settings:
    # cluster
    ranks: int = 16
    nodes: int | None = None            # default: ranks / 8 (one node up to 8 ranks)
    nvlink_bw: float = 160.0            # GB/s, each direction, per rank
    nvlink_latency: float = 1.0         # us
    rdma_bw: float = 50.0               # GB/s per rank (its NIC)
    rdma_latency: float = 3.0           # us
    local_bw: float = 1675.0            # GB/s, copies within a rank (self_copies="local")
    self_copies: str = "port"
    shared_memory: bool = False         # ranks copying through shared memory (a CPU host)
    # workload
    experts: int = 256
    topk: int = 8
    tokens: int = 4096                  # per rank
    hidden: int = 7168
    groups: int = 8
    topk_groups: int = 4
    zipf: float = 1.0
    drift: float = 0.05
    seed: int = 0
    trace: str | None = None
    chunk: int = 128
    dispatch_dtype: str = "fp8"
    # placement and routing
    routing: str = "both"               # flat | hierarchical | both
    eplb: bool = True
    redundant: int | None = None        # default: one per rank
    # projection
    project: bool = False
    intermediate: int = 2048
    tcsim_config: str = "h100_like"
    compute_tflops: float | None = None
    comm_sms: int = 24

    def update(self, values: dict) -> "Settings":
        known = {f.name for f in fields(self)}
        for name, value in values.items():
            if name not in known:
                raise KeyError(name)
            setattr(self, name, value)
        return self

    def spec(self) -> ClusterSpec:
        nodes = self.nodes or max(1, self.ranks // 8)
        if self.ranks % nodes:
            raise EPError(f"--ranks {self.ranks} does not divide over --nodes {nodes}")
        return ClusterSpec(ranks=self.ranks, ranks_per_node=self.ranks // nodes,
                           nvlink=Link(self.nvlink_bw * GB, self.nvlink_latency * US),
                           rdma=Link(self.rdma_bw * GB, self.rdma_latency * US),
                           local=Link(self.local_bw * GB, 0.0), self_copies=self.self_copies,
                           shared_memory=self.shared_memory)

    def redundant_experts(self) -> int:
        if not self.eplb:
            return 0
        return self.ranks if self.redundant is None else self.redundant

    def workload(self) -> Workload:
        return Workload(experts=self.experts, redundant=self.redundant_experts(),
                        topk=self.topk, tokens=self.tokens, hidden=self.hidden,
                        groups=self.groups, topk_groups=self.topk_groups, zipf=self.zipf,
                        drift=self.drift, seed=self.seed, dispatch_dtype=self.dispatch_dtype,
                        chunk=self.chunk)

    def cases(self) -> tuple:
        routings = ("flat", "hierarchical") if self.routing == "both" else (self.routing,)
        placements = ("contiguous", "eplb") if self.redundant_experts() else ("contiguous",)
        return tuple((p, r) for p in placements for r in routings)
