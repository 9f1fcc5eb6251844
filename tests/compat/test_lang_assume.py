"""Ports of TileLang's assume tests (testing/python/language/test_tilelang_language_assume.py)
that program whole blocks: `T.assume(cond)` is a hint here (TileLang drops the bounds
checks it makes redundant; this compiler keeps them, so a kernel computes the same either
way), checked on values on both targets. TileLang checks that its CUDA has no `if (`;
the tests that index by `T.get_thread_binding` are thread-level code."""
import numpy as np

import tilelang
import tilelang.language as T


def test_assume_remove_boundary_check(target):
    @tilelang.jit
    def kernel_with_assume():
        N = T.dynamic("N")

        @T.prim_func
        def main(A: T.Tensor((N,), T.float32), l: T.int32, r: T.int32):
            with T.Kernel(1, threads=32) as _:
                for i in T.serial(r - l + 1):
                    T.assume(l + i >= 0 and l + i < N)
                    A[l + i] = 0

        return main

    a = np.ones(16, np.float32)
    kernel_with_assume()(a, 3, 9)
    np.testing.assert_array_equal(a, np.where((np.arange(16) >= 3) & (np.arange(16) <= 9),
                                              0, 1))


def test_assume_on_alloc_var(target):
    @tilelang.jit
    def kernel_alloc_var():
        N = T.dynamic("N")

        @T.prim_func
        def main(A: T.Tensor((N,), T.float32), out: T.Tensor((1,), T.float32), l: T.int32):
            with T.Kernel(1, threads=32) as _:
                x = T.alloc_var(T.int32)
                x = l
                T.assume(x >= 0 and x < N)
                out[0] = A[x]

        return main

    a = np.arange(10, dtype=np.float32) * 2
    out = np.zeros(1, np.float32)
    kernel_alloc_var()(a, out, 7)
    assert out[0] == 14
