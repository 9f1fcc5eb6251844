"""Compiling and caching the library's shipped `.tl` kernels.

Each (file, defines) pair compiles once per process (and once per machine through the
compiler's disk cache); the wrappers ask for kernels by the constants they need.
"""
from __future__ import annotations

import os
import threading

_HERE = os.path.dirname(os.path.abspath(__file__))
_LOCK = threading.Lock()
_KERNELS: dict = {}


def kernel(filename: str, **defines):
    """The compiled kernel of `tilelang/ops/<filename>` with `defines` as -D constants."""
    key = (filename, tuple(sorted(defines.items())))
    with _LOCK:
        k = _KERNELS.get(key)
        if k is None:
            import tilelang
            k = tilelang.compile(os.path.join(_HERE, filename), defines=dict(defines))
            k.compile()
            _KERNELS[key] = k
    return k
