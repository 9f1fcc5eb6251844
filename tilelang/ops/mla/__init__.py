"""MLA decode attention, FlashMLA-style: a paged latent KV cache, split-KV over the
cores with FlashMLA's tile scheduler, and the combine of the splits.

    from tilelang.ops.mla import get_mla_metadata, flash_mla_with_kvcache

See interface.py for the shapes; quantize_k_cache makes the FP8 cache.
"""
from .interface import FlashMLASchedMeta, flash_mla_with_kvcache, get_mla_metadata
from .fp8 import dequantize_k_cache, quantize_k_cache
from .reference import cosine_diff, mla_decode_reference

__all__ = ["get_mla_metadata", "flash_mla_with_kvcache", "FlashMLASchedMeta",
           "quantize_k_cache", "dequantize_k_cache", "mla_decode_reference", "cosine_diff"]
