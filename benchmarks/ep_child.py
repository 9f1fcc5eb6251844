"""One rank of benchmarks/ep.py (started by the shm launcher or mpiexec). Rank 0 prints
the figures as one JSON line. Turns alternate between tilelang.ep and the baseline."""
from __future__ import annotations

import json
import statistics
import sys
import time

import ml_dtypes
import numpy as np

import tilelang.ep as ep
from tilelang.ep.arrays import aligned_empty


def setup(group, num_tokens, hidden, num_topk, num_experts):
    me = group.rank()
    rng = np.random.default_rng(7 + me)
    x = rng.standard_normal((num_tokens, hidden), dtype=np.float32)
    scores = rng.random((num_tokens, num_experts))
    topk = np.argpartition(-scores, num_topk, axis=1)[:, :num_topk].astype(np.int64)
    weights = rng.random((num_tokens, num_topk)).astype(np.float32)
    return x, topk, weights


def timed(group, fn) -> tuple[float, float]:
    """(wall seconds, this process's CPU seconds) of one call, between barriers."""
    group.barrier()
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    c1 = time.process_time()
    group.barrier()
    return time.perf_counter() - t0, c1 - c0


def alternate(group, sides: dict, turns: int) -> dict:
    """Each side's wall time, and under `cpu` its CPU time (a busy host stretches wall
    times by the waits for a core; CPU time is what the side itself costs)."""
    times = {name: [] for name in sides}
    cpu = {name: [] for name in sides}
    for _ in range(turns):
        for name, fn in sides.items():
            wall, used = timed(group, fn)
            times[name].append(wall)
            cpu[name].append(used)
    # every rank's median; the slowest rank sets the figure
    meds = {name: statistics.median(ts) for name, ts in times.items()}
    cmeds = {name: statistics.median(ts) for name, ts in cpu.items()}
    out = {name: max(v[name] for v in group.allgather(meds)) for name in sides}
    out["cpu"] = {name: max(v[name] for v in group.allgather(cmeds)) for name in sides}
    return out


def shm_bench(group, args):
    num_tokens, hidden, num_topk, num_experts, turns = args
    x, topk, weights = setup(group, num_tokens, hidden, num_topk, num_experts)
    q, scales = ep.per_token_cast_to_fp8(x)
    xb = x.astype(ml_dtypes.bfloat16)
    size = ep.Buffer.get_buffer_size_hint(num_tokens, hidden, group.size(), num_topk)
    buffer = ep.Buffer(group, size)
    per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(topk, num_experts)
    layout = dict(num_tokens_per_rank=per_rank, is_token_in_rank=in_rank,
                  num_tokens_per_expert=per_expert, topk_idx=topk, topk_weights=weights)
    (rq, rs), _, rw, _, handle, _ = buffer.dispatch((q, scales), **layout)
    rows = rq.shape[0]
    rw = rw.copy()
    expert_out = np.asarray(ep.per_token_cast_back(rq, rs)).astype(ml_dtypes.bfloat16)
    # DeepEP tunes combine on the recv_x of a bf16 dispatch: read in place here
    recv_bf16 = buffer.dispatch(xb, handle=handle)[0]
    fp8_bytes = rows * (hidden + 4 * scales.shape[1])
    bf16_bytes = rows * hidden * 2
    # the baseline: numpy copies of the same bytes into the peer's shared memory, both
    # ranks at once (into the heap's free tail, mapped by the peer)
    peer = (group.rank() + 1) % group.size()
    heap = group.heap(max(group.allgather(bf16_bytes)) + (1 << 20))
    dst = heap.alloc((bf16_bytes,), np.uint8)
    src8 = np.frombuffer(np.random.default_rng(1).bytes(fp8_bytes), np.uint8)
    src16 = np.frombuffer(np.random.default_rng(2).bytes(bf16_bytes), np.uint8)
    off = heap.offset_of(dst)
    peer8 = heap.view(off, (fp8_bytes,), np.uint8, rank=peer)
    peer16 = heap.view(off, (bf16_bytes,), np.uint8, rank=peer)
    # the combined rows go into one array, as a caching allocator would hand out (a new
    # numpy array of this size would be page-faulted in on every call), starting on a
    # cache line as torch's CPU allocator aligns them (64 bytes)
    out = aligned_empty((num_tokens, hidden), ml_dtypes.bfloat16)
    out[:] = 0
    t = alternate(group, {
        "dispatch": lambda: buffer.dispatch((q, scales), **layout),
        "dispatch_cached": lambda: buffer.dispatch((q, scales), handle=handle),
        "copy_fp8": lambda: np.copyto(peer8, src8),
        "combine": lambda: buffer.combine(recv_bf16, handle, topk_weights=rw, out=out),
        "combine_copied_in": lambda: buffer.combine(expert_out, handle, topk_weights=rw,
                                                    out=out),
        "copy_bf16": lambda: np.copyto(peer16, src16),
    }, turns)
    return {"rows": rows, "fp8_bytes": fp8_bytes, "bf16_bytes": bf16_bytes, **t}


def mpi_bench(group, args):
    """tilelang.ep dispatch (fp8) + combine (bf16) against mpi4py Alltoallv with numpy
    packing and unpacking of the same exchange."""
    from mpi4py import MPI
    num_tokens, hidden, num_topk, num_experts, turns = args
    comm, me, R = group.comm, group.rank(), group.size()
    x, topk, weights = setup(group, num_tokens, hidden, num_topk, num_experts)
    q, scales = ep.per_token_cast_to_fp8(x)
    size = ep.Buffer.get_buffer_size_hint(num_tokens, hidden, R, num_topk)
    buffer = ep.Buffer(group, size)
    per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(topk, num_experts)
    layout = dict(num_tokens_per_rank=per_rank, is_token_in_rank=in_rank,
                  num_tokens_per_expert=per_expert, topk_idx=topk, topk_weights=weights)
    (rq, rs), _, rw, _, handle, _ = buffer.dispatch((q, scales), **layout)
    y = np.asarray(ep.per_token_cast_back(rq, rs)).astype(ml_dtypes.bfloat16)

    # the plain way: tokens packed by destination rank, Alltoallv, results unpacked
    send_idx = [np.flatnonzero(in_rank[:, r]) for r in range(R)]
    order = np.concatenate(send_idx)
    send_counts = np.array([len(i) for i in send_idx])
    recv_counts = np.array(comm.alltoall(send_counts.tolist()))
    S = scales.shape[1]

    def displs(c):
        return np.concatenate([[0], np.cumsum(c)[:-1]])

    def a2a(send, recv, row_bytes, sc, rc):
        comm.Alltoallv([send.view(np.uint8), (sc * row_bytes, displs(sc) * row_bytes),
                        MPI.BYTE], [recv.view(np.uint8), (rc * row_bytes,
                                                          displs(rc) * row_bytes), MPI.BYTE])

    n_recv = int(recv_counts.sum())
    rq_b = np.empty((n_recv, hidden), q.dtype)
    rs_b = np.empty((n_recv, S), np.float32)
    back = np.empty((int(send_counts.sum()), hidden), ml_dtypes.bfloat16)

    def baseline():
        a2a(q[order], rq_b, hidden, send_counts, recv_counts)              # dispatch
        a2a(scales[order], rs_b, 4 * S, send_counts, recv_counts)
        a2a(np.ascontiguousarray(y[:n_recv]), back, hidden * 2, recv_counts, send_counts)
        acc = np.zeros((num_tokens, hidden), np.float32)                   # combine
        start = 0
        for r in range(R):
            n = send_counts[r]
            acc[send_idx[r]] += back[start:start + n].astype(np.float32)
            start += n
        return acc.astype(ml_dtypes.bfloat16)

    out = np.zeros((num_tokens, hidden), ml_dtypes.bfloat16)

    def ours():
        buffer.dispatch((q, scales), **layout)
        buffer.combine(y, handle, topk_weights=rw, out=out)

    t = alternate(group, {"ours": ours, "alltoallv": baseline}, turns)
    return {"rows": int(rq.shape[0]), "hosts": group.num_hosts, **t}


def main():
    mode = sys.argv[1]
    args = [int(a) for a in sys.argv[2:7]]
    group = ep.init()
    result = (shm_bench if mode == "shm" else mpi_bench)(group, args)
    if group.rank() == 0:
        print(json.dumps(result), flush=True)
    group.barrier()


if __name__ == "__main__":
    main()
