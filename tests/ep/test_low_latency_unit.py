"""The low-latency mode in one process: the weighted-combine kernel against numpy in
float64 (hypothesis over tokens, top-k, hidden sizes that end inside a block, -1 slots),
the fp8 cast kernel against numpy bit for bit, its round_scale / UE8M0 forms, a one-rank dispatch + combine, and the
argument errors, each naming the argument."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang.ep as ep
from tilelang.ep import low_latency
from tilelang.ops.ep import combine_kernels

BF16 = ml_dtypes.bfloat16


@settings(max_examples=15, deadline=None)
@given(num_tokens=st.integers(1, 9), num_topk=st.integers(1, 5),
       hidden=st.sampled_from([3, 128, 512, 700]), num_experts=st.integers(1, 6),
       seed=st.integers(0, 2**16))
def test_combine_weighted_is_the_weighted_sum(num_tokens, num_topk, hidden, num_experts,
                                              seed):
    rng = np.random.default_rng(seed)
    m = num_tokens + int(rng.integers(0, 3))             # rows per expert >= tokens
    back = rng.standard_normal((num_experts * m, hidden)).astype(BF16)
    topk = rng.integers(-1, num_experts, (num_tokens, num_topk)).astype(np.int64)
    weights = rng.standard_normal((num_tokens, num_topk)).astype(np.float32)
    out = np.empty((num_tokens, hidden), BF16)
    combine_kernels("bfloat16")["combine_weighted"](topk, weights, back, out, m)
    ref = np.zeros((num_tokens, hidden))
    for t in range(num_tokens):
        for k in range(num_topk):
            if topk[t, k] >= 0:
                ref[t] += weights[t, k] * back[topk[t, k] * m + t].astype(np.float64)
    bound = np.abs(weights).sum(axis=1)[:, None] * \
        np.abs(back.astype(np.float64)).max() * 2 ** -8 + 1e-6
    assert (np.abs(out.astype(np.float64) - ref) <= bound).all()


def reference_cast(x, round_scale):
    """DeepEP's per-token cast in numpy fp32."""
    t, hidden = x.shape
    groups = x.astype(np.float32).reshape(t, hidden // 128, 128)
    scale = np.maximum(np.abs(groups).max(axis=2), np.float32(1e-4)) / np.float32(448)
    if round_scale:
        scale = np.exp2(np.ceil(np.log2(scale)))
    q = (groups / scale[:, :, None]).reshape(t, hidden)
    return q.astype(ml_dtypes.float8_e4m3fn), scale.astype(np.float32)


@settings(max_examples=12, deadline=None)
@given(num_tokens=st.integers(1, 7), groups=st.integers(1, 5), round_scale=st.booleans(),
       magnitude=st.sampled_from([0.0, 1e-6, 1.0, 300.0]), seed=st.integers(0, 2**16))
def test_fp8_cast_kernel_matches_numpy(num_tokens, groups, round_scale, magnitude, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((num_tokens, groups * 128)) * magnitude).astype(BF16)
    q, s = low_latency.cast_fp8(x, round_scale)
    rq, rs = reference_cast(x, round_scale)
    assert np.array_equal(s, rs)
    assert np.array_equal(q.view(np.uint8), rq.view(np.uint8))


def test_fp8_cast_forms():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((4, 512)) * 5).astype(BF16)
    q, s = low_latency.cast_fp8(x, round_scale=False)
    back = q.astype(np.float32).reshape(4, 4, 128) * s[:, :, None]
    assert ep.calc_diff(back.reshape(4, 512), x.astype(np.float32)) < 1e-3
    q, s = low_latency.cast_fp8(x, round_scale=True)
    assert np.array_equal(np.exp2(np.round(np.log2(s))), s)            # powers of two
    assert (np.abs(q.astype(np.float32)) <= 448).all()
    packed = low_latency.pack_ue8m0(s)
    assert packed.shape == (4, 1) and packed.dtype == np.int32
    exps = packed.view(np.uint8).reshape(4, 4).astype(np.int32)
    assert np.array_equal(exps - 127, np.log2(s).astype(np.int32))


def one_rank(solo, m=8, hidden=256, num_experts=4):
    return ep.Buffer(solo, 0, ep.Buffer.get_low_latency_rdma_size_hint(m, hidden, 1,
                                                                       num_experts))


def routing(num_tokens=6, num_experts=4, num_topk=2, hidden=256, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((num_tokens, hidden)).astype(BF16)
    topk = np.stack([rng.permutation(num_experts)[:num_topk] for _ in range(num_tokens)])
    topk = topk.astype(np.int64)
    topk[0, 1] = -1
    weights = rng.random((num_tokens, num_topk)).astype(np.float32)
    return x, topk, weights


def test_one_rank_round_trip(solo):
    buf = one_rank(solo)
    x, topk, weights = routing()
    recv_x, count, handle, _, hook = buf.low_latency_dispatch(x, topk, 8, 4, use_fp8=False)
    assert hook is None
    for e in range(4):
        tokens = np.flatnonzero((topk == e).any(axis=1))
        assert count[e] == tokens.size
        assert np.array_equal(handle[0][e, :tokens.size], tokens)
        assert np.array_equal(recv_x[e, :tokens.size].view(np.uint16),
                              x[tokens].view(np.uint16))
    combined, _, _ = buf.low_latency_combine(recv_x, topk, weights, handle)
    ref = x.astype(np.float64) * np.where(topk >= 0, weights, 0).sum(axis=1)[:, None]
    assert ep.calc_diff(combined.astype(np.float64), ref) < 1e-5
    buf.destroy()


def test_argument_errors_name_the_argument(solo):
    buf = one_rank(solo)
    x, topk, weights = routing()
    cases = [
        (dict(x=x.astype(np.float32)), ValueError, "x must be bfloat16"),
        (dict(x=x[:, :200]), ValueError, "hidden must be a multiple of 128"),
        (dict(num_max_dispatch_tokens_per_rank=4), ValueError,
         "num_max_dispatch_tokens_per_rank"),
        (dict(num_experts=0), ValueError, "num_experts must be an int >= 1"),
        (dict(num_experts=2.0), ValueError, "num_experts"),
        (dict(topk_idx=topk.astype(np.int32)), ValueError, "topk_idx must be int64"),
        (dict(topk_idx=topk[:3]), ValueError, "topk_idx must have 6 rows"),
        (dict(use_ue8m0=True), ValueError, "use_ue8m0"),
        (dict(cumulative_local_expert_recv_stats=np.zeros(3, np.int32)), ValueError,
         "cumulative_local_expert_recv_stats"),
    ]
    base = dict(x=x, topk_idx=topk, num_max_dispatch_tokens_per_rank=8, num_experts=4)
    for change, kind, words in cases:
        with pytest.raises(kind, match=words):
            buf.low_latency_dispatch(**{**base, **change})
    bad = topk.copy()
    bad[2, 0] = 9
    with pytest.raises(ep.RoutingError, match="topk_idx of rank 0 holds 1 expert id"):
        buf.low_latency_dispatch(x, bad, 8, 4)
    with pytest.raises(ep.BufferTooSmallError, match="get_low_latency_rdma_size_hint"):
        buf.low_latency_dispatch(np.zeros((6, 256 * 64), BF16), topk, 8, 4)

    recv_x, _, handle, _, _ = buf.low_latency_dispatch(x, topk, 8, 4, use_fp8=False)
    cases = [
        (dict(x=recv_x[:, :4]), ValueError, r"x must be \[num_local_experts"),
        (dict(handle=(1, 2)), TypeError, "handle"),
        (dict(topk_weights=weights[:, :1]), ValueError, "topk_weights must have 2 columns"),
        (dict(out=np.empty((6, 128), BF16)), ValueError, "out must have 256 columns"),
    ]
    base = dict(x=recv_x, topk_idx=topk, topk_weights=weights, handle=handle)
    for change, kind, words in cases:
        with pytest.raises(kind, match=words):
            buf.low_latency_combine(**{**base, **change})

    # a hook must be called before the next collective
    combined, _, hook = buf.low_latency_combine(recv_x, topk, weights, handle,
                                                return_recv_hook=True)
    with pytest.raises(RuntimeError, match="hook of the previous low-latency combine"):
        buf.low_latency_dispatch(x, topk, 8, 4)
    hook()
    ref = x.astype(np.float64) * np.where(topk >= 0, weights, 0).sum(axis=1)[:, None]
    assert ep.calc_diff(combined.astype(np.float64), ref) < 1e-5
    buf.destroy()


def test_no_tokens(solo):
    buf = one_rank(solo)
    x = np.zeros((0, 256), BF16)
    topk = np.zeros((0, 2), np.int64)
    (q, s), count, handle, _, _ = buf.low_latency_dispatch(x, topk, 8, 4)
    assert q.shape == (4, 8, 256) and (count == 0).all()
    combined, _, _ = buf.low_latency_combine(np.zeros((4, 8, 256), BF16), topk,
                                             np.zeros((0, 2), np.float32), handle)
    assert combined.shape == (0, 256)
    buf.destroy()


def test_torch_tensors_as_deepep_passes_them(solo):
    """DeepEP's test spellings on torch CPU tensors: results are torch tensors, the fp8
    scales column-major, out= written in place, the zero-copy buffer a torch view."""
    torch = pytest.importorskip("torch")
    buf = one_rank(solo)
    x_np, topk_np, weights_np = routing()
    x = torch.from_numpy(x_np.view(np.int16)).view(torch.bfloat16)
    topk, weights = torch.from_numpy(topk_np), torch.from_numpy(weights_np)
    stats = torch.zeros(4, dtype=torch.int)
    (q, s), count, handle, event, hook = buf.low_latency_dispatch(
        x, topk, 8, 4, cumulative_local_expert_recv_stats=stats, return_recv_hook=True)
    hook()
    assert isinstance(q, torch.Tensor) and q.dtype == torch.float8_e4m3fn
    assert s.shape == (4, 8, 2) and s.stride() == (16, 1, 8)          # column-major
    assert torch.equal(stats, count)
    s = s.contiguous()
    gemm_x = (q.view(-1, 256).float().view(-1, 2, 128) * s.view(-1, 2, 1)).view(4, 8, 256)
    gemm_x = gemm_x.to(torch.bfloat16)
    buf.get_next_low_latency_combine_buffer(handle)[:, :, :] = gemm_x
    out = torch.empty((6, 256), dtype=torch.bfloat16)
    combined, event, hook = buf.low_latency_combine(gemm_x, topk, weights, handle,
                                                    zero_copy=True, out=out)
    event.current_stream_wait()
    assert combined is out and hook is None
    ref = x_np.astype(np.float64) * np.where(topk_np >= 0, weights_np, 0).sum(axis=1)[:, None]
    assert ep.calc_diff(out.float().numpy(), ref) < 9e-4
    buf.destroy()


def test_modes_take_turns_on_one_buffer(solo):
    """A normal dispatch + combine, a low-latency pair, then normal again: each call
    lays out its own regions of the heap, so both modes stay right."""
    x, topk, weights = routing()
    buf = ep.Buffer(solo, ep.Buffer.get_buffer_size_hint(8, 256, 1, 2),
                    ep.Buffer.get_low_latency_rdma_size_hint(8, 256, 1, 4))

    def normal():
        per_rank, _, per_expert, in_rank, _ = buf.get_dispatch_layout(topk, 4)
        recv_x, _, recv_w, _, handle, _ = buf.dispatch(
            x, num_tokens_per_rank=per_rank, is_token_in_rank=in_rank,
            num_tokens_per_expert=per_expert, topk_idx=topk, topk_weights=weights)
        combined, _, _ = buf.combine(recv_x, handle)
        assert np.array_equal(combined.view(np.uint16), x.view(np.uint16))

    def low_latency():
        recv_x, _, handle, _, _ = buf.low_latency_dispatch(x, topk, 8, 4, use_fp8=False)
        combined, _, _ = buf.low_latency_combine(recv_x, topk, weights, handle)
        ref = x.astype(np.float64) * np.where(topk >= 0, weights, 0).sum(axis=1)[:, None]
        assert ep.calc_diff(combined.astype(np.float64), ref) < 1e-5

    normal()
    low_latency()
    normal()
    low_latency()
    buf.destroy()
