"""Ports of TileLang's reducer tests (testing/python/language/test_tilelang_language_reducer_v2.py)
that check values: T.alloc_reducer(op=) with T.reducer_init (identity or seed),
T.reducer_update from one or several T.Parallel nests (also under serial and pipelined
tile loops, at permuted or unit-dim indices), and T.finalize_reducer(acc, result),
checked against numpy on both targets. TileLang's checks of its CUDA (which all-reduce
plan, packed halves) are dropped; `if T.get_thread_binding() == 0:` around a final
store is TileLang's one-thread guard, which a block program does not need (it runs the
store once). The kernels' lines are TileLang's."""
import numpy as np
import pytest

import tilelang
import tilelang as tl
import tilelang.language as T
from tilelang.diagnostics import TileLangError

from .helpers import RNG

_FORCE_BASELINE = {tilelang.PassConfigKey.TL_REDUCER_FORCE_BASELINE: True}


def assert_close(got, want, atol=0, rtol=0):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               atol=atol, rtol=rtol)


def test_scalar_sum_regression_36_not_576(target):
    """Issue #2408: 128 threads summing 8 elements must yield 36, not 576.

    The T.Parallel(8) loop layout replicates every logical iteration over 16
    threads; layout replication must not change contribution multiplicity.
    """
    extent = 8
    threads = 128

    @T.prim_func
    def kernel(A: T.Tensor((extent,), T.float32), B: T.Tensor((1,), T.float32)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((extent,), T.float32)
            T.copy(A, src)
            acc = T.alloc_reducer((1,), T.float32, op="sum")
            T.reducer_init(acc)
            for i in T.Parallel(extent):
                T.reducer_update(acc[0], src[i])
            result = T.alloc_fragment((1,), T.float32)
            T.finalize_reducer(acc, result)
            if T.get_thread_binding() == 0:
                B[0] = result[0]

    A = np.arange(1, extent + 1).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    assert_close(B, A.sum().reshape(1), atol=0, rtol=0)


def test_deferred_sum_across_serial_tiles(target):
    """The reducer's core value: accumulate across serial tiles, one final
    cross-thread combine."""
    M, K, BLOCK_K, threads = 32, 512, 128, 128

    @T.prim_func
    def kernel(A: T.Tensor((M, K), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=threads):
            acc = T.alloc_reducer((M,), T.float32, op="sum")
            T.reducer_init(acc)
            a_frag = T.alloc_fragment((M, BLOCK_K), T.float32)
            for k_tile in T.serial(T.ceildiv(K, BLOCK_K)):
                T.copy(A[0, k_tile * BLOCK_K], a_frag)
                for i, k in T.Parallel(M, BLOCK_K):
                    T.reducer_update(acc[i], a_frag[i, k])
            result = T.alloc_fragment((M,), T.float32)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    A = RNG.standard_normal((M, K,)).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    assert_close(B, A.sum(axis=1), atol=1e-2, rtol=1e-2)


def test_pipelined_accumulation(target):
    """reducer_update inside a T.Pipelined body: pipeline planning must
    classify the per-iteration intrinsic as compute (the shared-staging copy
    is the only copy stage), and the epoch spans all pipeline iterations
    with a single finalize.

    Warp specialization is disabled: a WS-split epoch (init/update/finalize
    inside one warp-group branch) is out of scope for reducer v2 and is
    rejected by a compile-time check in the finalize lowering."""
    M, K, BLOCK_K, threads = 32, 512, 128, 128

    @T.prim_func
    def kernel(A: T.Tensor((M, K), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=threads):
            acc = T.alloc_reducer((M,), T.float32, op="sum")
            T.reducer_init(acc)
            a_shared = T.alloc_shared((M, BLOCK_K), T.float32)
            for k_tile in T.Pipelined(T.ceildiv(K, BLOCK_K), num_stages=2):
                T.copy(A[0, k_tile * BLOCK_K], a_shared)
                for i, k in T.Parallel(M, BLOCK_K):
                    T.reducer_update(acc[i], a_shared[i, k])
            result = T.alloc_fragment((M,), T.float32)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    A = RNG.standard_normal((M, K,)).astype(np.float32)
    B = tl.compile(
        kernel,
        out_idx=-1,
        pass_configs={tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True},
    )(A)
    assert_close(B, A.sum(axis=1), atol=1e-2, rtol=1e-2)


def test_multiple_update_sites_mixed_extents(target):
    extent = 8
    threads = 128

    @T.prim_func
    def kernel(
        A: T.Tensor((extent,), T.float32),
        B: T.Tensor((2 * extent,), T.float32),
        C: T.Tensor((1,), T.float32),
    ):
        with T.Kernel(1, threads=threads):
            a_frag = T.alloc_fragment((extent,), T.float32)
            b_frag = T.alloc_fragment((2 * extent,), T.float32)
            T.copy(A, a_frag)
            T.copy(B, b_frag)
            acc = T.alloc_reducer((1,), T.float32, op="sum")
            T.reducer_init(acc)
            for i in T.Parallel(extent):
                T.reducer_update(acc[0], a_frag[i])
            for j in T.Parallel(2 * extent):
                T.reducer_update(acc[0], b_frag[j])
            result = T.alloc_fragment((1,), T.float32)
            T.finalize_reducer(acc, result)
            if T.get_thread_binding() == 0:
                C[0] = result[0]

    A = np.arange(1, extent + 1).astype(np.float32)
    B = np.arange(1, 2 * extent + 1).astype(np.float32)
    C = tl.compile(kernel, out_idx=-1)(A, B)
    assert_close(C, (A.sum() + B.sum()).reshape(1), atol=0, rtol=0)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min(target, op):
    M, N, threads = 16, 64, 128

    @T.prim_func
    def kernel(A: T.Tensor((M, N), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=threads):
            a_frag = T.alloc_fragment((M, N), T.float32)
            T.copy(A, a_frag)
            acc = T.alloc_reducer((M,), T.float32, op=op)
            T.reducer_init(acc)
            for i, j in T.Parallel(M, N):
                T.reducer_update(acc[i], a_frag[i, j])
            result = T.alloc_fragment((M,), T.float32)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    A = RNG.standard_normal((M, N,)).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    ref = A.max(axis=1) if op == "max" else A.min(axis=1)
    assert_close(B, ref, atol=0, rtol=0)


def test_seed_applied_exactly_once(target):
    """A sum seed must be combined once per logical output, not once per
    participant partial (which would multiply it by the thread count)."""
    extent, threads, seed = 8, 128, 100.0

    @T.prim_func
    def kernel(A: T.Tensor((extent,), T.float32), B: T.Tensor((1,), T.float32)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((extent,), T.float32)
            T.copy(A, src)
            acc = T.alloc_reducer((1,), T.float32, op="sum")
            T.reducer_init(acc, seed)
            for i in T.Parallel(extent):
                T.reducer_update(acc[0], src[i])
            result = T.alloc_fragment((1,), T.float32)
            T.finalize_reducer(acc, result)
            if T.get_thread_binding() == 0:
                B[0] = result[0]

    A = np.arange(1, extent + 1).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    assert_close(B, (A.sum() + seed).reshape(1), atol=0, rtol=0)


def test_int32_sum(target):
    extent, threads = 8, 128

    @T.prim_func
    def kernel(A: T.Tensor((extent,), T.int32), B: T.Tensor((1,), T.int32)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((extent,), T.int32)
            T.copy(A, src)
            acc = T.alloc_reducer((1,), T.int32, op="sum")
            T.reducer_init(acc)
            for i in T.Parallel(extent):
                T.reducer_update(acc[0], src[i])
            result = T.alloc_fragment((1,), T.int32)
            T.finalize_reducer(acc, result)
            if T.get_thread_binding() == 0:
                B[0] = result[0]

    A = np.arange(1, extent + 1).astype(np.int32)
    B = tl.compile(kernel, out_idx=-1)(A)
    assert_close(B, A.sum().astype(np.int32).reshape(1), atol=0, rtol=0)


# ---------------------------------------------------------------------------
# Structural: physical plan codegen
# ---------------------------------------------------------------------------


def test_narrow_plan_local_complete_no_collective(target):
    """Parallel(M) -> acc[M]: each destination replica independently builds
    its complete result; zero collectives, barriers, or workspace."""
    M, threads = 8, 128

    @T.prim_func
    def kernel(A: T.Tensor((M,), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((M,), T.float32)
            T.copy(A, src)
            acc = T.alloc_reducer((M,), T.float32, op="sum")
            T.reducer_init(acc)
            for i in T.Parallel(M):
                T.reducer_update(acc[i], src[i])
            result = T.alloc_fragment((M,), T.float32)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    A = RNG.standard_normal((M,)).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    assert_close(B, A, atol=0, rtol=0)


def test_narrow_plan_local_complete_inner_serial(target):
    """Parallel(M){ serial(K) }: the serial reduction accumulates on the
    owning thread; still zero collectives."""
    M, K, threads = 8, 16, 128

    @T.prim_func
    def kernel(A: T.Tensor((M, K), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((M, K), T.float32)
            T.copy(A, src)
            acc = T.alloc_reducer((M,), T.float32, op="sum")
            T.reducer_init(acc)
            for i in T.Parallel(M):
                for k in T.serial(K):
                    T.reducer_update(acc[i], src[i, k])
            result = T.alloc_fragment((M,), T.float32)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    if target != "cpu":     # a serial loop inside T.Parallel: tcsim's vector unit runs
        with pytest.raises(TileLangError) as info:       # whole-tile operations only
            tl.compile(kernel, out_idx=-1)
        assert info.value.diagnostics[0].code == "TL0806"
        return
    A = RNG.standard_normal((M, K,)).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    assert_close(B, A.sum(axis=1), atol=1e-3, rtol=1e-3)


def test_narrow_plan_row_reduction_projected_width(target):
    """Parallel(M, K) -> acc[M]: the collective combines only the K-sourced
    thread splits, not the full block."""
    M, K, threads = 16, 64, 256

    @T.prim_func
    def kernel(A: T.Tensor((M, K), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((M, K), T.float32)
            T.copy(A, src)
            acc = T.alloc_reducer((M,), T.float32, op="sum")
            T.reducer_init(acc)
            for i, k in T.Parallel(M, K):
                T.reducer_update(acc[i], src[i, k])
            result = T.alloc_fragment((M,), T.float32)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    A = RNG.standard_normal((M, K,)).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    assert_close(B, A.sum(axis=1), atol=1e-3, rtol=1e-3)


def test_seed_with_narrow_plan(target):
    """Seeds work with narrow plans: combined exactly once per logical
    output after the projected collective, not once per replica group."""
    extent, threads, seed = 8, 128, 100.0

    @T.prim_func
    def kernel(A: T.Tensor((extent,), T.float32), B: T.Tensor((1,), T.float32)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((extent,), T.float32)
            T.copy(A, src)
            acc = T.alloc_reducer((1,), T.float32, op="sum")
            T.reducer_init(acc, seed)
            for i in T.Parallel(extent):
                T.reducer_update(acc[0], src[i])
            result = T.alloc_fragment((1,), T.float32)
            T.finalize_reducer(acc, result)
            if T.get_thread_binding() == 0:
                B[0] = result[0]

    A = np.arange(1, extent + 1).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    assert_close(B, (A.sum() + seed).reshape(1), atol=0, rtol=0)


def test_seed_with_local_complete(target):
    """Seed on a zero-collective (LocalComplete) epoch: the finalize still
    materializes to apply the seed once per slot."""
    M, threads, seed = 8, 128, 5.0

    @T.prim_func
    def kernel(A: T.Tensor((M,), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((M,), T.float32)
            T.copy(A, src)
            acc = T.alloc_reducer((M,), T.float32, op="sum")
            T.reducer_init(acc, seed)
            for i in T.Parallel(M):
                T.reducer_update(acc[i], src[i])
            result = T.alloc_fragment((M,), T.float32)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    A = RNG.standard_normal((M,)).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    assert_close(B, A + seed, atol=0, rtol=0)


def test_narrow_plan_permuted_indices(target):
    """Update indices may permute the parallel loop order: acc[j, i] with
    Parallel(i, j). The induced storage layout is rebuilt over the reducer's
    own dim order."""
    M, N, threads = 8, 16, 128

    @T.prim_func
    def kernel(A: T.Tensor((M, N), T.float32), B: T.Tensor((N, M), T.float32)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((M, N), T.float32)
            T.copy(A, src)
            acc = T.alloc_reducer((N, M), T.float32, op="sum")
            T.reducer_init(acc)
            for i, j in T.Parallel(M, N):
                T.reducer_update(acc[j, i], src[i, j])
            result = T.alloc_fragment((N, M), T.float32)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    A = RNG.standard_normal((M, N,)).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    assert_close(B, A.T, atol=0, rtol=0)


def test_narrow_plan_unit_dim_indices(target):
    """A constant zero index on a unit reducer dim mixes with loop-var
    indices: acc[0, i] with shape (1, M)."""
    M, K, threads = 16, 16, 128

    @T.prim_func
    def kernel(A: T.Tensor((M, K), T.float32), B: T.Tensor((1, M), T.float32)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((M, K), T.float32)
            T.copy(A, src)
            acc = T.alloc_reducer((1, M), T.float32, op="sum")
            T.reducer_init(acc)
            for i, k in T.Parallel(M, K):
                T.reducer_update(acc[0, i], src[i, k])
            result = T.alloc_fragment((1, M), T.float32)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    A = RNG.standard_normal((M, K,)).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    assert_close(B, A.sum(axis=1).reshape(1, M), atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("force_baseline", [False, True])
def test_differential_forced_baseline_vs_auto(target, force_baseline):
    """Forced baseline and auto plan selection must agree numerically."""
    M, K, threads = 32, 128, 128

    @T.prim_func
    def kernel(A: T.Tensor((M, K), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=threads):
            acc = T.alloc_reducer((M,), T.float32, op="sum")
            T.reducer_init(acc)
            a_frag = T.alloc_fragment((M, K), T.float32)
            T.copy(A, a_frag)
            for i, k in T.Parallel(M, K):
                T.reducer_update(acc[i], a_frag[i, k])
            result = T.alloc_fragment((M,), T.float32)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    configs = _FORCE_BASELINE if force_baseline else None
    A = RNG.standard_normal((M, K,)).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1, pass_configs=configs)(A)
    assert_close(B, A.sum(axis=1), atol=1e-2, rtol=1e-2)


# ---------------------------------------------------------------------------
# Packed partial accumulation (16-bit floats)
# ---------------------------------------------------------------------------
