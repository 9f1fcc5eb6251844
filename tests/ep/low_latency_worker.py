"""DeepEP's tests/legacy/test_low_latency.py (its correctness part), ported onto
tilelang.ep with numpy: x tagged with its rank (rank - 128) and, in its last 128
channels, the token index; a random x; random top-k with ten -1 slots; every
hook / fp8 / round_scale / ue8m0 mode, some dispatched twice; per expert the received
count against the reference, the layout range, each row's rank tag and source token;
combine (plain and zero-copy through get_next_low_latency_combine_buffer) against the
weighted sum with DeepEP's calc_diff bounds. Run as ranks; a rank prints `RANK r OK`."""
from __future__ import annotations

import ml_dtypes
import numpy as np

import tilelang.ep as ep

BF16 = ml_dtypes.bfloat16
RANK_OFFSET = 128
MASK = (1 << 32) - 1


def inputs(rank, num_tokens, hidden, num_experts, num_topk):
    rng = np.random.default_rng(1000 + rank)
    x = np.full((num_tokens, hidden), rank - RANK_OFFSET, np.float32)
    x[:, -128:] = np.arange(num_tokens, dtype=np.float32)[:, None]
    x_rand = (rng.standard_normal((num_tokens, hidden)) * 0.1).astype(BF16)
    scores = np.abs(rng.standard_normal((num_tokens, num_experts))) + 1
    topk_idx = np.argsort(-scores, axis=1, kind="stable")[:, :num_topk].astype(ep.topk_idx_t)
    topk_weights = np.abs(rng.standard_normal((num_tokens, num_topk))).astype(np.float32)
    for _ in range(10):
        topk_idx[rng.integers(num_tokens), rng.integers(num_topk)] = -1
    return [x.astype(BF16), x_rand], topk_idx, topk_weights


def cast_back(q, scales):
    """DeepEP's per_token_cast_back: to fp32, times the scales, rounded to bf16."""
    return ep.per_token_cast_back(q, scales).astype(BF16)


def modes():
    for return_recv_hook in (False, True):
        for use_fp8 in (False, True):
            for round_scale in ((False, True) if use_fp8 else (False,)):
                for use_ue8m0 in ((False, True) if round_scale else (False,)):
                    yield return_recv_hook, use_fp8, round_scale, use_ue8m0


def unpack_ue8m0(packed, groups):
    """[..., S/4] int32 of exponent bytes -> fp32 scales [..., S]."""
    exps = np.ascontiguousarray(packed).view(np.uint8).astype(np.uint32)
    return (exps << 23).view(np.float32).reshape(*packed.shape[:-1], groups)


def main():
    group = ep.init()
    rank, num_ranks = group.rank(), group.size()
    num_tokens, hidden, num_topk = 16, 512, 4
    num_experts = 4 * num_ranks
    local = num_experts // num_ranks
    buffer = ep.Buffer(group, 0, ep.Buffer.get_low_latency_rdma_size_hint(
        num_tokens, hidden, num_ranks, num_experts), low_latency_mode=True,
        num_qps_per_rank=local)
    data = [inputs(r, num_tokens, hidden, num_experts, num_topk) for r in range(num_ranks)]
    x_list, topk_idx, topk_weights = data[rank]
    x = x_list[0]
    all_topk_idx = np.stack([d[1] for d in data])
    checked = 0
    num_times = 0
    for current_x in x_list:
        for return_recv_hook, use_fp8, round_scale, use_ue8m0 in modes():
            num_times += 1
            for _ in range(num_times % 2 + 1):
                stats = np.zeros(local, np.int32)
                packed_x, packed_count, handle, event, hook = buffer.low_latency_dispatch(
                    current_x, topk_idx, num_tokens, num_experts,
                    cumulative_local_expert_recv_stats=stats, use_fp8=use_fp8,
                    round_scale=round_scale, use_ue8m0=use_ue8m0,
                    async_finish=not return_recv_hook, return_recv_hook=return_recv_hook)
                if return_recv_hook:
                    assert callable(hook)
                    hook()
                else:
                    assert hook is None
                    event.current_stream_wait()
            if use_fp8:
                q, scales = packed_x
                assert q.shape == (local, num_ranks * num_tokens, hidden)
                assert q.dtype == ml_dtypes.float8_e4m3fn
                groups = hidden // 128
                if use_ue8m0:
                    assert scales.shape == (local, num_ranks * num_tokens, groups // 4)
                    assert scales.dtype == np.int32
                    scales = unpack_ue8m0(scales, groups)
                else:
                    assert scales.shape == (local, num_ranks * num_tokens, groups)
                # the last two dimensions column-major, as DeepEP's
                assert scales.strides[1] < scales.strides[2] or use_ue8m0
                scales = np.ascontiguousarray(scales)
                with np.errstate(all="ignore"):     # rows past the counts hold anything
                    simulated_gemm_x = cast_back(q.reshape(-1, hidden),
                                                 scales.reshape(-1, groups)).reshape(q.shape)
            else:
                assert packed_x.dtype == BF16
                assert packed_x.shape == (local, num_ranks * num_tokens, hidden)
                simulated_gemm_x = packed_x.copy()
            src_info_all, layout_range_all = handle[0], handle[1]
            for i in range(local):
                expert_id = rank * local + i
                recv_x = simulated_gemm_x[i].astype(np.float32)
                count = int(packed_count[i])
                layout_range = layout_range_all[i]
                assert stats[i] == count, (stats[i], count)
                assert count == int((layout_range & MASK).sum())
                assert count == int((all_topk_idx == expert_id).sum())
                if count == 0 or current_x is not x:
                    continue
                recv_x = recv_x[:count]
                src_info = src_info_all[i][:count]
                amin = recv_x[:, :-128].min(axis=1)
                assert np.array_equal(amin, recv_x[:, :-128].max(axis=1))
                if round_scale:
                    assert ep.calc_diff(recv_x[:, -1], src_info) < 0.007
                else:
                    assert (recv_x[:, -128:] - (src_info % num_tokens)[:, None]).sum() == 0
                    assert (recv_x[:, -128:] == (src_info % num_tokens)[:, None]).all()
                for j in range(num_ranks):
                    begin, n = int(layout_range[j] >> 32), int(layout_range[j] & MASK)
                    assert n == int((all_topk_idx[j] == expert_id).sum())
                    # the rows of rank j are its tokens routed to this expert
                    want = np.flatnonzero((all_topk_idx[j] == expert_id).any(axis=1))
                    assert np.array_equal(np.sort(src_info[begin:begin + n]), want)
                    if not round_scale:
                        assert int((amin == j - RANK_OFFSET).sum()) == n
                        assert (recv_x[begin:begin + n, :-128] - j + RANK_OFFSET).sum() == 0
                checked += 1

            for zero_copy in (False, True):
                if zero_copy:
                    buffer.get_next_low_latency_combine_buffer(handle)[:, :, :] = \
                        simulated_gemm_x
                out = np.empty((num_tokens, hidden), BF16)
                combined_x, event, hook = buffer.low_latency_combine(
                    simulated_gemm_x, topk_idx, topk_weights, handle,
                    async_finish=not return_recv_hook, zero_copy=zero_copy,
                    return_recv_hook=return_recv_hook, out=out)
                if return_recv_hook:
                    hook()
                else:
                    event.current_stream_wait()
                assert combined_x is out
                weight = np.where(topk_idx == -1, 0, topk_weights).sum(axis=1)[:, None]
                ref = current_x.astype(np.float64) * weight
                diff = ep.calc_diff(ref, combined_x.astype(np.float64))
                assert not np.isnan(combined_x.astype(np.float32)).any()
                if not round_scale:
                    assert diff < (9e-4 if use_fp8 else 1e-5), (diff, use_fp8, zero_copy)
    assert checked > 0

    # a hook is required: the next collective before it is an error
    _, _, _, _, hook = buffer.low_latency_dispatch(x, topk_idx, num_tokens, num_experts,
                                                   return_recv_hook=True)
    try:
        buffer.low_latency_dispatch(x, topk_idx, num_tokens, num_experts)
        raise AssertionError("a dispatch before the hook was called went through")
    except RuntimeError as e:
        assert "hook" in str(e)
    hook()

    # ranks that disagree on the sizes, or one rank's bad expert id, fail every rank
    # before any data moves; the Buffer goes on working
    for args, words in (((x, topk_idx, num_tokens + rank, num_experts),
                         "different num_max_dispatch_tokens_per_rank"),
                        ((x, np.where(np.arange(num_tokens)[:, None] == rank * 0 + 3,
                                      num_experts if rank == 0 else topk_idx, topk_idx),
                          num_tokens, num_experts), "topk_idx of rank 0 holds")):
        try:
            buffer.low_latency_dispatch(*args)
            raise AssertionError(f"no error: {words}")
        except ep.RoutingError as e:
            assert words in str(e), str(e)
    recv_x, count, handle, _, _ = buffer.low_latency_dispatch(x, topk_idx, num_tokens,
                                                              num_experts, use_fp8=False)
    assert int(count.sum()) == int(sum((all_topk_idx == rank * local + i).sum()
                                       for i in range(local)))
    buffer.clean_low_latency_buffer(num_tokens, hidden, num_experts)
    assert not recv_x.astype(np.float32).any()              # clean zeroes the rows
    buffer.destroy()
    print(f"RANK {rank} OK on {group.num_hosts} host(s)", flush=True)


if __name__ == "__main__":
    main()
