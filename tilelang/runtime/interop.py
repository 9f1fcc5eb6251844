"""Tensors of other libraries in and out of the Python APIs (`tilelang.ep`,
`tilelang.ops.mla`): numpy arrays pass through; torch CPU tensors are viewed without a
copy (bfloat16 and float8 through their bits, which numpy cannot name; torch is imported
only when a torch tensor is passed); any other DLPack producer goes through
`np.from_dlpack`. Results go back as the kind of tensor the caller passed."""
from __future__ import annotations

import numpy as np


def is_torch(x) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def to_numpy(x, name: str) -> np.ndarray:
    """A numpy view (or, for array-likes such as nested lists, a conversion) of `x`; a
    TypeError or ValueError naming the argument `name` when `x` is not a host tensor."""
    if isinstance(x, np.ndarray):
        return x
    if is_torch(x):
        return _torch_to_numpy(x, name)
    if hasattr(x, "__dlpack__"):
        try:
            return np.from_dlpack(x)
        except (TypeError, BufferError, RuntimeError) as e:
            raise TypeError(f"{name}: cannot read this DLPack tensor as a numpy array "
                            f"({e}); pass a numpy array or a CPU torch tensor") from None
    try:                           # array-likes: nested lists, scalars, __array__
        array = np.asarray(x)
    except (TypeError, ValueError):
        array = None
    if array is not None and array.dtype != object:
        return array
    raise TypeError(f"{name}: expected a numpy array, a torch CPU tensor or a DLPack "
                    f"tensor, got {type(x).__name__}")


def _bit_views() -> dict:
    """torch dtype -> (torch and numpy dtypes of the same bits, the ml_dtypes dtype)."""
    import ml_dtypes
    import torch
    views = {torch.bfloat16: (torch.int16, np.int16, ml_dtypes.bfloat16)}
    for name in ("float8_e4m3fn", "float8_e5m2"):
        if hasattr(torch, name):
            views[getattr(torch, name)] = (torch.uint8, np.uint8, getattr(ml_dtypes, name))
    return views


def _torch_to_numpy(t, name: str) -> np.ndarray:
    if t.device.type != "cpu":
        raise ValueError(f"{name}: a torch tensor on {t.device} — tilelang runs on the CPU "
                         f"(move it with .cpu())")
    t = t.detach()                 # the values; autograd does not reach into kernels
    views = _bit_views()
    if t.dtype in views:
        raw, _, dt = views[t.dtype]
        return t.view(raw).numpy().view(dt)
    return t.numpy()


def as_torch(array: np.ndarray):
    """A torch tensor sharing `array`'s memory (bfloat16 / float8 by their bits)."""
    import torch
    for tdt, (_, raw, dt) in _bit_views().items():
        if array.dtype == dt:
            return torch.from_numpy(array.view(raw)).view(tdt)
    return torch.from_numpy(array)


def like(template, array: np.ndarray):
    """`array` as the kind of tensor `template` is (numpy, torch, or the DLPack
    producer's own type when it can import one)."""
    if array is None or isinstance(template, np.ndarray):
        return array
    if is_torch(template):
        return as_torch(np.ascontiguousarray(array))
    make = getattr(type(template), "from_dlpack", None)
    if callable(make):
        try:
            return make(array)
        except (TypeError, BufferError, RuntimeError):
            pass
    return array


__all__ = ["is_torch", "to_numpy", "as_torch", "like"]
