"""The float64 numpy reference of MLA decode with a paged cache (FlashMLA's semantics).

Query row h of token s of request b attends over the first cache_seqlens[b] latent rows
of its request (with `causal`, token s of s_q sees all but the last s_q - 1 - s of them);
K is the whole 576-wide row, V its first head_dim_v columns. A row with no key gets
output 0 and lse +inf. lse is the natural-log log-sum-exp of the scaled scores.
"""
from __future__ import annotations

import numpy as np


def gather_cache(k_cache, block_table, b: int, n: int) -> np.ndarray:
    """The first n rows of request b's paged cache, (n, h_kv, d)."""
    page = k_cache.shape[1]
    used = -(-n // page)
    rows = k_cache[np.asarray(block_table[b, :used], np.int64)]
    return rows.reshape(-1, *k_cache.shape[2:])[:n]


def mla_decode_reference(q, k_cache, block_table, cache_seqlens, head_dim_v: int,
                         softmax_scale: float | None = None, causal: bool = False):
    """(out (b, s_q, h_q, dv), lse (b, h_q, s_q)) in float64."""
    q = np.asarray(q).astype(np.float64)
    b, s_q, h_q, d = q.shape
    h_kv = k_cache.shape[2]
    scale = d ** -0.5 if softmax_scale is None else softmax_scale
    out = np.zeros((b, s_q, h_q, head_dim_v))
    lse = np.full((b, h_q, s_q), np.inf)
    for i in range(b):
        n = int(cache_seqlens[i])
        kv = gather_cache(k_cache, block_table, i, n).astype(np.float64)   # (n, h_kv, d)
        kv = np.repeat(kv, h_q // h_kv, axis=1)                            # (n, h_q, d)
        scores = np.einsum("shd,nhd->hsn", q[i], kv) * scale               # (h_q, s_q, n)
        if causal:
            keep = np.arange(n)[None, :] < (n - (s_q - 1 - np.arange(s_q)))[:, None]
            scores = np.where(keep[None], scores, -np.inf)
        top = scores.max(axis=-1, initial=-np.inf)
        safe = np.where(np.isfinite(top), top, 0.0)
        weights = np.exp(scores - safe[..., None])
        total = weights.sum(-1)
        seen = total > 0
        row_lse = np.where(seen, np.log(np.where(seen, total, 1.0)) + safe, np.inf)
        probs = weights / np.where(seen, total, 1.0)[..., None]
        o = np.einsum("hsn,nhd->shd", probs, kv[..., :head_dim_v])
        out[i] = np.where(seen.T[..., None], o, 0.0)
        lse[i] = row_lse
    return out, lse


def cosine_diff(x, y) -> float:
    """FlashMLA's similarity check: 1 - 2 sum(xy) / sum(x^2 + y^2) in float64."""
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    denom = (x * x + y * y).sum()
    return 0.0 if denom == 0 else float(1 - 2 * (x * y).sum() / denom)


__all__ = ["mla_decode_reference", "gather_cache", "cosine_diff"]
