"""Statement forms: loops with a step, tuple and annotated assignment, compile-time
rebinding, T.print, T.cumsum, T.clear of an alloc_var, macros that return a value."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T

from .helpers import close, randn


@T.macro
def halve(x):
    h = x * 0.5
    return h + 0.0


@tilelang.jit(out_idx=[-1])
def stepped(N, step=3):
    @T.prim_func
    def kernel(X: T.Tensor((N,), "float32"), Y: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            acc = T.alloc_var("float32")
            T.clear(acc)
            for i in T.serial(1, N, step):
                acc += X[i]
            rev = T.alloc_var("float32", init=0.0)
            for i in range(N - 1, -1, -2):
                rev += halve(X[i])
            T.print(acc, msg="acc")
            Y[0] = acc
            Y[1] = rev
    return kernel


def test_stepped_loops_alloc_var_clear_and_macro_values(target):
    x = randn(20)
    got = stepped(20)(x)
    close(got, [x[1:20:3].sum(), 0.5 * x[19::-2].sum()], 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def scan(M, N, reverse=False):
    @T.prim_func
    def kernel(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((M, N), "float32")
            T.copy(X, x)
            T.cumsum(x, dim=1, reverse=reverse)
            T.copy(x, Y)
    return kernel


@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(target, reverse):
    x = randn(3, 21)
    want = np.cumsum(x[:, ::-1], 1)[:, ::-1] if reverse else np.cumsum(x, 1)
    close(scan(3, 21, reverse)(x), want, 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def unpacked(N):
    @T.prim_func
    def kernel(X: T.Tensor((N, 2), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            lo, hi = 0, 1                       # tuple assignment of constants
            factor = 2
            factor = factor * 1.5               # a compile-time value may be rebound
            scale: T.float32 = factor           # annotated assignment: a float32 let
            for i in T.Parallel(N):
                Y[i] = (X[i, lo] + X[i, hi]) * scale
    return kernel


def test_tuple_and_annotated_assignment(target):
    x = randn(10, 2)
    close(unpacked(10)(x), x.sum(1) * 3.0)


x = np.zeros(3)          # a script's module-level array, as TileLang examples have


@tilelang.jit(out_idx=[-1])
def shadowing(N):
    @T.prim_func
    def kernel(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_fragment((N,), "float32")   # local to the kernel, as in Python
            T.copy(X, x)
            for i in T.Parallel(N):
                x[i] = x[i] + 1.0
            T.copy(x, Y)
    return kernel


def test_a_local_name_shadows_a_module_level_one(target):
    v = randn(8)
    close(shadowing(8)(v), v + 1)
