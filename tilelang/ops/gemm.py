"""`tilelang.ops.gemm`: C = op(A) @ op(B) through the shipped `gemm.tl` kernel.

The inputs are brought to the storage dtype `precision` names (fp32, fp16, bf16; fp8 goes
through the block-scaled kernel of `fp8.py`), the kernel converts them to float32 while it
copies tiles into its shared buffers (the packing step) and accumulates in float32; bf16
keeps its pairs for the CPU's bf16 dot product where the host's measured peaks say it
pays (`targets/cpu/machine.py`, `with_measured`), still accumulating in float32.
Block sizes come from the CPU machine description unless the caller gives `tile_size`
(BLOCK_M = BLOCK_N) or `block=(BLOCK_M, BLOCK_N, BLOCK_K)`.
"""
from __future__ import annotations

import numpy as np

from . import _build
from .blocks import choose_blocks, launch_threads

_PRECISIONS = {"fp32": "float32", "float32": "float32", "fp16": "float16",
               "float16": "float16", "bf16": "bfloat16", "bfloat16": "bfloat16"}
_OUT_DTYPES = ("float32", "float16", "bfloat16")


def gemm(A, B, precision: str = "fp32", tile_size: int | None = None, *, block=None,
         transpose_a: bool = False, transpose_b: bool = False, out=None,
         out_dtype: str = "float32", num_threads: int | None = None):
    """C = op(A) @ op(B), op transposing when asked; fp32 accumulation.

    `precision` is the dtype the operands are stored in for the multiply ("fp32",
    "fp16", "bf16", "fp8"); inputs of another dtype are converted to it first. `out`
    receives the result (shape (M, N), dtype `out_dtype`)."""
    if precision in ("fp8", "float8", "float8_e4m3fn", "e4m3fn"):
        from .fp8 import fp8_gemm_from_float
        return fp8_gemm_from_float(A, B, transpose_a=transpose_a, transpose_b=transpose_b,
                                   out=out, out_dtype=out_dtype, num_threads=num_threads)
    in_dtype = _PRECISIONS.get(precision)
    if in_dtype is None:
        raise ValueError(f"gemm: unknown precision {precision!r}; "
                         f"use one of fp32, fp16, bf16, fp8")
    if out_dtype not in _OUT_DTYPES:
        raise ValueError(f"gemm: out_dtype must be one of {', '.join(_OUT_DTYPES)}, "
                         f"got {out_dtype!r}")
    a = operand(A, "A", in_dtype, transpose_a)
    b = operand(B, "B", in_dtype, transpose_b)
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"gemm: inner dimensions differ: op(A) is {a.shape}, "
                         f"op(B) is {b.shape}")
    m, n = a.shape[0], b.shape[1]
    threads = launch_threads(m, n, a.shape[1], num_threads)
    bm, bn, bk = choose_blocks(m, n, a.shape[1], tile_size, block, threads,
                               k_step=2 if in_dtype == "bfloat16" else 1)
    k = _build.kernel("gemm.tl", BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                      in_dtype=in_dtype, out_dtype=out_dtype)
    c = output(out, (m, n), out_dtype)
    k(a, b, c, num_threads=threads)
    return c


def operand(x, name: str, dtype: str, transpose: bool) -> np.ndarray:
    """`x` as a C-contiguous 2-D array of `dtype`, transposed when asked."""
    from ..dtypes import numpy_dtype
    arr = np.asarray(x)
    if arr.ndim != 2:
        raise ValueError(f"gemm: {name} must be a matrix (2-D), got shape {arr.shape}")
    if transpose:
        arr = arr.T
    want = numpy_dtype(dtype)
    if arr.dtype != want:
        arr = arr.astype(want)
    return np.ascontiguousarray(arr)


def output(out, shape, dtype: str) -> np.ndarray:
    from ..dtypes import numpy_dtype
    want = numpy_dtype(dtype)
    if out is None:
        return np.empty(shape, dtype=want)
    if not isinstance(out, np.ndarray) or out.shape != tuple(shape) or out.dtype != want \
            or not out.flags.c_contiguous:
        got = (getattr(out, "shape", None), getattr(out, "dtype", None))
        raise ValueError(f"gemm: out must be a C-contiguous {dtype} array of shape "
                         f"{tuple(shape)}, got shape {got[0]} dtype {got[1]}")
    return out
