"""Thread-level code is out of scope: a diagnostic at the call, in the user's .py file,
saying why and what to write instead."""
import inspect

import pytest

import tilelang
import tilelang.language as T
from tilelang.diagnostics import TileLangError


@tilelang.jit(out_idx=[-1])
def gemv_by_threads(N, K):
    @T.prim_func
    def kernel(A: T.Tensor((K,), "float32"), B: T.Tensor((N, K), "float32"),
               C: T.Tensor((N,), "float32")):
        with T.Kernel(N, threads=(32, 4)) as bn:
            tn = T.get_thread_binding(0)
            C[bn] = A[tn] * B[bn, tn]
    return kernel


def test_thread_binding_is_tl0380_in_the_py_file():
    with pytest.raises(TileLangError) as info:
        gemv_by_threads(8, 32)
    d = info.value.diagnostics[0]
    assert d.code == "TL0380" and "T.Parallel" in d.help
    assert d.primary.file == inspect.getsourcefile(gemv_by_threads.factory)
    assert "Traceback" not in info.value.render()
