"""Compiling and caching the library's shipped `.tl` kernels.

Each (file, defines) pair compiles once per process (and once per machine through the
compiler's disk cache); the wrappers ask for kernels by the constants they need.
"""
from __future__ import annotations

import os
import threading

_HERE = os.path.dirname(os.path.abspath(__file__))
_LOCK = threading.Lock()
_COMPILED: dict = {}


def compiled_once(path: str, defines: dict, finish):
    """`finish(tilelang.compile(path, defines))`, computed on the first call for this
    (path, defines) in the process, the same object afterwards."""
    key = (path, tuple(sorted(defines.items())))
    with _LOCK:
        if key not in _COMPILED:
            import tilelang
            _COMPILED[key] = finish(tilelang.compile(path, defines=dict(defines)))
        return _COMPILED[key]


def _compiled_now(k):
    k.compile()
    return k


def kernel(filename: str, **defines):
    """The compiled kernel of `tilelang/ops/<filename>` with `defines` as -D constants."""
    return compiled_once(os.path.join(_HERE, filename), defines, _compiled_now)
