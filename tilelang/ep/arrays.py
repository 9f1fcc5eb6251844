"""Arguments as numpy arrays (torch CPU tensors and DLPack producers, runtime/interop.py),
results back in the caller's kind, and the argument checks of the EP API (ValueError
naming the argument)."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..runtime import interop


def to_numpy(a, name: str):
    """(numpy view of `a`, whether it came from torch)."""
    return interop.to_numpy(a, name), interop.is_torch(a)


def from_numpy(a, as_torch: bool):
    """`a` as the caller's kind: a torch tensor sharing its memory when the inputs were."""
    if a is None or not as_torch:
        return a
    return interop.as_torch(a)


def check(a, name: str, ndim: int, kinds: tuple, rows: int | None = None,
          cols: int | None = None) -> np.ndarray:
    """`a` as a C-contiguous array of one of the tilelang dtypes `kinds`."""
    if a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {a.shape}")
    dt = dtypes.from_numpy(a.dtype)
    if dt not in kinds:
        raise ValueError(f"{name} must be {' or '.join(kinds)}, got {dt or a.dtype}")
    if rows is not None and a.shape[0] != rows:
        raise ValueError(f"{name} must have {rows} rows (one per token), got {a.shape[0]}")
    if cols is not None and a.shape[1] != cols:
        raise ValueError(f"{name} must have {cols} columns, got {a.shape[1]}")
    return np.ascontiguousarray(a)


def aligned_empty(shape: tuple, dtype, align: int = 64) -> np.ndarray:
    """An uninitialised array whose data starts on an `align`-byte boundary, as torch's
    CPU allocator hands them out (numpy's large arrays start 16 bytes past one): the
    combine kernel streams its rows past the caches only from a cache-line boundary."""
    dt = np.dtype(dtype)
    count = int(np.prod(shape))
    raw = np.empty(count * dt.itemsize + align, np.uint8)
    skip = -raw.ctypes.data % align
    return raw[skip:skip + count * dt.itemsize].view(dt).reshape(shape)


__all__ = ["to_numpy", "from_numpy", "check", "aligned_empty"]
