"""The compiled MLA kernels and the views of the cache they read.

`mla_decode.tl` is compiled once per (dtype, rows per block, causal, fp8) in a process
(and once per machine through the disk cache). On the CPU the query rows of a KV head
are the M dimension of both T.gemms, so a block takes all of them up to 128 (one
register-tiled GEMM pair per cache block, no padding rows for h_q = 16 / 64 / 128).
tcsim runs `mla_decode_ws` for a bf16 / fp16 cache (the softmax overlapped with the
tensor core's products); its FP8 cache runs `mla_decode_fp8`'s schedule.
"""
from __future__ import annotations

import os
import threading

import numpy as np

MAX_BLOCK_H = 128
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mla_decode.tl")
_LOCK = threading.Lock()
_KERNELS: dict = {}


def block_h(rows: int) -> int:
    """Query rows per block of the split grid."""
    return max(1, min(rows, MAX_BLOCK_H))


def cores() -> int:
    """The threads a launch uses (TILELANG_NUM_THREADS, else the CPUs we may run on)."""
    from ...runtime.launch import default_num_threads
    return default_num_threads()


def decode_kernel(dtype: str, rows: int, fp8: bool, causal: bool, target: str = "cpu",
                  rows_per_block: int | None = None):
    """The compiled `mla_decode` (`mla_decode_ws` on tcsim, or `mla_decode_fp8`)
    kernel for `rows` query rows per KV head (`rows_per_block` overrides the rows a
    block of the split grid takes)."""
    bh = rows_per_block or block_h(rows)
    defines = {"dtype": dtype, "BLOCK_H": bh, "CAUSAL": bool(causal)}
    name = "mla_decode_fp8" if fp8 else "mla_decode"
    if not target.startswith("cpu"):
        defines["TILE_DTYPE"] = "bfloat16"      # the tensor core's operands
        if not fp8:
            name = "mla_decode_ws"              # its schedule: softmax under the products
    elif bh == 1 and not fp8:
        defines["GEMV"] = True      # one row: matrix-vector products, no register tile
    key = (name, target, tuple(sorted(defines.items())))
    with _LOCK:
        k = _KERNELS.get(key)
        if k is None:
            import tilelang
            k = tilelang.compile(SOURCE, kernel=name, target=target, defines=defines)
            if target == "cpu":
                k.compile()
            _KERNELS[key] = k
    return k


def cache_rows(cache: np.ndarray, fp8: bool):
    """(the kernel's cache tensors, page_stride): the (num_blocks, 64, h_kv, W) cache as
    rows (ROWS, h_kv, W) — block k at row k * page_stride — without a copy when its
    blocks are evenly strided (a padded block stride is a page_stride above 64);
    with fp8, the 656-byte rows as e4m3 values, fp32 scales and bf16 rope."""
    nb, page, h_kv, width = cache.shape
    isz = cache.dtype.itemsize
    s0, s1, s2, s3 = cache.strides
    row = h_kv * width * isz
    if not (s3 == isz and s2 == width * isz and s1 == row and s0 % row == 0
            and s0 >= page * row):
        cache = np.ascontiguousarray(cache)
        s0 = cache.strides[0]
    stride = s0 // row
    rows = (nb - 1) * stride + page
    view = np.lib.stride_tricks.as_strided(cache, (rows, h_kv, width),
                                           (row, width * isz, isz), writeable=False)
    if not fp8:
        return (view,), stride
    import ml_dtypes
    raw = view.view(np.uint8)
    return (raw.view(ml_dtypes.float8_e4m3fn), raw.view(np.float32),
            raw.view(ml_dtypes.bfloat16)), stride


__all__ = ["decode_kernel", "cache_rows", "block_h", "cores", "SOURCE"]
