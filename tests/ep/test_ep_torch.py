"""DeepEP's calls with torch CPU tensors (skipped without torch), on a group of one rank in
the test process: the conversions are the same whatever the number of ranks (the
multi-rank paths are tested on numpy), and no rank has to import torch. Results come back
as torch tensors (recv_x a view of the heap, no copy) equal to the numpy path's."""
import numpy as np
import pytest

import tilelang.ep as ep
from tilelang.runtime.ranks import group as group_mod

from ep_workers import inputs, layout_ref

torch = pytest.importorskip("torch")


@pytest.fixture
def buffer(monkeypatch, ep_kernels):
    monkeypatch.setattr(group_mod, "_current", None)
    group = ep.init()
    buf = ep.Buffer(group, ep.Buffer.get_buffer_size_hint(40, 256, 1, 4))
    yield buf
    buf.destroy()
    monkeypatch.setattr(group_mod, "_current", None)


def _bf16(a):
    return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)


def test_dispatch_and_combine_take_and_give_torch_tensors(buffer):
    E, T_, H, K = 4, 40, 256, 4
    x, topk, w = inputs(0, T_, H, K, E)
    ttopk, tw = torch.from_numpy(topk), torch.from_numpy(w).requires_grad_()
    per_rank, rdma, per_expert, in_rank, _ = buffer.get_dispatch_layout(ttopk, E)
    assert all(isinstance(t, torch.Tensor) for t in (per_rank, per_expert, in_rank))
    assert rdma is None and in_rank.dtype == torch.bool and per_rank.dtype == torch.int32
    ref = layout_ref(topk, E, 1)
    assert np.array_equal(per_rank.numpy(), ref[0]) and np.array_equal(in_rank.numpy(), ref[2])
    layout = dict(num_tokens_per_rank=per_rank, is_token_in_rank=in_rank,
                  num_tokens_per_expert=per_expert)
    recv, ridx, rw, counts, handle, _ = buffer.dispatch(_bf16(x), topk_idx=ttopk,
                                                        topk_weights=tw, **layout)
    assert recv.dtype == torch.bfloat16 and ridx.dtype == torch.int64
    assert rw.dtype == torch.float32 and isinstance(counts, list)
    assert buffer.heap.contains(recv.data_ptr(), recv.numel() * 2)      # a view: no copy
    np_recv, np_idx, np_w, np_counts, _, _ = buffer.dispatch(x, topk_idx=topk, topk_weights=w,
                                                             copy=True, **layout)
    assert np.array_equal(recv.view(torch.int16).numpy(), np_recv.view(np.int16))
    assert np.array_equal(ridx.numpy(), np_idx) and np.array_equal(rw.numpy(), np_w)
    assert counts == np_counts
    combined, cw, _ = buffer.combine(recv, handle, topk_weights=rw)
    assert combined.dtype == torch.bfloat16 and cw.dtype == torch.float32
    np_combined, np_cw, _ = buffer.combine(np_recv, handle, topk_weights=np_w)
    assert np.array_equal(combined.view(torch.int16).numpy(), np_combined.view(np.int16))
    assert np.array_equal(cw.numpy(), np_cw)

    # fp8: the pair (x_e4m3, scales) as torch tensors
    q, scales = ep.per_token_cast_to_fp8(x.astype(np.float32))
    tq = torch.from_numpy(q.view(np.uint8)).view(torch.float8_e4m3fn)
    (rq, rs), *_ = buffer.dispatch((tq, torch.from_numpy(scales)), handle=handle)
    assert rq.dtype == torch.float8_e4m3fn and rs.dtype == torch.float32
    (nq, ns), *_ = buffer.dispatch((q, scales), handle=handle, copy=True)
    assert np.array_equal(rq.view(torch.uint8).numpy(), nq.view(np.uint8))
    assert np.array_equal(rs.numpy(), ns)

    with pytest.raises(ValueError, match="x: a torch tensor on meta"):
        buffer.combine(torch.empty((4, H), dtype=torch.bfloat16, device="meta"), handle)
