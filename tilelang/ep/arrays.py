"""Arguments as numpy arrays (torch CPU tensors through DLPack), results back in the
caller's kind, and the argument checks of the EP API (ValueError naming the argument)."""
from __future__ import annotations

import numpy as np

from .. import dtypes


def to_numpy(a, name: str):
    """(numpy view of `a`, whether it came from torch)."""
    if isinstance(a, np.ndarray):
        return a, False
    if type(a).__module__.startswith("torch"):
        import torch
        if a.dtype == torch.bfloat16:          # numpy has no bfloat16: view the bits
            import ml_dtypes
            return a.contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16), True
        if a.dtype == getattr(torch, "float8_e4m3fn", None):
            import ml_dtypes
            return a.contiguous().view(torch.uint8).numpy().view(ml_dtypes.float8_e4m3fn), True
        return a.contiguous().numpy(), True
    if hasattr(a, "__dlpack__"):
        return np.from_dlpack(a), False
    try:
        return np.asarray(a), False
    except Exception:
        raise TypeError(f"{name} must be an array (numpy, or a torch CPU tensor), "
                        f"got {type(a).__name__}") from None


def from_numpy(a, as_torch: bool):
    if a is None or not as_torch:
        return a
    import torch
    name = dtypes.from_numpy(a.dtype)
    if name == "bfloat16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    if name == "float8_e4m3fn":
        return torch.from_numpy(a.view(np.uint8)).view(torch.float8_e4m3fn)
    return torch.from_numpy(a)


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


__all__ = ["to_numpy", "from_numpy", "check"]
