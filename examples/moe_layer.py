"""An expert-parallel MoE layer on N ranks, checked against numpy:

    tilec launch -n 2 examples/moe_layer.py        # or -n 4; or mpiexec -n 4 python ...

Each rank routes its tokens to the top-k of E experts (E/N on each rank), dispatches
them (tilelang.ep, as with DeepEP), runs its experts as a grouped GEMM written in the
tile language (examples/moe/grouped_gemm.tl: one T.gemm per local expert over the tokens it
received, scaled by the top-k weight), and combines the results back. The check:
y[t] = sum_k weight[t, k] * x[t] @ W[expert[t, k]], in float64 with numpy.
"""
from __future__ import annotations

import os
import sys

import ml_dtypes
import numpy as np

import tilelang
import tilelang.ep as ep

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENS, HIDDEN, FFN, TOPK, EXPERTS_PER_RANK = 200, 256, 128, 4, 4


def expert_weights(num_experts: int) -> np.ndarray:
    rng = np.random.default_rng(99)             # the same experts on every rank
    return (rng.standard_normal((num_experts, HIDDEN, FFN)) / HIDDEN ** 0.5).astype(np.float32)


def tokens(rank: int, num_experts: int):
    rng = np.random.default_rng(rank)
    x = rng.standard_normal((TOKENS, HIDDEN)).astype(np.float32).astype(ml_dtypes.bfloat16)
    scores = rng.random((TOKENS, num_experts))
    topk = np.argsort(-scores, axis=1)[:, :TOPK].astype(np.int64)
    topk[rng.random((TOKENS, TOPK)) < 0.05] = -1              # some slots unused
    weights = rng.random((TOKENS, TOPK)).astype(np.float32)
    return x, topk, weights


def run_experts(recv_x, recv_topk_idx, recv_topk_weights, w_local) -> np.ndarray:
    """The local experts on the received tokens: pairs (row, slot) grouped by expert."""
    rows, slots = np.nonzero(recv_topk_idx >= 0)
    experts = recv_topk_idx[rows, slots]
    order = np.argsort(experts, kind="stable")
    rows, slots, experts = rows[order], slots[order], experts[order]
    count = np.bincount(experts, minlength=len(w_local)).astype(np.int32)
    start = (np.cumsum(count) - count).astype(np.int32)
    out = np.zeros((recv_x.shape[0], FFN), np.float32)
    if rows.size:
        gemm = tilelang.compile(os.path.join(HERE, "moe", "grouped_gemm.tl"))
        gemm(recv_x, w_local, rows.astype(np.int32),
             recv_topk_weights[rows, slots].astype(np.float32), start, count, out)
    return out


def main() -> int:
    group = ep.init()
    me, R = group.rank(), group.size()
    E = EXPERTS_PER_RANK * R
    w_all = expert_weights(E)
    x, topk, weights = tokens(me, E)
    buffer = ep.Buffer(group, ep.Buffer.get_buffer_size_hint(TOKENS, HIDDEN, R, TOPK, 4))

    per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(topk, E)
    recv_x, recv_idx, recv_w, counts, handle, _ = buffer.dispatch(
        x, topk_idx=topk, topk_weights=weights, num_tokens_per_rank=per_rank,
        is_token_in_rank=in_rank, num_tokens_per_expert=per_expert)
    local = w_all[me * EXPERTS_PER_RANK:(me + 1) * EXPERTS_PER_RANK]
    y_recv = run_experts(recv_x, recv_idx, recv_w, local)
    y, _, _ = buffer.combine(y_recv, handle)

    xf = x.astype(np.float64)
    ref = np.zeros((TOKENS, FFN))
    for k in range(TOPK):
        e = topk[:, k]
        hit = e >= 0
        ref[hit] += weights[hit, k, None] * np.einsum("th,thf->tf", xf[hit], w_all[e[hit]])
    diff = ep.calc_diff(y, ref)
    ok = diff < 1e-6 and np.allclose(y, ref, rtol=1e-4, atol=1e-4)
    print(f"rank {me}/{R}: {TOKENS} tokens, received {recv_x.shape[0]} rows "
          f"(experts {counts}), calc_diff {diff:.2e} {'PASS' if ok else 'FAIL'}", flush=True)
    group.barrier()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
