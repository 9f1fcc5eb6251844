"""DeepEP's tests/legacy/test_intranode.py, ported call for call onto tilelang.ep with
numpy: every mode of its loop (previous event, async, random / constant / fp8 x, with and
without top-k), num_worst_tokens, the cached dispatch, combine with weights, then the
config spellings of its tuning section. Run as ranks: `python intranode_worker.py
[minus_one]`; the last line a rank prints is `RANK r OK`.

Like the DeepEP test, it changes `recv_topk_weights` in place and reads the first
dispatch's tensors after later dispatches."""
from __future__ import annotations

import sys

import ml_dtypes
import numpy as np

import tilelang.ep as ep

BF16 = ml_dtypes.bfloat16


def inputs(rank, num_tokens, hidden, num_topk, num_experts, minus_one):
    """DeepEP's data of `rank`: x = rank, a random x, its fp8 cast with column-major
    scales, top-k of |randn| + 1 scores (a few slots -1 with `minus_one`), weights."""
    rng = np.random.default_rng(77 + rank)
    x = (np.ones((num_tokens, hidden), np.float32) * rank).astype(BF16)
    x_pure_rand = rng.standard_normal((num_tokens, hidden)).astype(np.float32).astype(BF16)
    q, s = ep.per_token_cast_to_fp8(x.astype(np.float32))
    x_e4m3 = (q, np.asfortranarray(s))
    scores = np.abs(rng.standard_normal((num_tokens, num_experts))) + 1
    topk_idx = np.argsort(-scores, axis=1)[:, :num_topk].astype(ep.topk_idx_t)
    if minus_one:
        topk_idx[rng.random(topk_idx.shape) < 0.2] = -1
        topk_idx[:, 0] = np.argmax(scores, axis=1)        # every token goes somewhere
    topk_weights = np.ones((num_tokens, num_topk), np.float32) * rank
    topk_weights_pure_rand = rng.standard_normal((num_tokens, num_topk)).astype(np.float32)
    return x, x_pure_rand, x_e4m3, topk_idx, topk_weights, topk_weights_pure_rand


def layout(topk_idx, num_experts, num_ranks):
    """DeepEP's reference layout: tokens per expert and rank, is_token_in_rank."""
    per_expert = np.array([(topk_idx == e).sum() for e in range(num_experts)], np.int32)
    rank_idx = np.where(topk_idx >= 0, topk_idx // (num_experts // num_ranks), -1)
    in_rank = np.stack([(rank_idx == r).any(axis=1) for r in range(num_ranks)], axis=1)
    return in_rank.sum(axis=0).astype(np.int32), per_expert, in_rank


def main(minus_one: bool):
    group = ep.init()
    rank, num_ranks = group.rank(), group.size()
    num_tokens, hidden, num_topk, num_experts = 48, 256, 4, 8 * num_ranks
    buffer = ep.Buffer(group, ep.Buffer.get_buffer_size_hint(num_tokens, hidden, num_ranks,
                                                             num_topk, x_bytes=4))
    data = [inputs(r, num_tokens, hidden, num_topk, num_experts, minus_one)
            for r in range(num_ranks)]
    x, x_pure_rand, x_e4m3, topk_idx, topk_weights, topk_weights_pure_rand = data[rank]
    refs = [layout(d[3], num_experts, num_ranks) for d in data]
    num_tokens_per_rank, num_tokens_per_expert, is_token_in_rank = refs[rank]
    gbl_num_tokens_per_rank = sum(r[0] for r in refs)
    gbl_num_tokens_per_expert = sum(r[1] for r in refs)

    ref_rank, ref_rdma, ref_expert, ref_in_rank, _ = buffer.get_dispatch_layout(
        topk_idx, num_experts)
    hosts = np.asarray(group.hosts)
    num_tokens_per_rdma_rank = None if group.num_hosts == 1 else np.array(
        [is_token_in_rank[:, hosts == h].any(axis=1).sum() for h in range(group.num_hosts)],
        np.int32)
    assert np.array_equal(ref_rank, num_tokens_per_rank)
    assert np.array_equal(ref_rdma, num_tokens_per_rdma_rank)
    assert np.array_equal(ref_expert, num_tokens_per_expert)
    assert np.array_equal(ref_in_rank, is_token_in_rank)

    config = ep.Config(20, 8, 256)
    internode = group.num_hosts > 1
    rng = np.random.default_rng(rank)
    bias_0 = np.ones((num_tokens, hidden), BF16)
    bias_1 = rng.standard_normal((num_tokens, hidden)).astype(np.float32).astype(BF16)

    def check_data(check_x, rank_prefix_matrix):
        assert np.array_equal(check_x.min(axis=1), check_x.max(axis=1))
        start = 0
        for i in range(num_ranks):
            end = int(rank_prefix_matrix[i][rank])
            assert (check_x[start:end].astype(np.int32) - i).sum() == 0
            start = end

    for previous_mode in (False, True):
        for async_mode in (False, True):
            for current_x in (x_pure_rand, x, x_e4m3):
                for with_topk in (False, True):
                    args = dict(x=current_x, num_tokens_per_rank=num_tokens_per_rank,
                                num_tokens_per_rdma_rank=num_tokens_per_rdma_rank,
                                is_token_in_rank=is_token_in_rank,
                                num_tokens_per_expert=num_tokens_per_expert, config=config,
                                async_finish=async_mode)
                    if with_topk:
                        args.update(topk_idx=topk_idx, topk_weights=(
                            topk_weights_pure_rand if current_x is x_pure_rand
                            else topk_weights))
                    if previous_mode:
                        args.update(previous_event=buffer.capture())
                    recv_x, recv_topk_idx, recv_topk_weights, recv_counts, handle, event = \
                        buffer.dispatch(**args)
                    if async_mode:
                        event.current_stream_wait()
                    if isinstance(recv_x, tuple):
                        recv_x = ep.per_token_cast_back(*recv_x)

                    # DeepEP's intranode handle[0] is the rank prefix matrix; across hosts
                    # (its internode handle) handle[-4] is this rank's receive prefix sum
                    rank_prefix_matrix = handle[0] if not internode else \
                        np.repeat(handle[-4][:, None], num_ranks, axis=1)
                    assert gbl_num_tokens_per_rank[rank] == recv_x.shape[0]
                    assert gbl_num_tokens_per_expert.reshape(num_ranks, -1)[rank].tolist() \
                        == recv_counts
                    if current_x is not x_pure_rand:
                        check_data(recv_x.astype(np.float32), rank_prefix_matrix)
                    recv_topk_weights_clone = None
                    if with_topk:
                        local = num_experts // num_ranks
                        assert ((recv_topk_idx == -1) |
                                ((recv_topk_idx >= 0) & (recv_topk_idx < local))).all()
                        for i, count in enumerate(recv_counts):
                            assert (recv_topk_idx == i).sum() == count
                        recv_topk_weights_clone = recv_topk_weights.copy()
                        if current_x is not x_pure_rand:
                            unrouted = recv_topk_idx == -1
                            recv_topk_weights[unrouted] = np.broadcast_to(
                                recv_topk_weights.max(axis=1, keepdims=True),
                                recv_topk_weights.shape)[unrouted]
                            check_data(recv_topk_weights, rank_prefix_matrix)

                    if with_topk:                  # num_worst_tokens
                        worst = num_tokens * num_ranks
                        wx, widx, ww, empty, _, event = buffer.dispatch(
                            **args, num_worst_tokens=worst)
                        if isinstance(wx, tuple):
                            wx = ep.per_token_cast_back(*wx)
                        assert len(empty) == 0
                        assert wx.shape[0] == widx.shape[0] == ww.shape[0] == worst
                        n = recv_x.shape[0]
                        assert np.array_equal(recv_x.view(np.uint8), wx[:n].view(np.uint8))
                        assert np.array_equal(recv_topk_idx, widx[:n])
                        assert np.array_equal(recv_topk_weights_clone, ww[:n])
                        assert (widx[n:] == -1).all()

                    if not with_topk:              # cached dispatch, without top-k
                        cargs = dict(x=current_x, handle=handle, config=config,
                                     async_finish=async_mode)
                        if previous_mode:
                            cargs.update(previous_event=buffer.capture())
                        recv_x, _, _, _, _, event = buffer.dispatch(**cargs)
                        if isinstance(recv_x, tuple):
                            recv_x = ep.per_token_cast_back(*recv_x)
                        if current_x is not x_pure_rand:
                            check_data(recv_x.astype(np.float32), rank_prefix_matrix)

                    cargs = dict(x=recv_x, handle=handle, config=config,
                                 async_finish=async_mode)
                    if with_topk:
                        cargs.update(topk_weights=recv_topk_weights)
                    if previous_mode:
                        cargs.update(previous_event=buffer.capture())
                    if internode:                  # test_internode's combine adds a bias pair
                        cargs.update(bias=(bias_0, bias_1))
                    combined_x, combined_topk_weights, event = buffer.combine(**cargs)
                    if async_mode:
                        event.current_stream_wait()
                    reach = is_token_in_rank.sum(axis=1)[:, None]
                    check_x = combined_x.astype(np.float32)
                    if internode:
                        check_x = check_x - bias_0.astype(np.float32) - bias_1.astype(np.float32)
                    check_x = check_x / reach
                    ref_x = x_pure_rand if current_x is x_pure_rand else x
                    diff = ep.calc_diff(check_x, ref_x.astype(np.float32))
                    assert diff < 5e-6, (previous_mode, async_mode, with_topk, diff)
                    if with_topk:
                        check_w = combined_topk_weights if current_x is x_pure_rand \
                            else combined_topk_weights / reach
                        ref_w = topk_weights_pure_rand if current_x is x_pure_rand \
                            else topk_weights
                        if minus_one:              # weights of -1 slots do not come back
                            ref_w = np.where(topk_idx >= 0, ref_w, 0) \
                                if current_x is x_pure_rand else ref_w
                        diff = ep.calc_diff(check_w, ref_w)
                        assert diff < 1e-9, (current_x is x_pure_rand, diff)

    # the tuning section's spellings: Config(num_sms, chunk, buffer), the default configs
    for nvl_chunk_size in (4, 0):
        if nvl_chunk_size:
            config = ep.Config(20, nvl_chunk_size, 256)
        else:
            ep.Buffer.set_num_sms(20)
            config = ep.Buffer.get_dispatch_config(num_ranks)
        buffer.dispatch(x=x_e4m3, handle=handle, config=config)
    recv_x, _, _, _, handle, _ = buffer.dispatch(
        x=x, num_tokens_per_rank=num_tokens_per_rank, is_token_in_rank=is_token_in_rank,
        num_tokens_per_expert=num_tokens_per_expert, config=config)
    combined_x, none_w, _ = buffer.combine(
        x=recv_x, handle=handle, config=ep.Buffer.get_combine_config(num_ranks))
    assert none_w is None
    assert np.array_equal(combined_x.astype(np.float32),
                          x.astype(np.float32) * is_token_in_rank.sum(axis=1)[:, None])
    buffer.destroy()
    print(f"RANK {rank} OK", flush=True)


if __name__ == "__main__":
    main(minus_one=sys.argv[1:] == ["minus_one"])
