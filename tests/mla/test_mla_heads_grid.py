"""FlashMLA's dense-decode grid beyond one KV head: h_q of 1, 3, 9, 63, 126 over h_kv of
1, 2, 3, 8, s_q up to 4, causal or not, varlen with empty requests (a few points of its
grid, small lengths; the CPU and tcsim:tiny); and the spellings a FlashMLA user types:
every argument by keyword, the older get_mla_metadata's keywords."""
from __future__ import annotations

import numpy as np
import pytest

from tilelang.ops.mla import flash_mla_with_kvcache, get_mla_metadata

from .cases import check, make_case


@pytest.mark.parametrize("b, s_q, s_k, h_q, h_kv, causal, zero, dtype", [
    (2, 1, 140, 3, 3, False, False, "bf16"),
    (2, 2, 20, 9, 3, True, False, "bf16"),
    (6, 4, 140, 126, 2, True, True, "bf16"),
    (2, 2, 140, 64, 8, False, True, "fp16"),
    (3, 4, 20, 63, 1, False, False, "fp16"),
    (2, 1, 140, 1, 1, False, True, "bf16"),
])
def test_flashmla_heads_grid(b, s_q, s_k, h_q, h_kv, causal, zero, dtype):
    q, kv, table, lens = make_case(b, s_q, h_q, h_kv, s_k, zero=zero, seed=h_q * 5 + s_q,
                                   dtype=dtype)
    meta, splits = get_mla_metadata(lens, s_q * h_q // h_kv, h_kv)
    out, lse = flash_mla_with_kvcache(q, kv, table, lens, 512, meta, splits, causal=causal)
    assert out.shape == (b, s_q, h_q, 512) and lse.shape == (b, h_q, s_q)
    check(out, lse, q, kv, table, lens, causal=causal)


@pytest.mark.parametrize("s_q, h_q, h_kv, causal", [(1, 9, 3, False), (2, 6, 2, True)])
def test_tcsim_heads_grid(s_q, h_q, h_kv, causal):
    from .test_mla_tcsim import _run_tcsim
    q, kv, table, lens = make_case(2, s_q, h_q, h_kv, 80, seed=s_q + h_q)
    out, lse, _ = _run_tcsim(q, kv, table, lens, causal=causal, parts=3)
    check(out, lse, q, kv, table, lens, causal=causal, cos=2e-5)


def test_every_argument_by_keyword():
    q, kv, table, lens = make_case(2, 2, 16, 2, 100, seed=41)
    meta, splits = get_mla_metadata(cache_seqlens=lens, num_q_tokens_per_head_k=16,
                                    num_heads_k=2, num_heads_q=16, is_fp8_kvcache=False,
                                    topk=None)
    assert splits is None
    out, lse = flash_mla_with_kvcache(
        q=q, k_cache=kv, block_table=table, cache_seqlens=lens, head_dim_v=512,
        tile_scheduler_metadata=meta, num_splits=splits, softmax_scale=0.1, causal=True,
        is_fp8_kvcache=False, indices=None, attn_sink=None, extra_k_cache=None,
        extra_indices_in_kvcache=None, topk_length=None, extra_topk_length=None)
    from tilelang.ops.mla import mla_decode_reference, cosine_diff
    ref, _ = mla_decode_reference(q, np.nan_to_num(kv.astype(np.float32)), table, lens, 512,
                                  causal=True, softmax_scale=0.1)
    assert cosine_diff(np.asarray(out, np.float64), ref) < 1e-5


@pytest.mark.parametrize("change, error, words", [
    ({"softmax_scale": "0.1"}, TypeError, "softmax_scale: expected a number"),
    ({"head_dim_v": "512"}, ValueError, "head_dim_v: must be 512, got '512'"),
    ({"block_table": None}, TypeError, "block_table: expected a numpy array"),
])
def test_wrong_arguments_are_named(change, error, words):
    q, kv, table, lens = make_case(2, 1, 16, 1, 100, varlen=False, seed=8)
    args = dict(q=q, k_cache=kv, block_table=table, cache_seqlens=lens, head_dim_v=512,
                tile_scheduler_metadata=get_mla_metadata()[0], num_splits=None)
    args.update(change)
    with pytest.raises(error) as e:
        flash_mla_with_kvcache(**args)
    assert words in str(e.value)
