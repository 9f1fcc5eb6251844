"""Ports of TileLang's view and reshape tests (testing/python/language: view, reshape):
`T.reshape(A, shape)` / `T.view(A, shape)` of a global tensor see its memory with
another shape. A view that changes the dtype and the reshape of an on-chip buffer are
not supported here: each is a clear error (docs/compat.md)."""
import numpy as np
import pytest

import tilelang as tl
import tilelang.language as T
from tilelang.diagnostics import TileLangError

PC = {tl.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True}


def view_test(N, M, dtype, new_dtype=None):
    new_shape = [N // M, M]

    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor(new_shape, new_dtype if new_dtype else dtype)):
        with T.Kernel(1) as _:
            A_viewed = T.view(A, new_shape, dtype=new_dtype)
            T.copy(A_viewed, B)
    return main


def reshape_test(N, M, dtype):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N // M, M), dtype)):
        with T.Kernel(1) as _:
            A_reshaped = T.reshape(A, [N // M, M])
            T.copy(A_reshaped, B)
    return main


@pytest.mark.parametrize("N,M,dtype", [(256, 32, "float32"), (512, 64, "float16")])
@pytest.mark.parametrize("program", [view_test, reshape_test])
def test_view_and_reshape_of_a_global_tensor(target, N, M, dtype, program):
    kernel = tl.compile(program(N, M, dtype), out_idx=-1, pass_configs=PC)
    kernel.get_profiler().assert_allclose(lambda A: A.reshape(N // M, M), atol=0, rtol=0)


def test_view_of_the_same_dtype_named(target):
    kernel = tl.compile(view_test(64, 8, "float32", "float32"), out_idx=-1)
    a = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(kernel(a), a.reshape(8, 8))


def reshape_mismatch(N, M):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N // M, M), "float32")):
        with T.Kernel(1) as _:
            A_reshaped = T.reshape(A, [N // M, M + 1])
            T.copy(A_reshaped, B)
    return main


def reshape_fragment(N, M, dtype):
    @T.prim_func
    def main(A: T.Tensor((N // M, M), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(1, threads=32) as _:
            A_local = T.alloc_fragment((N // M, M), dtype)
            T.copy(A, A_local)
            A_local_reshape = T.reshape(A_local, [N])
            T.copy(A_local_reshape, B)
    return main


@pytest.mark.parametrize("program,code,message", [
    (reshape_mismatch(1024, 32), "TL0213", "to a shape of 1056 elements"),
    (reshape_fragment(256, 32, "float32"), "TL0217", "only global tensors are reshaped"),
    (view_test(256, 32, "float32", "float16"), "TL0217", "keeps the dtype"),
])
def test_unsupported_views_are_errors(program, code, message):
    with pytest.raises(TileLangError) as err:
        tl.compile(program).library()
    assert code in str(err.value) and message in str(err.value)
