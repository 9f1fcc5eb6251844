"""DeepEP's test helpers, on numpy: the similarity measure and per-token FP8 casting."""
from __future__ import annotations

import numpy as np

FP8_MAX = 448.0
GROUP = 128


def calc_diff(x, y) -> float:
    """1 - 2*sum(xy) / sum(x^2 + y^2) on x+1, y+1 in float64 (0 when equal)."""
    x = np.asarray(x, np.float64) + 1
    y = np.asarray(y, np.float64) + 1
    return float(1 - 2 * (x * y).sum() / (x * x + y * y).sum())


def per_token_cast_to_fp8(x):
    """(x as float8_e4m3fn, one float32 scale per row and 128 columns)."""
    import ml_dtypes
    x = np.asarray(x, np.float32)
    m, n = x.shape
    padded = -(-n // GROUP) * GROUP
    xp = np.zeros((m, padded), np.float32)
    xp[:, :n] = x
    groups = xp.reshape(m, -1, GROUP)
    amax = np.maximum(np.abs(groups).max(axis=2), 1e-4)
    q = (groups * (FP8_MAX / amax)[:, :, None]).reshape(m, padded)[:, :n]
    return np.ascontiguousarray(q.astype(ml_dtypes.float8_e4m3fn)), \
        (amax / FP8_MAX).astype(np.float32)


def per_token_cast_back(x_fp8, scales):
    """The float32 values an fp8 pair stands for."""
    x = np.asarray(x_fp8).astype(np.float32)
    m, n = x.shape
    s = np.repeat(np.asarray(scales, np.float32), GROUP, axis=1)[:, :n]
    return x * s


__all__ = ["calc_diff", "per_token_cast_to_fp8", "per_token_cast_back"]
