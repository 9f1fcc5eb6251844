"""The FlashMLA-shaped API: a FlashMLA user changes the import and where the tensors live.

    tile_scheduler_metadata, num_splits = get_mla_metadata(cache_seqlens, s_q * h_q // h_kv, h_kv)
    out, lse = flash_mla_with_kvcache(q, k_cache, block_table, cache_seqlens, 512,
                                      tile_scheduler_metadata, num_splits, causal=True)

Shapes: q (b, s_q, h_q, 576); k_cache (num_blocks, 64, h_kv, 576) of q's dtype (bf16 or
fp16), or with `is_fp8_kvcache=True` (num_blocks, 64, h_kv, 656) float8_e4m3fn / uint8
bytes in FlashMLA's layout (q bf16); block_table int32 (b, max_blocks); cache_seqlens
int32 (b,). Returns out (b, s_q, h_q, 512) in q's dtype and lse float32 (b, h_q, s_q),
natural log, +inf where a row has no key (its output is 0).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .scheduler import BLOCK, schedule
from .tensors import like, to_numpy

D_QK, D_V, FP8_BYTES = 576, 512, 656
LOG2E = 1.4426950408889634


@dataclasses.dataclass
class FlashMLASchedMeta:
    """The scheduler's plan, made on the first call and reused by the calls after it
    (every layer of a decoding step), as long as the shapes and lengths stay the same."""

    @dataclasses.dataclass
    class Config:
        b: int
        s_q: int
        h_q: int
        page_block_size: int
        h_k: int
        causal: bool
        is_fp8_kvcache: bool

    have_initialized: bool = False
    config: Config | None = None
    tile_scheduler_metadata: np.ndarray | None = None    # (num_parts, 8) int32
    num_splits: np.ndarray | None = None                 # (b + 1,) int32
    cache_seqlens: np.ndarray | None = None              # the lengths it was made for


def get_mla_metadata(*args, **kwargs):
    """`(FlashMLASchedMeta(), None)`: the plan is made by the first
    `flash_mla_with_kvcache` call. The arguments of FlashMLA's older interface
    (cache_seqlens, heads per KV head, KV heads, ...) are accepted and ignored."""
    return FlashMLASchedMeta(), None


def flash_mla_with_kvcache(q, k_cache, block_table, cache_seqlens, head_dim_v: int,
                           tile_scheduler_metadata=None, num_splits=None,
                           softmax_scale: float | None = None, causal: bool = False,
                           is_fp8_kvcache: bool = False, indices=None, attn_sink=None,
                           extra_k_cache=None, extra_indices_in_kvcache=None,
                           topk_length=None, extra_topk_length=None):
    """MLA decode attention over a paged latent cache: `(out, lse)` (module docstring).
    `tile_scheduler_metadata` is the object of `get_mla_metadata`, or FlashMLA's older
    precomputed pair of arrays (metadata (parts, 8) int32, num_splits (b + 1) int32).
    The default softmax_scale is 576 ** -0.5 (FlashMLA's); DeepSeek-V2/V3 pass
    192 ** -0.5 (the qk head dim before absorption), times their YaRN factor."""
    for name, value in (("indices", indices), ("attn_sink", attn_sink),
                        ("extra_k_cache", extra_k_cache), ("topk_length", topk_length),
                        ("extra_indices_in_kvcache", extra_indices_in_kvcache),
                        ("extra_topk_length", extra_topk_length)):
        if value is not None:
            raise NotImplementedError(f"{name}: sparse decode is not supported; tilelang "
                                      f"implements FlashMLA's dense decode")
    qa = to_numpy(q, "q")
    cache = to_numpy(k_cache, "k_cache")
    table = to_numpy(block_table, "block_table")
    seqlens = to_numpy(cache_seqlens, "cache_seqlens")
    shapes = _check(qa, cache, table, seqlens, head_dim_v, is_fp8_kvcache)
    b, s_q, h_q, h_kv = shapes
    if s_q == 1:
        causal = False                      # one token sees every key either way
    meta, splits = _plan(tile_scheduler_metadata, num_splits, seqlens, shapes, cache,
                         causal, is_fp8_kvcache)
    scale = D_QK ** -0.5 if softmax_scale is None else _scale(softmax_scale)
    out, lse = _launch(qa, cache, table, seqlens, meta, splits, shapes, scale, causal,
                       is_fp8_kvcache)
    return like(q, out), like(q, lse)


# ----------------------------------------------------------------------------- checks

def _fail(kind, name: str, message: str):
    return kind(f"{name}: {message}")


def _scale(value) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise _fail(TypeError, "softmax_scale", f"expected a number (or None for "
                    f"{D_QK} ** -0.5), got {value!r}")
    return float(value)


def _check(q, cache, table, seqlens, head_dim_v, fp8: bool):
    if q.ndim != 4:
        raise _fail(ValueError, "q", f"expected (batch, s_q, h_q, 576), got shape {q.shape}")
    b, s_q, h_q, d = q.shape
    if d != D_QK:
        raise _fail(ValueError, "q", f"head dim must be {D_QK} (512 nope + 64 rope), got {d}")
    qdt = q.dtype.name
    if qdt not in (("bfloat16",) if fp8 else ("bfloat16", "float16")):
        raise _fail(TypeError, "q", f"dtype must be {'bfloat16 with an FP8 cache' if fp8 else 'bfloat16 or float16'}, got {qdt}")
    if head_dim_v != D_V:
        raise _fail(ValueError, "head_dim_v", f"must be {D_V}, got {head_dim_v!r}")
    width = FP8_BYTES if fp8 else D_QK
    if cache.ndim != 4 or cache.shape[1] != BLOCK or cache.shape[3] != width:
        raise _fail(ValueError, "k_cache", f"expected (num_blocks, {BLOCK}, h_kv, {width})"
                    f"{' (is_fp8_kvcache)' if fp8 else ''}, got shape {cache.shape}"
                    + (" (block size must be 64)" if cache.ndim == 4 and
                       cache.shape[1] != BLOCK else ""))
    want = ("float8_e4m3fn", "uint8") if fp8 else (qdt,)
    if cache.dtype.name not in want:
        raise _fail(TypeError, "k_cache", f"dtype must be {' or '.join(want)}"
                    f"{'' if fp8 else ' (that of q)'}, got {cache.dtype.name}")
    h_kv = cache.shape[2]
    if h_kv < 1 or h_q % h_kv:
        raise _fail(ValueError, "k_cache", f"h_q = {h_q} is not a multiple of h_kv = {h_kv}")
    if table.dtype != np.int32 or table.ndim != 2 or table.shape[0] != b:
        raise _fail(TypeError if table.dtype != np.int32 else ValueError, "block_table",
                    f"expected int32 (batch={b}, max_blocks), got {table.dtype.name} "
                    f"{table.shape}")
    if seqlens.dtype != np.int32 or seqlens.shape != (b,):
        raise _fail(TypeError if seqlens.dtype != np.int32 else ValueError, "cache_seqlens",
                    f"expected int32 (batch={b},), got {seqlens.dtype.name} {seqlens.shape}")
    _check_lengths(table, seqlens, cache.shape[0])
    return b, s_q, h_q, h_kv


def _check_lengths(table, seqlens, num_blocks: int) -> None:
    if (seqlens < 0).any():
        i = int(np.argmax(seqlens < 0))
        raise _fail(ValueError, "cache_seqlens", f"entry {i} is negative ({seqlens[i]})")
    cover = table.shape[1] * BLOCK
    if (seqlens > cover).any():
        i = int(np.argmax(seqlens > cover))
        raise _fail(ValueError, "cache_seqlens", f"entry {i} is {seqlens[i]} tokens but "
                    f"block_table row {i} covers {cover} ({table.shape[1]} blocks of {BLOCK})")
    used = np.arange(table.shape[1])[None, :] < -(-seqlens[:, None] // BLOCK)
    bad = used & ((table < 0) | (table >= num_blocks))
    if bad.any():
        i, j = map(int, np.argwhere(bad)[0])
        raise _fail(ValueError, "block_table", f"entry [{i}, {j}] = {table[i, j]} is in use "
                    f"(cache_seqlens[{i}] = {seqlens[i]}) but the cache has {num_blocks} "
                    f"blocks")


# ----------------------------------------------------------------------------- schedule

def num_parts(b: int, s_q: int, h_q: int, h_kv: int, block_h: int, cores: int) -> int:
    """FlashMLA's rule: the cores over the head blocks a part needs, at least 1."""
    return max(cores // h_kv // math.ceil(s_q * (h_q // h_kv) / block_h), 1)


def _plan(meta, splits, seqlens, shapes, cache, causal, fp8):
    b, s_q, h_q, h_kv = shapes
    if isinstance(meta, FlashMLASchedMeta):
        config = FlashMLASchedMeta.Config(b, s_q, h_q, cache.shape[1], h_kv, bool(causal),
                                          bool(fp8))
        if not meta.have_initialized:
            from . import kernels
            parts = num_parts(b, s_q, h_q, h_kv, kernels.block_h(s_q * h_q // h_kv),
                              kernels.cores())
            meta.tile_scheduler_metadata, meta.num_splits = schedule(seqlens, parts)
            meta.config, meta.have_initialized = config, True
            meta.cache_seqlens = seqlens.copy()
        elif meta.config != config:
            diff = [f.name for f in dataclasses.fields(config)
                    if getattr(config, f.name) != getattr(meta.config, f.name)]
            raise _fail(ValueError, "tile_scheduler_metadata", "made for other arguments ("
                        + ", ".join(f"{n} was {getattr(meta.config, n)}, now "
                                    f"{getattr(config, n)}" for n in diff)
                        + "); call get_mla_metadata again")
        elif meta.cache_seqlens is not None and not np.array_equal(meta.cache_seqlens,
                                                                   seqlens):
            # the plan covers the blocks of those lengths only: reused, it would skip some
            i = int(np.argmax(meta.cache_seqlens != seqlens))
            raise _fail(ValueError, "tile_scheduler_metadata", f"made for other "
                        f"cache_seqlens (entry {i} was {meta.cache_seqlens[i]}, now "
                        f"{seqlens[i]}); call get_mla_metadata again for new lengths")
        if splits is not None:
            raise _fail(ValueError, "num_splits", "must be None with the metadata object of "
                        "get_mla_metadata")
        return meta.tile_scheduler_metadata, meta.num_splits
    if meta is None or splits is None:
        raise _fail(TypeError, "tile_scheduler_metadata", "pass the object of "
                    "get_mla_metadata (or FlashMLA's older pair of metadata and num_splits "
                    "arrays)")
    meta = to_numpy(meta, "tile_scheduler_metadata")
    splits = to_numpy(splits, "num_splits")
    if meta.dtype != np.int32 or meta.ndim != 2 or meta.shape[1] != 8:
        raise _fail(ValueError, "tile_scheduler_metadata", f"expected int32 (parts, 8), got "
                    f"{meta.dtype.name} {meta.shape}")
    if splits.dtype != np.int32 or splits.shape != (b + 1,):
        raise _fail(ValueError, "num_splits", f"expected int32 (batch + 1 = {b + 1},), got "
                    f"{splits.dtype.name} {splits.shape}")
    return np.ascontiguousarray(meta), np.ascontiguousarray(splits)


# ----------------------------------------------------------------------------- launch

def _launch(q, cache, table, seqlens, meta, splits, shapes, scale, causal, fp8):
    from . import kernels
    b, s_q, h_q, h_kv = shapes
    hpk = h_q // h_kv
    rows = s_q * hpk
    # (b, s_q, h_kv, hpk, d) -> (b, h_kv, s_q * hpk, d): the rows of one KV head together
    qv = np.ascontiguousarray(q.reshape(b, s_q, h_kv, hpk, D_QK).transpose(0, 2, 1, 3, 4)
                              .reshape(b, h_kv, rows, D_QK))
    views, stride = kernels.cache_rows(cache, fp8)
    out = np.empty((b, h_kv, rows, D_V), q.dtype)
    lse = np.empty((b, h_kv, rows), np.float32)
    kernel = kernels.decode_kernel(q.dtype.name, rows, fp8, causal)
    kernel(qv, *views, np.ascontiguousarray(table), np.ascontiguousarray(seqlens), meta,
           splits, out, lse, scale * LOG2E, s_q, hpk, stride)
    out = out.reshape(b, h_kv, s_q, hpk, D_V).transpose(0, 2, 1, 3, 4).reshape(b, s_q, h_q, D_V)
    lse = lse.reshape(b, h_kv, s_q, hpk).transpose(0, 1, 3, 2).reshape(b, h_q, s_q)
    return np.ascontiguousarray(out), np.ascontiguousarray(lse)


__all__ = ["get_mla_metadata", "flash_mla_with_kvcache", "FlashMLASchedMeta", "num_parts"]
