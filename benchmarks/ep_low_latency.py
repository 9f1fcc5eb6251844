"""DeepEP's low-latency dispatch (fp8) + combine (bf16) on `tilelang.ep.Buffer`, at a
decoding shape (128 tokens a rank, hidden 7168, top-8 of 64 experts), 2 ranks of one
thread sharing memory.

    python benchmarks/ep_low_latency.py [--tokens 128] [--hidden 7168] [--experts 64]

Bandwidth as DeepEP's test_low_latency counts it: per selected (token, expert) pair,
hidden + hidden / 128 * 4 + 16 bytes dispatched and hidden * 2 combined, over the time
of one dispatch + combine. Baselines in the same run, turns alternating: numpy copying
the same bytes into the peer's shared memory (both ranks at once), and the normal-mode
dispatch + combine of the same tokens (a token crosses once per rank there, once per
expert here). Each figure is the slowest rank's median.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def child(num_tokens: int, hidden: int, num_topk: int, num_experts: int, turns: int):
    import ml_dtypes
    import numpy as np

    import tilelang.ep as ep
    from ep_child import alternate, setup

    group = ep.init()
    R = group.size()
    x, topk, weights = setup(group, num_tokens, hidden, num_topk, num_experts)
    xb = x.astype(ml_dtypes.bfloat16)
    size = max(ep.Buffer.get_low_latency_rdma_size_hint(num_tokens, hidden, R, num_experts),
               ep.Buffer.get_buffer_size_hint(num_tokens, hidden, R, num_topk))
    buffer = ep.Buffer(group, 0, size, low_latency_mode=True)
    (q, s), _, handle, _, _ = buffer.low_latency_dispatch(xb, topk, num_tokens, num_experts)
    expert_out = ep.per_token_cast_back(
        q.reshape(-1, hidden), np.ascontiguousarray(s).reshape(-1, hidden // 128))
    expert_out = expert_out.astype(ml_dtypes.bfloat16).reshape(q.shape)
    out = np.zeros((num_tokens, hidden), ml_dtypes.bfloat16)

    def low_latency():
        buffer.low_latency_dispatch(xb, topk, num_tokens, num_experts)
        buffer.low_latency_combine(expert_out, topk, weights, handle, out=out)

    per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(topk, num_experts)
    layout = dict(num_tokens_per_rank=per_rank, is_token_in_rank=in_rank,
                  num_tokens_per_expert=per_expert, topk_idx=topk, topk_weights=weights)
    fp8 = ep.per_token_cast_to_fp8(x)

    def normal():
        (rq, rs), _, rw, _, h, _ = buffer.dispatch(fp8, **layout)
        y = buffer.combine_input(h)
        buffer.combine(y, h, topk_weights=rw, out=out)

    selections = int((topk >= 0).sum())
    nbytes = selections * (hidden + hidden // 128 * 4 + 16 + hidden * 2)
    peer = (group.rank() + 1) % R
    heap = group.heap(max(group.allgather(nbytes)) + (1 << 20))
    dst = heap.alloc((nbytes,), np.uint8)
    peer_dst = heap.view(heap.offset_of(dst), (nbytes,), np.uint8, rank=peer)
    src = np.frombuffer(np.random.default_rng(1).bytes(nbytes), np.uint8)
    t = alternate(group, {"low_latency": low_latency, "normal": normal,
                          "copy": lambda: np.copyto(peer_dst, src)}, turns)
    if group.rank() == 0:
        print(json.dumps({"bytes": nbytes, "selections": selections, **t}), flush=True)
    group.barrier()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=7168)
    ap.add_argument("--topk", type=int, default=8)
    ap.add_argument("--experts", type=int, default=64)
    ap.add_argument("--turns", type=int, default=9)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    shape = [args.tokens, args.hidden, args.topk, args.experts, args.turns]
    if args.child:
        child(*shape)
        return
    from common import report
    from ep import _last_json
    from tilelang.runtime.ranks import launch
    print(f"== shm, 2 ranks x 1 thread, {args.tokens} tokens a rank, hidden {args.hidden}, "
          f"top-{args.topk} of {args.experts} experts")
    result = launch([__file__, "--child", *[f"--{k}={v}" for k, v in (
        ("tokens", args.tokens), ("hidden", args.hidden), ("topk", args.topk),
        ("experts", args.experts), ("turns", args.turns))]], 2, capture=True,
        env={"TILELANG_NUM_THREADS": "1"})
    if not result.ok:
        raise SystemExit("\n".join(result.outputs))
    r = _last_json(result.outputs[0])
    gbs = r["bytes"] / r["low_latency"] / 1e9
    extra = {"tokens": args.tokens, "hidden": args.hidden, "topk": args.topk,
             "experts": args.experts, "seconds": r["low_latency"],
             "cpu_seconds": r["cpu"]["low_latency"], "load_average": os.getloadavg()[0]}
    report("ep_low_latency", "shm low-latency dispatch+combine GB/s", gbs, "GB/s",
           baseline=r["bytes"] / r["copy"] / 1e9, higher_is_better=True,
           baseline_name="numpy copy of the same bytes into the peer", extra=extra)
    report("ep_low_latency", "shm low-latency dispatch+combine per s", 1 / r["low_latency"],
           "1/s", baseline=1 / r["normal"], higher_is_better=True,
           baseline_name="normal-mode dispatch + combine of the same tokens", extra=extra)
    print(f"    CPU time a call: low-latency {r['cpu']['low_latency'] * 1e3:.2f} ms, normal "
          f"{r['cpu']['normal'] * 1e3:.2f} ms, copy {r['cpu']['copy'] * 1e3:.2f} ms "
          f"(load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
