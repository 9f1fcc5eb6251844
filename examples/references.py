"""numpy references for the example kernels (float64 arithmetic).

Shared by the tests (tests/examples/), the demo (examples/demo.py) and the benchmarks.
Each function takes the kernel's inputs as numpy arrays of any dtype and returns the
expected outputs in float64; callers cast to the kernel's output dtype for comparison.
"""
from __future__ import annotations

import numpy as np

SQRT_2_OVER_PI = 0.7978845608028654


def _f64(*arrays):
    return [np.asarray(a, dtype=np.float64) for a in arrays]


def vector_add(a, b):
    a, b = _f64(a, b)
    return a + b


def bias_gelu(x, bias):
    x, bias = _f64(x, bias)
    y = x + bias[None, :]
    return 0.5 * y * (1.0 + np.tanh(SQRT_2_OVER_PI * (y + 0.044715 * y ** 3)))


def softmax(x):
    (x,) = _f64(x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def rmsnorm(x, w, eps=1e-6):
    x, w = _f64(x, w)
    inv_rms = 1.0 / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)
    return x * inv_rms * w[None, :]


def row_sum(x):
    (x,) = _f64(x)
    return x.sum(axis=1)


def col_sum(x):
    (x,) = _f64(x)
    return x.sum(axis=0)


def transpose(a):
    (a,) = _f64(a)
    return np.ascontiguousarray(a.T)


def gemm(a, b):
    a, b = _f64(a, b)
    return a @ b


def gemm_bias_relu(a, b, bias):
    a, b, bias = _f64(a, b, bias)
    return np.maximum(a @ b + bias, 0.0)


def flash_attention(q, k, v, causal=False):
    """softmax(q k^T / sqrt(d) [causal mask, query i sees keys 0..i]) v over the last two
    dims of (batch, heads, seq, dim) arrays."""
    q, k, v = _f64(q, k, v)
    d = q.shape[-1]
    s = np.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(d)
    if causal:
        sq, sk = s.shape[-2], s.shape[-1]
        allowed = np.arange(sk)[None, :] <= np.arange(sq)[:, None]
        s = np.where(allowed, s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("bhqk,bhkd->bhqd", p, v)


# ----------------------------------------------------------------------------- work counts

def gemm_flops(m, n, k):
    return 2.0 * m * n * k


def attention_flops(batch, heads, seq_q, seq_kv, dim, causal=False):
    """2 * dim flops for each (query, key) score and 2 * dim for its share of P @ V, over
    the pairs the mask lets through (query i sees keys 0..i when causal)."""
    if causal:
        pairs = sum(min(i + 1, seq_kv) for i in range(seq_q))
    else:
        pairs = seq_q * seq_kv
    return 4.0 * batch * heads * pairs * dim
