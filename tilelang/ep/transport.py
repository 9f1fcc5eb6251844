"""The MPI legs of dispatch and combine between hosts (ranks on one host move data by
address in the kernels). Rows go straight to where the receiver's kernels expect them:
dispatch rows from the sender's staging rows into the receiver's receive rows, combine
rows from the expert outputs into the token owner's staging rows of its combine input."""
from __future__ import annotations

import numpy as np


def _rows(a: np.ndarray, start: int, count: int) -> np.ndarray:
    return a[start:start + count].reshape(-1).view(np.uint8)


def post(comm, sends: list, recvs: list):
    """Start the transfers [(peer, tag, rows)]; the returned callable waits for them
    (the send rows are kept alive until then)."""
    from mpi4py import MPI
    flat = [(p, t, a.reshape(-1).view(np.uint8)) for p, t, a in recvs + sends]
    reqs = [comm.Irecv(buf, source=p, tag=t) for p, t, buf in flat[:len(recvs)] if buf.size]
    reqs += [comm.Isend(buf, dest=p, tag=t) for p, t, buf in flat[len(recvs):] if buf.size]

    def wait() -> None:
        MPI.Request.Waitall(reqs)
        flat.clear()
    return wait


def dispatch_across_hosts(group, plan, recv: dict) -> None:
    names = [n for n in ("x", "scales", "topk_idx", "topk_weights") if n in recv]
    sends, recvs = [], []
    for r in range(plan.num_ranks):
        if plan.local(r):
            continue
        n_out = int(plan.counts[plan.rank, r])
        n_in = int(plan.counts[r, plan.rank])
        for tag, name in enumerate(names):
            sends.append((r, tag, _rows(recv[name], plan.staging_start(r), n_out)))
            recvs.append((r, tag, _rows(recv[name], plan.recv_start(r), n_in)))
    post(group.comm, sends, recvs)()


def combine_across_hosts(group, plan, x: np.ndarray, w, comb: dict) -> None:
    """The expert outputs for tokens of other hosts' ranks, into those ranks' staging
    rows of their combine input (where their combine kernel reads them)."""
    sends, recvs = [], []
    for r in range(plan.num_ranks):
        if plan.local(r):
            continue
        n_back = int(plan.counts[r, plan.rank])      # rows of r's tokens computed here
        n_mine = int(plan.counts[plan.rank, r])      # rows of my tokens computed on r
        pairs = [(x, comb["x"])] + ([(w, comb["w"])] if w is not None else [])
        for tag, (src, dst) in enumerate(pairs):
            sends.append((r, 10 + tag, _rows(np.ascontiguousarray(src), plan.recv_start(r),
                                             n_back)))
            recvs.append((r, 10 + tag, _rows(dst, plan.staging_start(r), n_mine)))
    post(group.comm, sends, recvs)()


__all__ = ["post", "dispatch_across_hosts", "combine_across_hosts"]
