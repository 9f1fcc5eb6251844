"""One rank of tests/ep/test_placement.py (run by the shm launcher): a step of a skewed
trace through tilelang.ep.Buffer with the contiguous and with EPLB's placement. The
"experts" scale a row by (1 + logical expert) x weight, so the combined result is the same
whatever replica a token went to; rank 0 prints one JSON line of what it saw."""
from __future__ import annotations

import json
import sys

import numpy as np

import tilelang.ep as ep
from tilelang.ep.placement import ExpertPlacement
from tilelang.ep.trace import generate

TOKENS, HIDDEN, EXPERTS, TOPK = 96, 64, 32, 4


def run(group, buffer, placement, logical, x, w):
    me = group.rank()
    phys = placement.physical_topk(logical, me)
    placement.install(buffer)
    per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(phys,
                                                                     placement.num_physical)
    rx, ridx, rw, counts, handle, _ = buffer.dispatch(
        x, topk_idx=phys, topk_weights=w, num_tokens_per_rank=per_rank,
        is_token_in_rank=in_rank, num_tokens_per_expert=per_expert)
    names = placement.logical_of(me, ridx)
    factor = np.where(ridx >= 0, rw * (1 + names), 0).sum(axis=1, dtype=np.float32)
    y = (rx * factor[:, None]).astype(np.float32)
    out, _, _ = buffer.combine(y, handle)
    expected = x * (w * (1 + logical)).sum(axis=1, dtype=np.float32)[:, None]
    ok = bool(np.allclose(out, expected, rtol=1e-5, atol=1e-3))
    # every replica gets exactly the tokens routed to it, from every source
    sent = np.bincount(phys[phys >= 0], minlength=placement.num_physical)
    total = np.sum(group.allgather(sent), axis=0)
    per_rank_phys = placement.num_physical // placement.num_ranks
    mine = total[me * per_rank_phys:(me + 1) * per_rank_phys]
    counts_ok = bool(np.array_equal(np.asarray(counts), mine))
    logical_ok = bool(np.all((names == -1) | (placement.phy2log[
        me * per_rank_phys + np.maximum(ridx, 0)] == names)))
    return dict(ok=ok, counts_ok=counts_ok, logical_ok=logical_ok, rows=int(rx.shape[0]),
                expert_rows=int(sum(counts)))


def main():
    group = ep.init()
    me, ranks = group.rank(), group.size()
    trace = generate(num_experts=EXPERTS, topk=TOPK, tokens=ranks * TOKENS, steps=2,
                     zipf_s=1.3, drift=0.05, seed=int(sys.argv[1]))
    logical = trace.routing(1, 0, ranks)[me].astype(np.int64)
    rng = np.random.default_rng(me)
    x = rng.standard_normal((TOKENS, HIDDEN)).astype(np.float32)
    w = rng.random((TOKENS, TOPK)).astype(np.float32)
    buffer = ep.Buffer(group, ep.Buffer.get_buffer_size_hint(TOKENS, HIDDEN, ranks, TOPK))
    seen = {}
    for name, placement in (
            ("contiguous", ExpertPlacement.contiguous(EXPERTS, ranks)),
            ("eplb", ExpertPlacement.balanced(trace.loads(0)[0], ranks, ranks))):
        seen[name] = run(group, buffer, placement, logical, x, w)
    everyone = group.allgather(seen)
    if me == 0:
        print(json.dumps(everyone), flush=True)
    group.barrier()


if __name__ == "__main__":
    main()
