"""TileLang's `tilelang.quantize` helpers that quantized-GEMM programs call from Python.

`get_mxfp_intrin_group(...)` names the fp4 -> bf16 decoder that TileLang's fast
dequantization path calls per thread (`T.import_source` + `T.call_extern`, thread-level
code, which this compiler does not have) and returns its C source. Here the source is a
portable C implementation (mxfp.py), usable on the host; kernels dequantize with tile
code instead (docs/compat.md, "Dequantization").
"""
from .mxfp import get_mxfp_intrin_group

__all__ = ["get_mxfp_intrin_group"]
