"""The kernel library: `.tl` kernels shipped beside this file, behind thin wrappers.

    from tilelang.ops import gemm
    C = gemm(A, B, precision="fp16", tile_size=256)

Compiler parts load on first call, so importing this module stays light.
"""
from .fp8 import (dequantize_per_block, dequantize_per_token, fp8_gemm, quantize_per_block,
                  quantize_per_token)
from .gemm import gemm

__all__ = ["gemm", "fp8_gemm", "quantize_per_token", "quantize_per_block",
           "dequantize_per_token", "dequantize_per_block"]
