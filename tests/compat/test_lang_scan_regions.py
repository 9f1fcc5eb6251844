"""Ports of the region tests of TileLang's scan file
(testing/python/language/test_tilelang_language_scan.py): T.cumsum / T.cummax of tiles
copied from slices of global tensors (ragged last blocks included), of sub-regions of
a wider shared tile (in place and into another tile of a different row pitch) and of a
row-offset sub-region, checked against numpy on both targets. Shapes are smaller."""
import numpy as np
import pytest

import tilelang as tl
import tilelang.language as T

from .helpers import RNG, close, randn, slow_beyond


def _scan(a, dim, reverse, op):
    f = np.cumsum if op == "cumsum" else (lambda x, axis: np.maximum.accumulate(x, axis=axis))
    if reverse:
        return np.flip(f(np.flip(a, dim), axis=dim), dim)
    return f(a, axis=dim)


def _blockwise(a, blocks, dim, reverse):
    out = np.empty_like(a)
    bm, bn = blocks
    for i in range(0, a.shape[0], bm):
        for j in range(0, a.shape[1], bn):
            out[i:i + bm, j:j + bn] = _scan(a[i:i + bm, j:j + bn], dim, reverse, "cumsum")
    return out


def cumsum_region_test_1d(N, chunk_size, reverse=False, dtype=T.float32):
    import tilelang.language as T

    @T.prim_func
    def cumsum_region(
        InputG_fragment: T.Tensor((N,), dtype),
        OutputG_fragment: T.Tensor((N,), dtype),
    ):
        with T.Kernel(T.ceildiv(N, chunk_size), threads=chunk_size) as bx:
            i = bx
            chunk_start = i * chunk_size
            A_shared = T.alloc_shared((chunk_size,), dtype)
            T.copy(InputG_fragment[chunk_start : chunk_start + chunk_size], A_shared)
            T.cumsum(src=A_shared, dim=0, reverse=reverse)
            T.copy(A_shared, OutputG_fragment[chunk_start : chunk_start + chunk_size])

    return cumsum_region


@pytest.mark.parametrize("N,chunk,reverse", slow_beyond([(50, 16, False), (128, 32, True),
                                                         (96, 64, False), (128, 32, False)], 1))
def test_cumsum_region_1d(target, N, chunk, reverse):
    A = randn(N)
    out = tl.compile(cumsum_region_test_1d(N, chunk, reverse), out_idx=-1)(A)
    want = _blockwise(A.reshape(1, N), (1, chunk), 1, reverse).reshape(N)
    close(out, want, 1e-4, 1e-4)


def cumsum_region_test_2d(M, N, block_M, block_N, dim=0, reverse=False, dtype=T.float32):
    import tilelang.language as T

    @T.prim_func
    def cumsum_region(
        InputG_fragment: T.Tensor((M, N), dtype),
        OutputG_fragment: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            chunk_start_M = by * block_M
            chunk_start_N = bx * block_N
            A_shared = T.alloc_shared((block_M, block_N), dtype)
            T.copy(
                InputG_fragment[chunk_start_M : chunk_start_M + block_M, chunk_start_N : chunk_start_N + block_N],
                A_shared,
            )
            T.cumsum(src=A_shared, dim=dim, reverse=reverse)
            T.copy(
                A_shared,
                OutputG_fragment[chunk_start_M : chunk_start_M + block_M, chunk_start_N : chunk_start_N + block_N],
            )

    return cumsum_region


@pytest.mark.parametrize("M,N,bm,bn,dim,reverse", slow_beyond([(50, 50, 16, 16, 1, False),
                                                               (48, 48, 16, 16, 1, True),
                                                               (64, 64, 32, 32, 0, False),
                                                               (64, 64, 32, 32, 1, False)], 1))
def test_cumsum_region_2d(target, M, N, bm, bn, dim, reverse):
    A = randn(M, N)
    out = tl.compile(cumsum_region_test_2d(M, N, bm, bn, dim, reverse), out_idx=-1)(A)
    close(out, _blockwise(A, (bm, bn), dim, reverse), 1e-4, 1e-4)


def cumsum_strided_region_test(M, N, NBIG, dim=0, reverse=False, dtype=T.float32):

    @T.prim_func
    def cumsum_strided(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(1, threads=256) as _:
            big = T.alloc_shared((M, NBIG), dtype)
            for i, j in T.Parallel(M, NBIG):
                big[i, j] = T.cast(0, dtype)
            for i, j in T.Parallel(M, N):
                big[i, j] = A[i, j]
            T.cumsum(src=big[0:M, 0:N], dst=big[0:M, 0:N], dim=dim, reverse=reverse)
            for i, j in T.Parallel(M, N):
                B[i, j] = big[i, j]

    return cumsum_strided


def cummax_strided_region_test(M, N, NBIG, dim=0, reverse=False, dtype=T.float32):

    @T.prim_func
    def cummax_strided(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(1, threads=256) as _:
            big = T.alloc_shared((M, NBIG), dtype)
            for i, j in T.Parallel(M, NBIG):
                big[i, j] = T.cast(0, dtype)
            for i, j in T.Parallel(M, N):
                big[i, j] = A[i, j]
            T.cummax(src=big[0:M, 0:N], dst=big[0:M, 0:N], dim=dim, reverse=reverse)
            for i, j in T.Parallel(M, N):
                B[i, j] = big[i, j]

    return cummax_strided


@pytest.mark.parametrize("make,op", [(cumsum_strided_region_test, "cumsum"),
                                     (cummax_strided_region_test, "cummax")])
@pytest.mark.parametrize("dim,reverse", slow_beyond([(1, True), (0, False), (1, False),
                                                  (0, True)], 1))
def test_scan_strided_region(target, make, op, dim, reverse):
    A = RNG.integers(-2, 3, (8, 40)).astype(np.float32)
    out = tl.compile(make(8, 40, 64, dim, reverse), out_idx=-1)(A)
    np.testing.assert_array_equal(out, _scan(A, dim, reverse, op))


def scan_strided_out_of_place_test(M, N, src_pitch, dst_pitch, op="cumsum", dim=0, reverse=False, dtype=T.float32):

    @T.prim_func
    def scan_strided_out_of_place(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(1, threads=256) as _:
            src_big = T.alloc_shared((M, src_pitch), dtype)
            dst_big = T.alloc_shared((M, dst_pitch), dtype)
            for i, j in T.Parallel(M, src_pitch):
                src_big[i, j] = T.cast(0, dtype)
            for i, j in T.Parallel(M, dst_pitch):
                dst_big[i, j] = T.cast(0, dtype)
            for i, j in T.Parallel(M, N):
                src_big[i, j] = A[i, j]
            scan = T.cumsum if op == "cumsum" else T.cummax
            scan(
                src=src_big[0:M, 0:N],
                dst=dst_big[0:M, 0:N],
                dim=dim,
                reverse=reverse,
            )
            for i, j in T.Parallel(M, N):
                B[i, j] = dst_big[i, j]

    return scan_strided_out_of_place


@pytest.mark.parametrize("op", ["cumsum", "cummax"])
@pytest.mark.parametrize("dim", slow_beyond([1, 0], 1))
def test_scan_strided_out_of_place(target, op, dim):
    M, N = 8, 40
    A = (np.arange(M * N, dtype=np.float32).reshape(M, N) - N)
    out = tl.compile(scan_strided_out_of_place_test(M, N, 64, 80, op, dim, dim == 1),
                     out_idx=-1)(A)
    np.testing.assert_array_equal(out, _scan(A, dim, dim == 1, op))


def scan_offset_subregion_test(H, W, r0, r1, op="cumsum", dim=0, reverse=False, dtype=T.float32):

    @T.prim_func
    def main(
        A: T.Tensor((H, W), dtype),
        B: T.Tensor((H, W), dtype),
    ):
        with T.Kernel(1, threads=128):
            A_shared = T.alloc_shared((H, W), dtype)
            T.copy(A, A_shared)
            scan = T.cumsum if op == "cumsum" else T.cummax
            # Offset sub-region fed straight into the scan.
            scan(src=A_shared[r0:r1, :], dim=dim, reverse=reverse)
            T.copy(A_shared, B)

    return main


@pytest.mark.parametrize("op", ["cumsum", "cummax"])
@pytest.mark.parametrize("dim", slow_beyond([0, 1], 1))
@pytest.mark.parametrize("reverse", slow_beyond([True, False], 1))
def test_scan_offset_subregion(target, op, dim, reverse):
    H, W, r0, r1 = 32, 8, 16, 32
    A = randn(H, W)
    out = tl.compile(scan_offset_subregion_test(H, W, r0, r1, op, dim, reverse), out_idx=-1)(A)
    want = A.copy()
    want[r0:r1] = _scan(A[r0:r1], dim, reverse, op)
    close(out, want, 1e-4, 1e-4)
