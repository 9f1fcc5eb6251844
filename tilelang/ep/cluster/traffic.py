"""The messages dispatch and combine send for a routing, chunk by chunk.

A routing is `dest[source rank, token, k]`: the rank of the k-th expert each token of each
source goes to (-1: none). A token goes to a rank once however many of its experts sit
there. The collectives copy tokens in token order, `chunk` tokens a message:

* **flat**: one message per (source, destination rank, chunk) over the link between them
  (a copy within the rank's memory when the destination is the source itself, the
  intra-node port inside a node, the NICs across nodes);
* **hierarchical** (DeepEP's normal kernels): one message per (source, destination node,
  chunk) over RDMA to the rank of the same local index on that node (a local copy for the
  source's own node), which forwards each chunk over the intra-node ports, one message per
  (chunk, destination rank) (a local copy to itself) once the chunk has arrived.

Combine sends the same messages the other way: flat, each destination rank returns its
results to the source (in shared memory the source then adds up the rows it received,
one more pass over them); hierarchical, each rank of a node sends its results for a chunk to
the forwarder over the intra-node ports, and the forwarder, once all of the chunk's
contributions are in, sends one reduced chunk back over RDMA.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors_eplb import EPError
from .spec import LOCAL, NIC_RX, NIC_TX, NVL_RX, NVL_TX, ClusterSpec

ROUTINGS = ("flat", "hierarchical")
COLLECTIVES = ("dispatch", "combine")


@dataclass
class Messages:
    """Struct of arrays, one entry a message. `hop1` is -1 for one-pool messages
    (local copies); a message is sent once all its `parents` have arrived."""
    tokens: np.ndarray          # tokens a message carries
    nbytes: np.ndarray          # float64
    hop0: np.ndarray            # pool ids
    hop1: np.ndarray
    latency: np.ndarray         # s, paid once the first pool has sent the message
    priority: np.ndarray        # order among messages ready at the same time (token order)
    num_parents: np.ndarray
    child_ptr: np.ndarray       # CSR: children of m are child_idx[child_ptr[m]:child_ptr[m+1]]
    child_idx: np.ndarray

    def __len__(self) -> int:
        return len(self.nbytes)

    def with_token_bytes(self, token_bytes: float) -> "Messages":
        """The same messages carrying tokens of another size."""
        return replace(self, nbytes=self.tokens * float(token_bytes))


def pairs(dest, spec: ClusterSpec):
    """The distinct (source, token, rank) triples of a routing, sorted: a token goes to
    a rank once however many of its experts sit there."""
    dest = np.asarray(dest)
    if dest.ndim != 3 or dest.shape[0] != spec.ranks:
        raise EPError(f"the routing must be [ranks={spec.ranks}, tokens, topk], not shape "
                      f"{dest.shape}")
    if dest.size and (dest.max() >= spec.ranks or dest.min() < -1):
        raise EPError(f"the routing names ranks outside 0..{spec.ranks - 1}")
    ranks = np.sort(dest, axis=2)
    keep = ranks >= 0
    keep[:, :, 1:] &= ranks[:, :, 1:] != ranks[:, :, :-1]
    s, t, k = np.nonzero(keep)
    return s, t, ranks[s, t, k].astype(np.int64)


def build(dest, spec: ClusterSpec, collective: str, routing: str, token_bytes: float,
          chunk: int, triples=None) -> Messages:
    """The messages of one collective (module docstring); `triples` = `pairs(dest,
    spec)` when the caller has them already."""
    if collective not in COLLECTIVES:
        raise EPError(f"collective must be one of {COLLECTIVES}, not {collective!r}")
    return chunking(dest, spec, routing, chunk, triples).messages(collective, token_bytes)


@dataclass
class Chunking:
    """The chunks of a routing, which dispatch and combine share (combine sends the
    same messages the other way): `messages()` makes either collective's."""
    spec: ClusterSpec
    flat: bool
    parts: dict

    def messages(self, collective: str, token_bytes: float) -> Messages:
        if collective not in COLLECTIVES:
            raise EPError(f"collective must be one of {COLLECTIVES}, not {collective!r}")
        make = _flat_messages if self.flat else _hierarchical_messages
        return _assemble(make(self.parts, self.spec, collective), token_bytes)


def chunking(dest, spec: ClusterSpec, routing: str, chunk: int, triples=None) -> Chunking:
    """The chunks of `routing` (flat / hierarchical) for `dest`, `chunk` tokens a
    message; `triples` = `pairs(dest, spec)` when the caller has them already."""
    if routing not in ROUTINGS:
        raise EPError(f"routing must be one of {ROUTINGS}, not {routing!r}")
    if not (isinstance(chunk, (int, np.integer)) and chunk >= 1):
        raise EPError(f"chunk must be a positive number of tokens, not {chunk!r}")
    s, t, d = pairs(dest, spec) if triples is None else triples
    flat = routing == "flat" or spec.nodes == 1
    return Chunking(spec, flat, (_flat_chunks if flat else _hierarchical_chunks)(
        s, t, d, spec, chunk))


def _chunk_keys(group, ngroups: int, chunk: int):
    """For entries in token order with a group id each: the key (group, chunk) of each
    entry, the chunk being its rank within its group // `chunk`; and the chunks a group
    may have at most."""
    order = np.argsort(group, kind="stable")
    sizes = np.bincount(group, minlength=ngroups)
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    pos = np.empty_like(group)
    pos[order] = np.arange(len(group)) - first[group[order]]
    most = int(-(-sizes.max() // chunk)) if len(group) else 1
    return group * most + pos // chunk, most


def _flat_chunks(s, t, d, spec: ClusterSpec, chunk: int) -> dict:
    ranks = spec.ranks
    key, most = _chunk_keys(s * ranks + d, ranks * ranks, chunk)
    key, count = np.unique(key, return_counts=True)
    return dict(count=count, src=key // most // ranks, dst=key // most % ranks,
                c=key % most)


def _flat_messages(ch: dict, spec: ClusterSpec, collective: str) -> dict:
    ranks, src, dst = spec.ranks, ch["src"], ch["dst"]
    a, b = (src, dst) if collective == "dispatch" else (dst, src)
    hop0, hop1, latency = _route(a, b, spec, rdma=spec.node_of(a) != spec.node_of(b))
    out = dict(tokens=ch["count"], hop0=hop0, hop1=hop1, latency=latency,
               priority=ch["c"] * ranks + (dst - src) % ranks, edges=None)
    if collective == "combine" and spec.shared_memory:
        out = _with_reduce(out, src, spec)
    return out


def _with_reduce(part, owner, spec: ClusterSpec):
    """Each token owner's pass over the rows it received (a shared-memory combine adds
    them up once they are all in): one message per owner after its arrivals."""
    n, ranks = len(owner), spec.ranks
    rows = np.bincount(owner, weights=part["tokens"], minlength=ranks).astype(np.int64)
    pool = spec.pool(LOCAL, np.arange(ranks))
    return dict(tokens=np.concatenate([part["tokens"], rows]),
                hop0=np.concatenate([part["hop0"], pool]),
                hop1=np.concatenate([part["hop1"], np.full(ranks, -1)]),
                latency=np.concatenate([part["latency"], np.full(ranks, spec.local.latency)]),
                priority=np.concatenate([part["priority"],
                                         np.full(ranks, part["priority"].max(initial=0) + 1)]),
                edges=(np.arange(n), n + owner))


def _hierarchical_chunks(s, t, d, spec: ClusterSpec, chunk: int) -> dict:
    nodes, local = spec.nodes, spec.local_ranks
    node = d // local
    # the (source, token, node) pairs: one RDMA-stage copy each
    new = np.ones(len(s), dtype=bool)
    new[1:] = (s[1:] != s[:-1]) | (t[1:] != t[:-1]) | (node[1:] != node[:-1])
    which = np.cumsum(new) - 1                    # each pair's (source, token, node)
    ns, nn = s[new], node[new]
    nkey, most = _chunk_keys(ns * nodes + nn, spec.ranks * nodes, chunk)
    r_key, r_count = np.unique(nkey, return_counts=True)
    r_src, r_node, r_chunk = r_key // most // nodes, r_key // most % nodes, r_key % most
    home, me = r_src // local, r_src % local
    forwarder = r_node * local + me
    r_prio = (r_chunk * nodes + (r_node - home) % nodes) * local
    # the (source, token, rank) pairs: one intra-node copy each, grouped per RDMA chunk
    f_key, f_count = np.unique(nkey[which] * local + d % local, return_counts=True)
    f_parent = np.searchsorted(r_key, f_key // local)
    return dict(r_count=r_count, r_src=r_src, r_node=r_node, home=home,
                forwarder=forwarder, r_prio=r_prio, f_count=f_count, f_parent=f_parent,
                f_dest=r_node[f_parent] * local + f_key % local, f_from=forwarder[f_parent],
                f_prio=r_prio[f_parent] + (f_key % local - me[f_parent]) % local)


def _hierarchical_messages(ch: dict, spec: ClusterSpec, collective: str) -> dict:
    nr, nf = len(ch["r_count"]), len(ch["f_count"])
    no_rdma = np.zeros(nf, dtype=bool)
    rdma = ch["r_node"] != ch["home"]
    if collective == "dispatch":
        r_hops = _route(ch["r_src"], ch["forwarder"], spec, rdma=rdma)
        f_hops = _route(ch["f_from"], ch["f_dest"], spec, rdma=no_rdma)
        edges = (ch["f_parent"], nr + np.arange(nf))            # chunk -> its forwards
    else:
        r_hops = _route(ch["forwarder"], ch["r_src"], spec, rdma=rdma)
        f_hops = _route(ch["f_dest"], ch["f_from"], spec, rdma=no_rdma)
        edges = (nr + np.arange(nf), ch["f_parent"])            # contributions -> chunk
    return dict(tokens=np.concatenate([ch["r_count"], ch["f_count"]]),
                hop0=np.concatenate([r_hops[0], f_hops[0]]),
                hop1=np.concatenate([r_hops[1], f_hops[1]]),
                latency=np.concatenate([r_hops[2], f_hops[2]]),
                priority=np.concatenate([ch["r_prio"], ch["f_prio"]]), edges=edges)


def _route(a, b, spec: ClusterSpec, rdma):
    """The pools and latency of messages from ranks a to ranks b: a local copy, or out
    of a's port and into b's (NICs where `rdma`); in shared memory a's pool only."""
    if spec.shared_memory:
        hop0 = spec.pool(LOCAL, a)
        return hop0, np.full_like(hop0, -1), np.where(a == b, spec.local.latency,
                                                      spec.nvlink.latency)
    same = a == b
    hop0 = np.where(same, spec.pool(LOCAL, a),
                    np.where(rdma, spec.pool(NIC_TX, a), spec.pool(NVL_TX, a)))
    hop1 = np.where(same, -1, np.where(rdma, spec.pool(NIC_RX, b), spec.pool(NVL_RX, b)))
    latency = np.where(same, spec.local.latency,
                       np.where(rdma, spec.rdma.latency, spec.nvlink.latency))
    return hop0, hop1, latency


def _assemble(part, token_bytes: float) -> Messages:
    total = len(part["tokens"])
    if part["edges"] is None:
        parent = child = np.zeros(0, dtype=np.int64)
    else:
        parent, child = part["edges"]
    order = np.argsort(parent, kind="stable")
    child_ptr = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(np.bincount(parent, minlength=total), out=child_ptr[1:])
    return Messages(tokens=part["tokens"], nbytes=part["tokens"] * float(token_bytes),
                    hop0=part["hop0"],
                    hop1=part["hop1"], latency=part["latency"].astype(float),
                    priority=part["priority"], num_parents=np.bincount(child, minlength=total),
                    child_ptr=child_ptr, child_idx=child[order])
