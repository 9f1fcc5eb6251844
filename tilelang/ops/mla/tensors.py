"""Tensors in and out of the MLA API: numpy arrays, torch CPU tensors (torch is optional:
never imported unless a torch tensor is passed) and any DLPack producer. Results come
back as the kind of `q`."""
from __future__ import annotations

import numpy as np


def _is_torch(x) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def to_numpy(x, name: str):
    """A numpy view (or copy) of `x`; bf16 / fp8 torch tensors keep their bits."""
    if isinstance(x, np.ndarray):
        return x
    if _is_torch(x):
        return _torch_to_numpy(x, name)
    if hasattr(x, "__dlpack__"):
        try:
            return np.from_dlpack(x)
        except (TypeError, BufferError, RuntimeError) as e:
            raise TypeError(f"{name}: cannot read this DLPack tensor as a numpy array "
                            f"({e}); pass a numpy array or a CPU torch tensor") from None
    if hasattr(x, "__array_interface__") or hasattr(x, "__array__"):
        return np.asarray(x)
    raise TypeError(f"{name}: expected a numpy array, a torch CPU tensor or a DLPack "
                    f"tensor, got {type(x).__name__}")


def _torch_to_numpy(t, name: str):
    import ml_dtypes
    import torch
    if t.device.type != "cpu":
        raise ValueError(f"{name}: a torch tensor on {t.device} — tilelang runs on the CPU "
                         f"(move it with .cpu())")
    t = t.detach()
    bits = {torch.bfloat16: (torch.int16, ml_dtypes.bfloat16)}
    if hasattr(torch, "float8_e4m3fn"):
        bits[torch.float8_e4m3fn] = (torch.uint8, ml_dtypes.float8_e4m3fn)
    if t.dtype in bits:
        raw, dt = bits[t.dtype]
        return t.view(raw).numpy().view(dt)
    return t.numpy()


def like(q, array: np.ndarray):
    """`array` as the kind of tensor `q` is."""
    if isinstance(q, np.ndarray):
        return array
    if _is_torch(q):
        import torch
        if array.dtype.name == "bfloat16":
            return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(np.ascontiguousarray(array))
    make = getattr(type(q), "from_dlpack", None)
    if callable(make):
        try:
            return make(array)
        except (TypeError, BufferError, RuntimeError):
            pass
    return array


__all__ = ["to_numpy", "like"]
