"""Ports of TileLang's `let` tests (testing/python/language): values bound inside a
pipelined loop, written the current way (tensors annotated in the signature of the
decorated function). A load whose offset is read from a buffer the loop writes is not
issued ahead of that write on a pipelined target."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T

from .helpers import close, randn


@tilelang.jit
def bind_kernel(A: T.Tensor((64,), T.float16), B: T.Tensor((64,), T.float16)):
    with T.Kernel(1, threads=32):
        A_shared = T.alloc_shared((32,), T.float16)
        for k in T.Pipelined(2, num_stages=2):
            T.copy(A[k * 32], A_shared)
            for i in T.Parallel(32):
                x = A_shared[i] + 1.0
                B[k * 32 + i] = x


def test_value_bound_in_a_parallel_loop(target):
    a = randn(64).astype(np.float16)
    b = np.zeros(64, np.float16)
    bind_kernel(a, b)
    close(b, a.astype(np.float32) + 1, 1e-3, 1e-3)


def producer_bind(stages):
    @tilelang.jit
    def producer_bind_kernel(A: T.Tensor((64,), T.float16), B: T.Tensor((64,), T.float16)):
        with T.Kernel(1, threads=256):
            index_shared = T.alloc_shared((1,), T.int32)
            A_shared = T.alloc_shared((32,), T.float16)
            for k in T.Pipelined(2, num_stages=stages):
                index_shared[0] = k * 32
                offset = index_shared[0]
                T.copy(A[offset], A_shared)
                for i in T.Parallel(32):
                    B[k * 32 + i] = A_shared[i]
    return producer_bind_kernel


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_copy_offset_read_from_a_buffer_the_loop_writes(target, stages):
    a = np.arange(64).astype(np.float16)
    b = np.zeros(64, np.float16)
    producer_bind(stages)(a, b)
    close(b, a)


@tilelang.jit
def signature_annotated(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4, 8), "float32"),
                        scale: float):
    with T.Kernel(1, threads=32):
        for i, j in T.Parallel(4, 8):
            B[i, j] = A[i, j] * scale


def test_tensors_annotated_in_the_signature(target):
    a, b = randn(4, 8), np.zeros((4, 8), np.float32)
    signature_annotated(a, b, 2.5)
    close(b, a * 2.5)
