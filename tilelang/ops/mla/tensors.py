"""Tensors in and out of the MLA API: numpy arrays, torch CPU tensors and any DLPack
producer (runtime/interop.py). Results come back as the kind of `q`."""
from __future__ import annotations

from ...runtime.interop import like, to_numpy

__all__ = ["to_numpy", "like"]
