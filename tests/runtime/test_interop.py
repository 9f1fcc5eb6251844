"""runtime/interop.py: numpy, DLPack producers and torch CPU tensors in; results back as
the caller's kind, sharing memory (torch skipped when absent)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tilelang.runtime.interop import as_torch, is_torch, like, to_numpy


class _DLPackOnly:
    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_numpy_dlpack_and_array_likes():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert to_numpy(a, "a") is a
    got = to_numpy(_DLPackOnly(a), "a")
    assert np.shares_memory(got, a) and np.array_equal(got, a)
    assert to_numpy([[1, 2]], "a").shape == (1, 2)
    with pytest.raises(TypeError, match="w: expected a numpy array, a torch CPU tensor"):
        to_numpy(object(), "w")
    assert like(a, a) is a and like(a, None) is None


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float32",
                                   "int64", "bool"])
def test_torch_tensors_share_memory_both_ways(dtype):
    torch = pytest.importorskip("torch")
    a = np.arange(12).reshape(3, 4).astype(getattr(ml_dtypes, dtype, dtype))
    t = as_torch(a)
    assert is_torch(t) and str(t.dtype) == f"torch.{dtype}"
    back = to_numpy(t, "t")
    assert back.dtype == a.dtype and np.shares_memory(back, a)
    assert np.array_equal(back.view(np.uint8), a.view(np.uint8))
    assert is_torch(like(t, a)) and not is_torch(like(a, a))
    grad = torch.ones(3, requires_grad=True)
    assert to_numpy(grad, "g").tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="g: a torch tensor on meta"):
        to_numpy(torch.empty(3, device="meta"), "g")
