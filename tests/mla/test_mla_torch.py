"""FlashMLA's API on torch CPU tensors (skipped without torch): bf16 / fp16 / fp8 caches
as torch tensors, results back as torch tensors, autograd tensors read by value, and a
tensor off the CPU refused by name."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tilelang.ops.mla import (dequantize_k_cache, flash_mla_with_kvcache, get_mla_metadata,
                              quantize_k_cache)

from .cases import check, make_case

torch = pytest.importorskip("torch")


def _torch(a: np.ndarray):
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    if a.dtype == ml_dtypes.float8_e4m3fn:
        return torch.from_numpy(a.view(np.uint8)).view(torch.float8_e4m3fn)
    return torch.from_numpy(a)


def _decode(q, kv, table, lens, **kw):
    meta, _ = get_mla_metadata()
    return flash_mla_with_kvcache(q, kv, table, lens, 512, meta, None, **kw)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_torch_tensors_round_trip(dtype):
    q, kv, table, lens = make_case(2, 1, 16, 1, 70, seed=10, dtype=dtype)
    tq = _torch(q).requires_grad_()              # read by value, as a kernel input
    out, lse = _decode(tq, _torch(kv), _torch(table), _torch(lens))
    assert isinstance(out, torch.Tensor) and out.dtype == tq.dtype
    assert isinstance(lse, torch.Tensor) and lse.dtype == torch.float32
    check(out.float().numpy(), lse.numpy(), q, kv, table, lens)


def test_torch_fp8_cache():
    q, kv, table, lens = make_case(2, 1, 16, 1, 90, zero=True, seed=13)
    clean = np.nan_to_num(kv.astype(np.float32)).astype(ml_dtypes.bfloat16)
    cache = quantize_k_cache(clean).view(ml_dtypes.float8_e4m3fn)   # FlashMLA's dtype
    out, lse = _decode(_torch(q), _torch(cache), _torch(table), _torch(lens),
                       is_fp8_kvcache=True)
    assert out.dtype == torch.bfloat16
    check(out.float().numpy(), lse.numpy(), q, dequantize_k_cache(cache), table, lens,
          out_abs=1e-3, cos=5e-6)


def test_a_tensor_off_the_cpu_is_refused_by_name():
    q, kv, table, lens = make_case(1, 1, 16, 1, 20, seed=14)
    meta_q = torch.empty(q.shape, dtype=torch.bfloat16, device="meta")
    with pytest.raises(ValueError, match="q: a torch tensor on meta"):
        _decode(meta_q, _torch(kv), _torch(table), _torch(lens))
