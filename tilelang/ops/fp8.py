"""FP8 (e4m3) GEMM with DeepGEMM's block scaling, and the helpers that quantise to it.

    qa, sa = quantize_per_token(a)        # (M, K) -> e4m3 (M, K), float32 (M, ceil(K/128))
    qb, sb = quantize_per_block(b)        # (K, N) -> e4m3 (K, N), float32 (ceil(K/128), ceil(N/128))
    c = fp8_gemm(qa, sa, qb, sb)          # ~ a @ b, float32 (or out_dtype="bfloat16")

A scale is the block's largest magnitude over e4m3's largest finite value (448), so every
quantised element is finite; an all-zero block gets scale 1.
"""
from __future__ import annotations

import numpy as np

from . import _build
from .blocks import choose_blocks, launch_threads
from .gemm import output

BLOCK = 128
E4M3_MAX = 448.0
_OUT_DTYPES = ("float32", "bfloat16")


def _e4m3():
    from ..dtypes import numpy_dtype
    return numpy_dtype("float8_e4m3fn")


def _blocks(n: int) -> int:
    return -(-n // BLOCK)


def _scales(amax: np.ndarray) -> np.ndarray:
    s = (amax / E4M3_MAX).astype(np.float32)
    return np.where(s > 0, s, np.float32(1.0)).astype(np.float32)


def quantize_per_token(x, block: int = BLOCK):
    """(M, K) floats -> (e4m3 values, float32 scales (M, ceil(K/block)))."""
    x = _matrix(x, "x")
    m, k = x.shape
    pad = np.zeros((m, _blocks(k) * block), np.float32)
    pad[:, :k] = x
    tiles = pad.reshape(m, -1, block)
    scales = _scales(np.abs(tiles).max(axis=2))
    q = (tiles / scales[:, :, None]).reshape(m, -1)[:, :k]
    return np.ascontiguousarray(q.astype(_e4m3())), scales


def quantize_per_block(x, block: int = BLOCK):
    """(K, N) floats -> (e4m3 values, float32 scales (ceil(K/block), ceil(N/block)))."""
    x = _matrix(x, "x")
    k, n = x.shape
    kb, nb = _blocks(k), _blocks(n)
    pad = np.zeros((kb * block, nb * block), np.float32)
    pad[:k, :n] = x
    tiles = pad.reshape(kb, block, nb, block)
    scales = _scales(np.abs(tiles).max(axis=(1, 3)))
    q = (tiles / scales[:, None, :, None]).reshape(kb * block, nb * block)[:k, :n]
    return np.ascontiguousarray(q.astype(_e4m3())), scales


def dequantize_per_token(q, scales, block: int = BLOCK) -> np.ndarray:
    q = np.asarray(q).astype(np.float64)
    return q * np.repeat(np.asarray(scales, np.float64), block, axis=1)[:, :q.shape[1]]


def dequantize_per_block(q, scales, block: int = BLOCK) -> np.ndarray:
    q = np.asarray(q).astype(np.float64)
    s = np.repeat(np.repeat(np.asarray(scales, np.float64), block, axis=0), block, axis=1)
    return q * s[:q.shape[0], :q.shape[1]]


def fp8_gemm(A_fp8, A_scales, B_fp8, B_scales, *, out=None, out_dtype: str = "float32",
             block_m: int | None = None, num_threads: int | None = None):
    """C = dequant(A) @ dequant(B) with per-K-block promotion in float32."""
    if out_dtype not in _OUT_DTYPES:
        raise ValueError(f"fp8_gemm: out_dtype must be float32 or bfloat16, got {out_dtype!r}")
    a, b = _fp8(A_fp8, "A_fp8"), _fp8(B_fp8, "B_fp8")
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ValueError(f"fp8_gemm: inner dimensions differ: A is {a.shape}, B is {b.shape}")
    sa = _scale_array(A_scales, (m, _blocks(k)), "A_scales")
    sb = _scale_array(B_scales, (_blocks(k), _blocks(n)), "B_scales")
    threads = launch_threads(m, n, k, num_threads)
    kern = _build.kernel("fp8_gemm.tl", BLOCK_M=block_m or _block_m(m, n, k, threads),
                         out_dtype=out_dtype)
    c = output(out, (m, n), out_dtype)
    kern(a, sa, b, sb, c, num_threads=threads)
    return c


def fp8_gemm_from_float(A, B, *, transpose_a=False, transpose_b=False, out=None,
                        out_dtype: str = "float32", num_threads=None):
    """`gemm(..., precision="fp8")`: quantise both operands, then fp8_gemm."""
    a, b = np.asarray(A), np.asarray(B)
    a, b = (a.T if transpose_a else a), (b.T if transpose_b else b)
    qa, sa = quantize_per_token(a)
    qb, sb = quantize_per_block(b)
    return fp8_gemm(qa, sa, qb, sb, out=out, out_dtype=out_dtype, num_threads=num_threads)


def _block_m(m: int, n: int, k: int, num_threads) -> int:
    """The library GEMM's BLOCK_M for this shape (BLOCK_N and BLOCK_K are the scale
    blocks here): a tall block converts each B tile for many rows."""
    return choose_blocks(m, n, k, num_threads=num_threads)[0]


def _matrix(x, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float32)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a matrix (2-D), got shape {arr.shape}")
    return arr


def _fp8(x, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 2 or arr.dtype != _e4m3():
        raise ValueError(f"fp8_gemm: {name} must be a 2-D float8_e4m3fn array (see "
                         f"quantize_per_token / quantize_per_block), got {arr.dtype} "
                         f"with shape {arr.shape}")
    return np.ascontiguousarray(arr)


def _scale_array(x, shape, name: str) -> np.ndarray:
    arr = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    if arr.shape != tuple(shape):
        raise ValueError(f"fp8_gemm: {name} must have shape {tuple(shape)}, got {arr.shape}")
    return arr
