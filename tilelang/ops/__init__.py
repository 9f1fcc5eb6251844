"""The kernel library: `.tl` kernels shipped beside this file, behind thin wrappers.

    from tilelang.ops import gemm
    C = gemm(A, B, precision="fp16", tile_size=256)

Compiler parts load on first call, so importing this module stays light.
"""
from .gemm import gemm

__all__ = ["gemm"]
