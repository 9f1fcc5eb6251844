"""Kernel structure beyond one grid of tile ops: T.Tensor views of a tensor's memory,
atomics that return the previous value, `if` on a compile-time constant (only the branch
taken is checked, as TileLang builds only that one)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T

from .helpers import close, randn


@tilelang.jit(out_idx=[-1])
def flat_transpose(H, W, C):
    @T.prim_func
    def kernel(X: T.Tensor((H, W, C), "float32"), Y: T.Tensor((C, H, W), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x_flat = T.Tensor((H * W, C), "float32", X.data)     # a view of X
            y_flat = T.Tensor((C, H * W), "float32", Y.data)
            t = T.alloc_fragment((H * W, C), "float32")
            u = T.alloc_fragment((C, H * W), "float32")
            T.copy(x_flat, t)
            for i, j in T.Parallel(C, H * W):
                u[i, j] = t[j, i]
            T.copy(u, y_flat)
    return kernel


def test_views(target):
    x = randn(3, 5, 4)
    close(flat_transpose(3, 5, 4)(x), x.transpose(2, 0, 1))


@tilelang.jit
def claim_slots(N):
    @T.prim_func
    def kernel(counter: T.Tensor((1,), "int32"), slots: T.Tensor((N,), "int32")):
        with T.Kernel(N, threads=32) as bx:
            slot = T.atomic_add(counter[0], 1, memory_order="relaxed", return_prev=True)
            slots[bx] = slot
            T.atomic_add(counter[0], 0, memory_order="release")
    return kernel


def test_atomic_that_returns_the_previous_value(target):
    counter, slots = np.zeros(1, np.int32), np.full(9, -1, np.int32)
    claim_slots(9)(counter, slots)
    assert counter[0] == 9 and sorted(slots) == list(range(9))


@tilelang.jit(out_idx=[-1])
def conv_like(N, use_hopper_path=False):
    @T.prim_func
    def kernel(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            if use_hopper_path:
                T.c2d_im2col_hopper_only(X, Y)          # not a tile op here: never built
            else:
                for i in T.Parallel(N):
                    Y[i] = X[i] + 1.0
    return kernel


def test_if_on_a_constant_checks_only_the_branch_taken(target):
    x = randn(16)
    close(conv_like(16)(x), x + 1)


@tilelang.jit(out_idx=[-1])
def split_then_combine(N, parts, block=16):
    chunk = N // parts

    @T.prim_func
    def kernel(X: T.Tensor((N,), "float32"), lengths: T.Tensor((parts,), "int32"),
               Y: T.Tensor((1,), "float32")):
        partial = T.alloc_global((parts,), "float32")
        with T.Kernel(parts, threads=32) as p:             # split: one partial sum each
            x = T.alloc_fragment((block,), "float32")
            s = T.alloc_fragment((1,), "float32")
            acc = T.alloc_var("float32", init=0.0)
            for k in T.serial(T.ceildiv(lengths[p], block)):
                start = p * chunk + k * block
                end = T.min(p * chunk + lengths[p], start + block)   # a loop-carried stop
                T.copy(X[start:end], x)                    # past `end`: read as 0
                T.reduce_sum(x, s, dim=0)
                acc += s[0]
            partial[p] = acc
        with T.Kernel(1, threads=32) as bx:                 # combine, after every split
            total = T.alloc_var("float32", init=0.0)
            for p in T.serial(parts):
                total += partial[p]
            Y[0] = total
    return kernel


def test_two_grids_and_loop_carried_slices(target):
    x = randn(64)
    lengths = np.array([16, 5, 0, 9], np.int32)
    want = sum(x[p * 16:p * 16 + n].sum() for p, n in enumerate(lengths))
    close(split_then_combine(64, 4)(x, lengths), [want], 1e-5, 1e-5)
