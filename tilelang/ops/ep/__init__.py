"""The expert-parallel collectives as tile-language kernels (`layout.tl`, `dispatch.tl`,
`combine.tl`, `fp8_cast.tl` beside this file), compiled once per process and dtype
through the disk cache. `tilelang.ep.Buffer` sequences them; this module only compiles and hands out."""
from __future__ import annotations

import os
import threading

_HERE = os.path.dirname(os.path.abspath(__file__))
_LOCK = threading.Lock()
_LIBS: dict = {}


def library(name: str, **defines):
    """The compiled kernels of `<name>.tl` (a Library: kernels by name)."""
    key = (name, tuple(sorted(defines.items())))
    with _LOCK:
        lib = _LIBS.get(key)
        if lib is None:
            import tilelang
            lib = tilelang.compile(os.path.join(_HERE, f"{name}.tl"), defines=dict(defines))
            if hasattr(lib, "library"):            # a file of one kernel: its library
                lib = lib.library()
            _LIBS[key] = lib
    return lib


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
