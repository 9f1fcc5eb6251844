"""The expert-parallel collectives as tile-language kernels (`layout.tl`, `dispatch.tl`,
`combine.tl`, `fp8_cast.tl` beside this file), compiled once per process and dtype
through the disk cache. `tilelang.ep.Buffer` sequences them; this module only compiles and hands out."""
from __future__ import annotations

import os

from .._build import compiled_once

_HERE = os.path.dirname(os.path.abspath(__file__))


def library(name: str, **defines):
    """The compiled kernels of `<name>.tl` (a Library: kernels by name)."""
    return compiled_once(os.path.join(_HERE, f"{name}.tl"), defines, _as_library)


def _as_library(lib):
    return lib.library() if hasattr(lib, "library") else lib    # a file of one kernel


def layout_kernels():
    return library("layout")


def dispatch_kernels():
    """dispatch.tl's kernels: token rows move as bytes, so one library serves every x
    dtype."""
    return library("dispatch")


def cast_kernels():
    """fp8_cast.tl: the per-token fp8 cast of the low-latency dispatch."""
    return library("fp8_cast")


def combine_kernels(x_dtype: str = "bfloat16"):
    return library("combine", x_dtype=x_dtype)


__all__ = ["library", "layout_kernels", "dispatch_kernels", "cast_kernels",
           "combine_kernels"]
