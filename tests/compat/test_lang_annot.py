"""Port of TileLang's tensor-annotation tests (testing/python/language/
test_tilelang_language_annot.py): a symbolic size that appears only inside a shape
expression (`T.Tensor((n * 4,), ...)`, `n + 1`, `n * 3 + 1`) is solved from the
argument's extent at launch; an extent the expression cannot take is a launch error."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.runtime.errors import LaunchValueError


def test_tensor_annot_mul(target):
    @tilelang.jit(execution_backend="tvm_ffi")
    def example_tensor_annot():
        n = T.symbolic("n")

        @T.prim_func
        def kernel(
            A: T.Tensor((n * 4,), T.int32),
        ):
            with T.Kernel(1) as _:
                for i in range(n * 4):
                    A[i] = 0
        return kernel
    ker = example_tensor_annot()
    A = np.arange(16, dtype=np.int32)
    ker(A)
    assert (A == 0).all()


def test_tensor_annot_add(target):
    @tilelang.jit(execution_backend="tvm_ffi")
    def example_tensor_annot():
        n = T.symbolic("n")

        @T.prim_func
        def kernel(
            A: T.Tensor((n + 1,), T.int32),
        ):
            with T.Kernel(1) as _:
                for i in range(n + 1):
                    A[i] = 0
        return kernel
    ker = example_tensor_annot()
    A = np.arange(16, dtype=np.int32)
    ker(A)
    assert (A == 0).all()


@tilelang.jit(execution_backend="tvm_ffi")
def mul_add_annot():
    n = T.symbolic("n")

    @T.prim_func
    def kernel(
        A: T.Tensor((n * 3 + 1,), T.int32),
    ):
        with T.Kernel(1) as _:
            for i in range(n * 3 + 1):
                A[i] = 0
    return kernel


def test_tensor_annot_mul_add(target):
    A = np.arange(16, dtype=np.int32)
    mul_add_annot()(A)
    assert (A == 0).all()


def test_an_extent_the_expression_cannot_take_is_an_error(target):
    with pytest.raises(LaunchValueError, match=r"dimension 0 is 15, which is .*n \* 3.*for no size"):
        mul_add_annot()(np.arange(15, dtype=np.int32))
