"""The machine the cluster model runs on: ranks grouped in nodes, and the links.

Every rank has, in each direction, an intra-node port (NVLink-class) and an inter-node NIC
(RDMA-class), and a local copy engine for copies within its own memory. Each is a *pool*:
a bandwidth that the messages queued on it share (served one after another at the full
bandwidth); a message takes its link's latency to cross once it has been sent.

The defaults are DeepEP's published H800 setting: NVLink ~160 GB/s and one CX7 400 Gb/s
NIC (~50 GB/s) per GPU, 8 GPUs a node; the local copy engine is HBM3 at half its 3.35 TB/s
(a copy reads and writes). The latencies are typical one-way figures for the two fabrics,
not fitted to any measurement.

Two switches say who does the copying:

* `self_copies="port"` (the default): a rank's copies to itself (the tokens it keeps)
  pass through its intra-node out-port pool like its sends to the other ranks of the
  node. In DeepEP's normal kernels a fixed set of SMs writes every copy, its own rank's
  included, into the receive buffers, so that set's bandwidth is what the copies share;
  DeepEP counts these bytes in its bandwidth figures. `"local"`: they go through a local
  copy engine of their own (`local`, HBM-class), leaving the port to the other ranks.
* `shared_memory=True`: ranks of one host copying through shared memory, as
  `tilelang.ep.Buffer` does on a CPU. A copy is then made by the sending rank's core
  (it writes into the receiver's rows), so it passes that rank's pool only, whose
  bandwidth is a core's copy bandwidth while every rank copies at once (the shared
  memory system is in that figure); a combine ends with each token owner adding up the
  rows it received, one more pass over them through its pool.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..errors_eplb import EPError

GB = 1e9
US = 1e-6

# pool kinds, in the order of a rank's pools
NVL_TX, NVL_RX, NIC_TX, NIC_RX, LOCAL = range(5)
KINDS = ("nvlink out", "nvlink in", "rdma out", "rdma in", "local copy")
KINDS_PER_RANK = len(KINDS)


@dataclass(frozen=True)
class Link:
    bandwidth: float            # bytes / s, each direction
    latency: float = 0.0        # s, one way

    def __post_init__(self):
        if not self.bandwidth > 0:
            raise EPError(f"a link's bandwidth must be > 0, not {self.bandwidth!r}")
        if not self.latency >= 0:
            raise EPError(f"a link's latency must be >= 0, not {self.latency!r}")


@dataclass(frozen=True)
class ClusterSpec:
    ranks: int
    ranks_per_node: int = 8
    nvlink: Link = field(default_factory=lambda: Link(160 * GB, 1.0 * US))
    rdma: Link = field(default_factory=lambda: Link(50 * GB, 3.0 * US))
    local: Link = field(default_factory=lambda: Link(1675 * GB, 0.0))
    self_copies: str = "port"
    shared_memory: bool = False

    def __post_init__(self):
        for name in ("ranks", "ranks_per_node"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise EPError(f"{name} must be a positive integer, not {value!r}")
        if self.ranks % self.ranks_per_node and self.ranks > self.ranks_per_node:
            raise EPError(f"{self.ranks} ranks do not fill nodes of {self.ranks_per_node}")
        if self.self_copies not in ("port", "local"):
            raise EPError(f"self_copies must be 'port' or 'local', not {self.self_copies!r}")

    @property
    def local_ranks(self) -> int:
        """Ranks in one node (fewer than ranks_per_node when all ranks fit in one)."""
        return min(self.ranks, self.ranks_per_node)

    @property
    def nodes(self) -> int:
        return self.ranks // self.local_ranks

    def node_of(self, rank):
        return rank // self.local_ranks

    def with_(self, **changes) -> "ClusterSpec":
        return replace(self, **changes)

    # ------------------------------------------------------------------ pools
    @property
    def num_pools(self) -> int:
        return self.ranks * KINDS_PER_RANK

    def pool(self, kind: int, rank):
        """The pool id of a rank's link of `kind` (with `self_copies="port"` a local
        copy is the rank's intra-node out-port)."""
        if kind == LOCAL and self.self_copies == "port":
            kind = NVL_TX
        return rank * KINDS_PER_RANK + kind

    def bandwidths(self) -> list[float]:
        """The bandwidth of every pool id."""
        per_kind = [self.nvlink, self.nvlink, self.rdma, self.rdma, self.local]
        return [link.bandwidth for _ in range(self.ranks) for link in per_kind]


def deepep_h800(ranks: int) -> ClusterSpec:
    """DeepEP's published test machine: H800 nodes of 8 GPUs, NVLink ~160 GB/s, one
    ~50 GB/s RDMA NIC per GPU."""
    return ClusterSpec(ranks=ranks)
