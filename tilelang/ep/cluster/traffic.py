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
results to the source; hierarchical, each rank of a node sends its results for a chunk to
the forwarder over the intra-node ports, and the forwarder, once all of the chunk's
contributions are in, sends one reduced chunk back over RDMA.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors_eplb import EPError
from .spec import LOCAL, NIC_RX, NIC_TX, NVL_RX, NVL_TX, ClusterSpec

ROUTINGS = ("flat", "hierarchical")
COLLECTIVES = ("dispatch", "combine")


@dataclass
class Messages:
    """Struct of arrays, one entry a message. `hop1` is -1 for one-pool messages
    (local copies); a message is sent once all its `parents` have arrived."""
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


def hits(dest, spec: ClusterSpec) -> np.ndarray:
    """`[sources, tokens, ranks]` bool: which ranks each token goes to."""
    dest = np.asarray(dest)
    if dest.ndim != 3 or dest.shape[0] != spec.ranks:
        raise EPError(f"the routing must be [ranks={spec.ranks}, tokens, topk], not shape "
                      f"{dest.shape}")
    if dest.size and (dest.max() >= spec.ranks or dest.min() < -1):
        raise EPError(f"the routing names ranks outside 0..{spec.ranks - 1}")
    sources, tokens, _ = dest.shape
    out = np.zeros((sources, tokens, spec.ranks + 1), dtype=bool)    # column -1: none
    s_idx = np.arange(sources)[:, None, None]
    t_idx = np.arange(tokens)[None, :, None]
    out[s_idx, t_idx, dest] = True
    return out[:, :, :spec.ranks]


def build(dest, spec: ClusterSpec, collective: str, routing: str, token_bytes: float,
          chunk: int) -> Messages:
    """The messages of one collective (module docstring)."""
    if collective not in COLLECTIVES:
        raise EPError(f"collective must be one of {COLLECTIVES}, not {collective!r}")
    if routing not in ROUTINGS:
        raise EPError(f"routing must be one of {ROUTINGS}, not {routing!r}")
    if not (isinstance(chunk, (int, np.integer)) and chunk >= 1):
        raise EPError(f"chunk must be a positive number of tokens, not {chunk!r}")
    hit = hits(dest, spec)
    flat = routing == "flat" or spec.nodes == 1
    parts = [(_flat if flat else _hierarchical)(hit[s], s, spec, chunk, collective)
             for s in range(spec.ranks)]
    return _assemble(parts, token_bytes)


def _chunked(mask, chunk: int):
    """For a [tokens, columns] mask: the chunk index of every set entry (its rank among
    the column's set entries // chunk) and the number of chunks of the busiest column."""
    pos = np.cumsum(mask, axis=0, dtype=np.int64) - 1
    cid = np.where(mask, pos // chunk, 0)
    return cid, int(cid.max()) + 1 if mask.any() else 0


def _flat(hit, s: int, spec: ClusterSpec, chunk: int, collective: str):
    ranks = spec.ranks
    cid, nchunks = _chunked(hit, chunk)
    t, d = np.nonzero(hit)
    count = np.bincount(d * nchunks + cid[t, d], minlength=ranks * nchunks)
    key = np.nonzero(count)[0]
    d, c = key // nchunks, key % nchunks
    a, b = (np.full_like(d, s), d) if collective == "dispatch" else (d, np.full_like(d, s))
    hop0, hop1, latency = _route(a, b, spec, rdma=spec.node_of(a) != spec.node_of(b))
    priority = c * ranks + (d - s) % ranks
    return dict(tokens=count[key], hop0=hop0, hop1=hop1, latency=latency,
                priority=priority, edges=None)


def _hierarchical(hit, s: int, spec: ClusterSpec, chunk: int, collective: str):
    nodes, local = spec.nodes, spec.local_ranks
    home, me = divmod(s, local)
    by_node = hit.reshape(hit.shape[0], nodes, local)
    node_hit = by_node.any(axis=2)
    cid, nchunks = _chunked(node_hit, chunk)
    # one RDMA-stage message per (node, chunk)
    t, nd = np.nonzero(node_hit)
    r_count = np.bincount(nd * nchunks + cid[t, nd], minlength=nodes * nchunks)
    r_key = np.nonzero(r_count)[0]
    r_node, r_chunk = r_key // nchunks, r_key % nchunks
    forwarder = r_node * local + me
    src = np.full_like(forwarder, s)
    # one intra-node message per (node, chunk, local rank)
    t, nd, j = np.nonzero(by_node)
    f_count = np.bincount((nd * nchunks + cid[t, nd]) * local + j,
                          minlength=nodes * nchunks * local)
    f_key = np.nonzero(f_count)[0]
    f_parent = np.searchsorted(r_key, f_key // local)        # index into the R messages
    f_dest = (f_key // local // nchunks) * local + f_key % local
    f_from = forwarder[f_parent]
    r_prio = r_chunk * nodes + (r_node - home) % nodes
    f_prio = r_prio[f_parent] * local + (f_key % local - me) % local
    nr = len(r_key)
    if collective == "dispatch":
        r_hops = _route(src, forwarder, spec, rdma=r_node != home)
        f_hops = _route(f_from, f_dest, spec, rdma=np.zeros(len(f_key), bool))
        edges = (f_parent, nr + np.arange(len(f_key)))         # R -> its forwards
    else:
        r_hops = _route(forwarder, src, spec, rdma=r_node != home)
        f_hops = _route(f_dest, f_from, spec, rdma=np.zeros(len(f_key), bool))
        edges = (nr + np.arange(len(f_key)), f_parent)         # contributions -> R
    return dict(tokens=np.concatenate([r_count[r_key], f_count[f_key]]),
                hop0=np.concatenate([r_hops[0], f_hops[0]]),
                hop1=np.concatenate([r_hops[1], f_hops[1]]),
                latency=np.concatenate([r_hops[2], f_hops[2]]),
                priority=np.concatenate([r_prio * local, f_prio]), edges=edges)


def _route(a, b, spec: ClusterSpec, rdma):
    """The pools and latency of messages from ranks a to ranks b: a local copy, or out
    of a's port and into b's (NICs where `rdma`)."""
    same = a == b
    hop0 = np.where(same, spec.pool(LOCAL, a),
                    np.where(rdma, spec.pool(NIC_TX, a), spec.pool(NVL_TX, a)))
    hop1 = np.where(same, -1, np.where(rdma, spec.pool(NIC_RX, b), spec.pool(NVL_RX, b)))
    latency = np.where(same, spec.local.latency,
                       np.where(rdma, spec.rdma.latency, spec.nvlink.latency))
    return hop0, hop1, latency


def _assemble(parts, token_bytes: float) -> Messages:
    offsets = np.cumsum([0] + [len(p["tokens"]) for p in parts])
    total = int(offsets[-1])
    cat = lambda k: (np.concatenate([p[k] for p in parts]) if parts
                     else np.zeros(0, np.int64))
    parents, children = [], []
    for off, p in zip(offsets, parts):
        if p["edges"] is not None:
            parents.append(p["edges"][0] + off)
            children.append(p["edges"][1] + off)
    parent = np.concatenate(parents) if parents else np.zeros(0, np.int64)
    child = np.concatenate(children) if children else np.zeros(0, np.int64)
    order = np.argsort(parent, kind="stable")
    child_ptr = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(np.bincount(parent, minlength=total), out=child_ptr[1:])
    return Messages(nbytes=cat("tokens") * float(token_bytes), hop0=cat("hop0"),
                    hop1=cat("hop1"), latency=cat("latency").astype(float), priority=cat("priority"),
                    num_parents=np.bincount(child, minlength=total),
                    child_ptr=child_ptr, child_idx=child[order])
