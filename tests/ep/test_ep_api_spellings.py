"""DeepEP's spellings on a group of one rank in the test process: the handle read as
DeepEP's tests read its tuple, a cached dispatch refusing top-k arguments (DeepEP asserts
the same), the config helpers, and dispatch's receive counts with and without top-k."""
import numpy as np
import pytest

import tilelang.ep as ep
from tilelang.runtime.ranks import group as group_mod

from ep_workers import inputs


@pytest.fixture
def buffer(monkeypatch, ep_kernels):
    monkeypatch.setattr(group_mod, "_current", None)
    buf = ep.Buffer(ep.init(), ep.Buffer.get_buffer_size_hint(40, 128, 1, 4))
    yield buf
    buf.destroy()
    monkeypatch.setattr(group_mod, "_current", None)


def _dispatch(buffer, **kw):
    x, topk, w = inputs(0, 40, 128, 4, 8)
    per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(topk, 8)
    layout = dict(num_tokens_per_rank=per_rank, is_token_in_rank=in_rank,
                  num_tokens_per_expert=per_expert)
    return x, topk, w, per_expert, buffer.dispatch(x, **layout, **kw)


def test_handle_reads_as_deepeps_intranode_tuple(buffer):
    x, topk, w, per_expert, (recv, _, _, _, handle, _) = _dispatch(buffer)
    assert len(handle) == 6
    assert handle[0].tolist() == [[recv.shape[0]]]              # rank prefix matrix
    assert handle[4] is handle[-2] and handle[4].shape == (40, 1)
    with pytest.raises(TypeError, match=r"opaque: handle\[0\] is rank_prefix_matrix"):
        handle[1]
    with pytest.raises(TypeError, match="cannot be unpacked"):
        a, b, c, d, e, f = handle


def test_receive_counts_with_and_without_topk(buffer):
    x, topk, w, per_expert, (_, _, _, counts, _, _) = _dispatch(buffer)
    assert counts == per_expert.tolist()                        # no top-k: still counted
    *_, (_, _, _, aligned, _, _) = _dispatch(buffer, topk_idx=topk, topk_weights=w,
                                             expert_alignment=4)
    assert aligned == [-(-int(c) // 4) * 4 for c in per_expert]
    *_, (_, _, _, worst, _, _) = _dispatch(buffer, num_worst_tokens=64)
    assert worst == []


def test_cached_dispatch_refuses_topk_arguments(buffer):
    x, topk, w, _, (_, _, _, _, handle, _) = _dispatch(buffer)
    with pytest.raises(ValueError, match="topk_idx: a dispatch through handle= reuses"):
        buffer.dispatch(x, handle=handle, topk_idx=topk)
    with pytest.raises(TypeError, match="handle: expected the handle of a dispatch"):
        buffer.dispatch(x, handle=(1, 2, 3))


def test_config_spellings():
    assert ep.Config(24, 8, 256).num_max_nvl_chunked_recv_tokens == 256
    ep.Buffer.set_num_sms(24)
    try:
        for make in (ep.Buffer.get_dispatch_config, ep.Buffer.get_combine_config):
            config = make(8)
            assert isinstance(config, ep.Config) and config.num_sms == 24
            assert config.get_nvl_buffer_size_hint(7168 * 2, 8) > 0
    finally:
        ep.Buffer.set_num_sms(20)
    with pytest.raises(ValueError, match="even"):
        ep.Buffer.set_num_sms(3)


def test_wrong_arguments_are_named(buffer):
    x, topk, w, _, (recv, _, rw, _, handle, _) = _dispatch(buffer, topk_idx=None)
    with pytest.raises(TypeError, match="num_experts must be an int, got str '8'"):
        buffer.get_dispatch_layout(topk, "8")
    with pytest.raises(ValueError, match=r"bias\[1\] must be \[tokens, hidden\] = \(40, 128\)"):
        buffer.combine(recv, handle, bias=(np.ones((40, 128), np.float32),
                                           np.ones((3, 128), np.float32)))
    combined, _, _ = buffer.combine(recv, handle, bias=(x, x))      # DeepEP's bias pair
    reach = handle[4].sum(axis=1)[:, None]                            # 0 or 1 rank
    np.testing.assert_allclose(combined.astype(np.float32),
                               (reach + 2) * x.astype(np.float32), rtol=2 ** -7)
