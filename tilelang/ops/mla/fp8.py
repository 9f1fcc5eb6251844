"""FlashMLA's FP8 KV cache: 656 bytes per token and KV head — 512 float8_e4m3fn values,
4 float32 scales (one per 128 of them), 64 bfloat16 rope values (not quantised).

FlashMLA rounds each scale up to a power of two (amax / 448, then 2^ceil(log2)), which
`quantize_k_cache` does by default; the kernel takes any float32 scale.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

NOPE, ROPE, GROUP, GROUPS = 512, 64, 128, 4
BYTES = NOPE + 4 * GROUPS + 2 * ROPE            # 656
E4M3_MAX = 448.0


def quantize_k_cache(k_cache, power_of_two_scales: bool = True, padded: bool = False):
    """(num_blocks, 64, h_kv, 576) bf16 -> (num_blocks, 64, h_kv, 656) float8_e4m3fn in
    FlashMLA's layout. `padded=True` gives a view whose blocks are one token apart more
    than they need (a padded block stride, as FlashMLA's test builds it)."""
    from .tensors import to_numpy
    k = to_numpy(k_cache, "k_cache")
    if k.ndim != 4 or k.shape[-1] != NOPE + ROPE:
        raise ValueError(f"k_cache: expected (num_blocks, 64, h_kv, 576), got {k.shape}")
    nb, page, h_kv, _ = k.shape
    raw = np.zeros((nb, page + int(padded), h_kv, BYTES), np.uint8)[:, :page]
    x = k.astype(np.float32)
    groups = x[..., :NOPE].reshape(nb, page, h_kv, GROUPS, GROUP)
    scale = np.abs(groups).max(-1) / E4M3_MAX
    if power_of_two_scales:
        scale = np.power(2.0, np.ceil(np.log2(np.maximum(scale, 1e-4)))).astype(np.float32)
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    q = (groups / scale[..., None]).astype(ml_dtypes.float8_e4m3fn)
    raw[..., :NOPE] = q.reshape(nb, page, h_kv, NOPE).view(np.uint8)
    raw[..., NOPE:NOPE + 16] = scale.view(np.uint8).reshape(nb, page, h_kv, 16)
    rope = x[..., NOPE:].astype(ml_dtypes.bfloat16)
    raw[..., NOPE + 16:] = rope.view(np.uint8).reshape(nb, page, h_kv, 2 * ROPE)
    return raw.view(ml_dtypes.float8_e4m3fn)


def dequantize_k_cache(fp8_cache) -> np.ndarray:
    """The bf16 (num_blocks, 64, h_kv, 576) cache an FP8 cache stands for."""
    from .tensors import to_numpy
    raw = np.ascontiguousarray(to_numpy(fp8_cache, "k_cache")).view(np.uint8)
    nb, page, h_kv, _ = raw.shape
    values = raw[..., :NOPE].view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    scale = raw[..., NOPE:NOPE + 16].copy().view(np.float32)
    out = np.empty((nb, page, h_kv, NOPE + ROPE), np.float32)
    out[..., :NOPE] = (values.reshape(nb, page, h_kv, GROUPS, GROUP)
                       * scale[..., None]).reshape(nb, page, h_kv, NOPE)
    out[..., NOPE:] = raw[..., NOPE + 16:].copy().view(ml_dtypes.bfloat16).astype(np.float32)
    return out.astype(ml_dtypes.bfloat16)


__all__ = ["quantize_k_cache", "dequantize_k_cache"]
