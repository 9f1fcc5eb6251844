"""Ports of TileLang's copy tests (testing/python/language/test_tilelang_language_copy.py):
region copies, copies that convert the dtype, a region reaching past the tensor's end
(zeros come in), element copies (`T.copy(indices[pid], idx[0])`, also inside T.Parallel).
Shapes are shrunk; results are checked against numpy on both targets."""
import ml_dtypes
import numpy as np
import pytest

import tilelang
import tilelang.language as T

from .helpers import RNG, close, randn


PC = {tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True}


def tilelang_copy(M, N, block_M, block_N, src_dtype=T.float16, dst_dtype=T.float16):
    @T.prim_func
    def main(A: T.Tensor((M, N), src_dtype), B: T.Tensor((M, N), dst_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            T.copy(
                A[by * block_M : (by + 1) * block_M, bx * block_N : (bx + 1) * block_N],
                B[by * block_M : (by + 1) * block_M, bx * block_N : (bx + 1) * block_N],
            )
    return main


@pytest.mark.parametrize("M,N,bm,bn,dtype", [(64, 64, 32, 32, "float16"), (64, 72, 16, 72, "float16"), (64, 72, 16, 72, "float32")])
def test_copy(target, M, N, bm, bn, dtype):
    k = tilelang.compile(tilelang_copy(M, N, bm, bn, dtype, dtype), out_idx=[1], pass_configs=PC)
    assert k.get_kernel_source()
    a = randn(M, N).astype(dtype)
    close(k(a), a, 0, 0)


@pytest.mark.parametrize("s,d", [("float16", "bfloat16"), ("bfloat16", "float16")])
def test_copy_cross_dtype(target, s, d):
    def npd(x):
        return ml_dtypes.bfloat16 if x == "bfloat16" else x
    k = tilelang.compile(tilelang_copy(64, 64, 32, 32, s, d), out_idx=[1])
    a = randn(64, 64).astype(npd(s))
    close(np.asarray(k(a), np.float32), a.astype(npd(d)).astype(np.float32), 0, 0)


def tilelang_copy_oob(M, N, padded_M, padded_N, block_M, block_N, src_dtype=T.float32,
                      dst_dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M, N), src_dtype), B: T.Tensor((padded_M, padded_N), dst_dtype)):
        with T.Kernel(T.ceildiv(padded_N, block_N), T.ceildiv(padded_M, block_M), threads=128) as (bx, by):
            T.copy(
                A[by * block_M : (by + 1) * block_M, bx * block_N : (bx + 1) * block_N],
                B[by * block_M : (by + 1) * block_M, bx * block_N : (bx + 1) * block_N],
            )
    return main


@pytest.mark.parametrize("dst", ["float32", "float16"])
def test_copy_past_the_end_reads_zeros(target, dst):
    M, N, bm, bn = 70, 75, 32, 32
    pM, pN = tilelang.cdiv(M, bm) * bm, tilelang.cdiv(N, bn) * bn
    k = tilelang.compile(tilelang_copy_oob(M, N, pM, pN, bm, bn, "float32", dst), out_idx=[1],
                         pass_configs=PC)
    a = randn(M, N)
    ref = np.zeros((pM, pN), np.float32)
    ref[:M, :N] = a.astype(dst)
    close(k(a), ref, 1e-3, 1e-3)


def tilelang_copy_bufferload(num_tokens, dtype=T.float16):
    @T.prim_func
    def main(indices: T.Tensor((num_tokens,), T.int32), x: T.Tensor((num_tokens,), dtype)):
        with T.Kernel(num_tokens, threads=32) as pid:
            idx = T.alloc_local([1], T.int32)
            T.copy(indices[pid], idx[0])
            x[idx[0]] = x[idx[0]] + 1
    return main


def test_copy_bufferload(target):
    k = tilelang.compile(tilelang_copy_bufferload(16), pass_configs=PC)
    indices = RNG.permutation(16).astype(np.int32)
    x = randn(16).astype(np.float16)
    want = x.astype(np.float32) + 1
    k(indices, x)
    close(x, want, 1e-3, 1e-3)


def tilelang_copy_bufferload_cross_dtype(num_tokens, index_dtype=T.int64):
    @T.prim_func
    def main(indices: T.Tensor((num_tokens,), index_dtype), out: T.Tensor((num_tokens,), T.int32)):
        with T.Kernel(num_tokens, threads=1) as pid:
            idx = T.alloc_local([1], T.int32)
            T.copy(indices[pid], idx[0])
            out[pid] = idx[0]
    return main


@pytest.mark.parametrize("idt,hi", [("int64", 1_000_000), ("int16", 30000)])
def test_copy_bufferload_cross_dtype(target, idt, hi):
    k = tilelang.compile(tilelang_copy_bufferload_cross_dtype(16, idt), out_idx=[1], pass_configs=PC)
    ind = RNG.integers(0, hi, 16).astype(idt)
    assert (k(ind) == ind.astype(np.int32)).all()


def tilelang_copy_buffer_load_with_parallel(M, N, block_M, block_N, dtype=T.float16):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                T.copy(A[by * block_M + i, bx * block_N + j], B[by * block_M + i, bx * block_N + j])
    return main


def test_copy_buffer_load_with_parallel(target):
    k = tilelang.compile(tilelang_copy_buffer_load_with_parallel(64, 64, 32, 32), out_idx=[1], pass_configs=PC)
    a = randn(64, 64).astype(np.float16)
    close(k(a), a, 0, 0)

