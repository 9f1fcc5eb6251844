"""One rank of benchmarks/ep_cluster.py's check of the model against this machine
(started by the shm launcher): step 1 of a saved routing trace through tilelang.ep.Buffer
with the contiguous and with EPLB's placement (fitted on step 0), fp8 dispatch with top-k
and bf16 combine, timed in turns with a plain copy into the next rank's shared memory
(every rank copying at once: the copy bandwidth the model's links get) and with a
dispatch and combine that move no token (their fixed cost: the notify step, the
barriers, the kernel launches). Rank 0 prints one JSON line; each figure is the slowest
rank's best turn (the least disturbed by other work on the host; `median` has the
slowest rank's medians).

    python ep_cluster_child.py TRACE.npz HIDDEN TURNS COPY_MB
"""
from __future__ import annotations

import json
import statistics
import sys
import time

import ml_dtypes
import numpy as np

import tilelang.ep as ep
from tilelang.ep.placement import ExpertPlacement
from tilelang.ep.trace import RoutingTrace


def timed(group, fn) -> float:
    group.barrier()
    t0 = time.perf_counter()
    fn()
    group.barrier()
    return time.perf_counter() - t0


def alternate(group, sides: dict, turns: int) -> dict:
    times = {name: [] for name in sides}
    for _ in range(turns):
        for name, fn in sides.items():
            times[name].append(timed(group, fn))
    mine = {name: (min(ts), statistics.median(ts)) for name, ts in times.items()}
    every = group.allgather(mine)
    out = {name: max(m[name][0] for m in every) for name in sides}
    out["median"] = {name: max(m[name][1] for m in every) for name in sides}
    return out


def main():
    trace_path, hidden, turns, copy_mb = sys.argv[1], *map(int, sys.argv[2:5])
    group = ep.init()
    me, ranks = group.rank(), group.size()
    trace = RoutingTrace.load(trace_path)
    logical = trace.routing(1, 0, ranks)[me].astype(np.int64)
    tokens, topk = logical.shape
    rng = np.random.default_rng(me)
    q, scales = ep.per_token_cast_to_fp8(rng.standard_normal((tokens, hidden),
                                                             dtype=np.float32))
    xb = rng.standard_normal((tokens, hidden), dtype=np.float32).astype(ml_dtypes.bfloat16)
    w = rng.random((tokens, topk)).astype(np.float32)
    buffer = ep.Buffer(group, ep.Buffer.get_buffer_size_hint(tokens, hidden, ranks, topk))
    # the copy baseline: into the next rank's heap, past what the collectives use
    copy_bytes = copy_mb << 20
    heap = group.heap(copy_bytes + (1 << 20))
    dst = heap.alloc((copy_bytes,), np.uint8)
    src = np.frombuffer(rng.bytes(copy_bytes), np.uint8)
    peer = heap.view(heap.offset_of(dst), (copy_bytes,), np.uint8, rank=(me + 1) % ranks)
    out = {"copy_bytes": copy_bytes}
    placements = (("contiguous", ExpertPlacement.contiguous(trace.num_experts, ranks)),
                  ("eplb", ExpertPlacement.balanced(trace.loads(0)[0], ranks, ranks,
                                                    trace.num_groups, 1)))
    for name, placement in placements:
        placement.install(buffer)
        phys = placement.physical_topk(logical, me)
        empty = np.full_like(phys, -1)
        per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(
            phys, placement.num_physical)
        layout = dict(topk_idx=phys, topk_weights=w, num_tokens_per_rank=per_rank,
                      is_token_in_rank=in_rank, num_tokens_per_expert=per_expert)
        _, _, rw, _, handle, _ = buffer.dispatch((q, scales), **layout)
        rw = rw.copy()
        expert_out = np.asarray(buffer.dispatch(xb, handle=handle)[0]).copy()
        per_rank0, _, per_expert0, in_rank0, _ = buffer.get_dispatch_layout(
            empty, placement.num_physical)
        nothing = dict(topk_idx=empty, topk_weights=w, num_tokens_per_rank=per_rank0,
                       is_token_in_rank=in_rank0, num_tokens_per_expert=per_expert0)
        _, _, rw0, _, handle0, _ = buffer.dispatch((q, scales), **nothing)
        none_out = expert_out[:0]
        t = alternate(group, {
            "dispatch": lambda: buffer.dispatch((q, scales), **layout),
            "combine": lambda: buffer.combine(expert_out, handle, topk_weights=rw),
            "copy": lambda: np.copyto(peer, src),
            "dispatch_empty": lambda: buffer.dispatch((q, scales), **nothing),
            "combine_empty": lambda: buffer.combine(none_out, handle0, topk_weights=rw0),
        }, turns)
        out[name] = dict(t, rows=max(group.allgather(int(handle.plan.num_recv))))
    if me == 0:
        print(json.dumps(out), flush=True)
    group.barrier()


if __name__ == "__main__":
    main()
