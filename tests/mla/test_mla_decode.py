"""MLA decode (tilelang.ops.mla) against the float64 reference, FlashMLA's test recipe:
varlen batches with zero-length requests, NaN past every length and in unused blocks,
permuted block tables, causal s_q = 2, forced split counts, metadata reused across
layers, the older interface's arrays, and the argument checks."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tilelang.ops.mla import flash_mla_with_kvcache, get_mla_metadata
from tilelang.ops.mla.scheduler import forced_splits, schedule

from .cases import check, make_case


def _run(q, kv, table, lens, causal=False, meta=None):
    meta, splits = meta or get_mla_metadata(lens, q.shape[1] * q.shape[2] // kv.shape[2],
                                            kv.shape[2])
    return flash_mla_with_kvcache(q, kv, table, lens, 512, meta, splits, causal=causal)


def test_varlen_with_empty_requests_and_nan_slots():
    q, kv, table, lens = make_case(6, 1, 16, 1, 200, zero=True, seed=1)
    assert (lens == 0).any() and (lens > 64).any()
    out, lse = _run(q, kv, table, lens)
    assert out.shape == (6, 1, 16, 512) and out.dtype == q.dtype
    assert lse.shape == (6, 16, 1) and lse.dtype == np.float32
    check(out, lse, q, kv, table, lens)
    assert np.isposinf(lse[lens == 0]).all()


def test_causal_two_queries_mtp():
    q, kv, table, lens = make_case(3, 2, 16, 1, 150, seed=2)
    out, lse = _run(q, kv, table, lens, causal=True)
    check(out, lse, q, kv, table, lens, causal=True)
    plain, _ = _run(q, kv, table, lens, causal=False)
    assert not np.array_equal(plain[:, 0], out[:, 0])      # token 0 saw one key less
    np.testing.assert_array_equal(plain[:, 1], out[:, 1])   # the last token sees all


@pytest.mark.parametrize("splits", [1, 2, 5, 64])
def test_forced_split_counts(splits):
    q, kv, table, lens = make_case(3, 1, 16, 1, 400, seed=3)
    with forced_splits(splits):
        meta, _ = get_mla_metadata()
        out, lse = _run(q, kv, table, lens, meta=(meta, None))
    blocks = -(-lens // 64)
    assert np.array_equal(np.diff(meta.num_splits), np.minimum(blocks, splits))
    check(out, lse, q, kv, table, lens)


def test_metadata_is_reused_across_layers_and_checked():
    q, kv, table, lens = make_case(2, 1, 16, 1, 100, seed=4)
    meta, splits = get_mla_metadata(lens, 16, 1)
    _run(q, kv, table, lens, meta=(meta, splits))
    plan = meta.tile_scheduler_metadata
    q2 = (q.astype(np.float32)[:, :, ::-1] * 0.7).astype(q.dtype)   # another layer's
    kv2 = (kv.astype(np.float32) * -1.3).astype(kv.dtype)            # q and cache
    out, lse = _run(q2, kv2, table, lens, meta=(meta, splits))
    assert meta.tile_scheduler_metadata is plan
    check(out, lse, q2, kv2, table, lens)
    with pytest.raises(ValueError, match="tile_scheduler_metadata: made for other arguments"
                                         r" \(h_q was 16, now 8\)"):
        flash_mla_with_kvcache(q[:, :, :8], kv, table, lens, 512, meta, None)
    # other lengths need another plan (reused, it would skip blocks): an error, not a
    # silently wrong result
    shorter = (lens // 2).astype(np.int32)
    with pytest.raises(ValueError, match=r"tile_scheduler_metadata: made for other "
                                         r"cache_seqlens \(entry 0 was"):
        flash_mla_with_kvcache(q, kv, table, shorter, 512, meta, None)


def test_older_interface_arrays():
    q, kv, table, lens = make_case(3, 1, 16, 1, 130, seed=6)
    meta, splits = schedule(lens, 3)
    out, lse = flash_mla_with_kvcache(q, kv, table, lens, 512, meta, splits)
    check(out, lse, q, kv, table, lens)


def test_blocks_past_those_in_use_are_never_read():
    q, kv, table, lens = make_case(2, 1, 16, 1, 90, varlen=False, seed=7)
    assert (table == 2147480000).any()
    out, lse = _run(q, kv, table, lens)
    check(out, lse, q, kv, table, lens)


def _bad(**change):
    q, kv, table, lens = make_case(2, 1, 16, 1, 100, varlen=False, seed=8)
    args = dict(q=q, k_cache=kv, block_table=table, cache_seqlens=lens, head_dim_v=512,
                tile_scheduler_metadata=get_mla_metadata()[0], num_splits=None)
    for k, v in change.items():
        args[k] = v(args[k]) if callable(v) else v
    return args


@pytest.mark.parametrize("change, error, words", [
    ({"q": lambda q: q[..., :512]}, ValueError, "q: head dim must be 576"),
    ({"head_dim_v": 576}, ValueError, "head_dim_v: must be 512"),
    ({"k_cache": lambda k: k[:, :32]}, ValueError, "block size must be 64"),
    ({"k_cache": lambda k: k.astype(np.float16)}, TypeError, "k_cache: dtype must be bfloat16"),
    ({"q": lambda q: q.astype(np.float32)}, TypeError, "q: dtype must be bfloat16 or float16"),
    ({"q": lambda q: q[:, :, :15], "k_cache": lambda k: np.concatenate([k, k], 2)},
     ValueError, "k_cache: h_q = 15 is not a multiple of h_kv = 2"),
    ({"block_table": lambda t: t.astype(np.int64)}, TypeError, "block_table: expected int32"),
    ({"cache_seqlens": lambda s: s + 10_000}, ValueError, "cache_seqlens: entry 0 is"),
    ({"block_table": lambda t: np.where(t == t[0, 0], 9999, t).astype(np.int32)},
     ValueError, "block_table: entry [0, 0] = 9999 is in use"),
    ({"tile_scheduler_metadata": None}, TypeError, "tile_scheduler_metadata: pass the object"),
])
def test_argument_errors_name_the_argument(change, error, words):
    with pytest.raises(error) as e:
        flash_mla_with_kvcache(**_bad(**change))
    assert words in str(e.value)


def test_sparse_arguments_are_refused():
    with pytest.raises(NotImplementedError, match="indices: sparse decode"):
        flash_mla_with_kvcache(**_bad(), indices=np.zeros((2, 1, 8), np.int32))


class _DLPackOnly:
    """A tensor known only through the DLPack protocol."""
    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_inputs():
    q, kv, table, lens = make_case(2, 1, 16, 1, 70, seed=9, dtype="fp16")
    meta, _ = get_mla_metadata()
    out, lse = flash_mla_with_kvcache(_DLPackOnly(q), _DLPackOnly(kv), _DLPackOnly(table),
                                      _DLPackOnly(lens), 512, meta, None)
    check(out, lse, q, kv, table, lens)


@pytest.mark.slow
@pytest.mark.parametrize("b, s_q, s_k, h_q, causal, dtype", [
    (b, s_q, s_k, h_q, causal, dtype)
    for b, s_k in ((2, 20), (6, 140), (4, 4096))
    for s_q in (1, 2)
    for h_q in (16, 64, 128)
    for causal in (False, True)
    for dtype in ("bf16", "fp16")
    if not (causal and s_q == 1) and (dtype == "bf16" or h_q == 64)])
def test_flashmla_sweep(b, s_q, s_k, h_q, causal, dtype):
    q, kv, table, lens = make_case(b, s_q, h_q, 1, s_k, seed=b * 7 + s_q, dtype=dtype)
    out, lse = _run(q, kv, table, lens, causal=causal)
    check(out, lse, q, kv, table, lens, causal=causal)


@pytest.mark.slow
def test_empty_requests_in_a_large_batch():
    q, kv, table, lens = make_case(32, 2, 64, 1, 1024, zero=True, seed=33)
    out, lse = _run(q, kv, table, lens, causal=True)
    check(out, lse, q, kv, table, lens, causal=True)


def test_single_query_row_uses_matrix_vector_products():
    from tilelang.ops.mla import kernels
    q, kv, table, lens = make_case(4, 1, 1, 1, 150, zero=True, seed=13)
    out, lse = _run(q, kv, table, lens)
    check(out, lse, q, kv, table, lens)
    k = kernels.decode_kernel("bfloat16", 1, False, False)
    assert k.ir(after="simplify").count("T.gemm") == 0


@settings(max_examples=8, deadline=None)
@given(b=st.integers(1, 5), mean=st.integers(1, 300), zero=st.booleans(),
       dtype=st.sampled_from(["bf16", "fp16"]), seed=st.integers(0, 999))
def test_decode_property(b, mean, zero, dtype, seed):
    q, kv, table, lens = make_case(b, 1, 16, 1, mean, zero=zero, seed=seed, dtype=dtype)
    out, lse = _run(q, kv, table, lens)
    check(out, lse, q, kv, table, lens)
