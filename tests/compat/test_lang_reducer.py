"""Ports of TileLang's reducer tests (testing/python/language/test_tilelang_language_reducer_v2.py)
that check values: T.alloc_reducer(op=) with T.reducer_init (identity or seed),
T.reducer_update from one or several T.Parallel nests (also under serial and pipelined
tile loops, at permuted or unit-dim indices), and T.finalize_reducer(acc, result),
checked against numpy on both targets. TileLang's checks of its CUDA (which all-reduce
plan, packed halves) are dropped; `if T.get_thread_binding() == 0:` around a final
store is TileLang's one-thread guard, which a block program does not need (it runs the
store once). The kernels' lines are TileLang's."""
import ml_dtypes
import numpy as np
import pytest

import tilelang
import tilelang as tl
import tilelang.language as T
from tilelang.diagnostics import TileLangError

from .helpers import RNG, close

_FORCE_BASELINE = {tilelang.PassConfigKey.TL_REDUCER_FORCE_BASELINE: True}


def assert_fp16_row_sums(got, a):
    """Row sums accumulated in float16 (TileLang's packed accumulation): within the
    rounding error bound of K float16 additions, K * 2^-11 * sum |a|, of the exact sums
    (TileLang's fixed 1e-2 holds for its tree order, not for every order of additions)."""
    exact = a.astype(np.float64).sum(axis=1)
    bound = a.shape[1] * 2.0 ** -11 * np.abs(a.astype(np.float64)).sum(axis=1) + 1e-3
    assert np.all(np.abs(np.asarray(got, np.float64) - exact) <= bound)


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
    close(B, A.sum().reshape(1), atol=0, rtol=0)


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
    close(B, A.sum(axis=1), atol=1e-2, rtol=1e-2)


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
    close(B, A.sum(axis=1), atol=1e-2, rtol=1e-2)


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
    close(C, (A.sum() + B.sum()).reshape(1), atol=0, rtol=0)


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
    close(B, ref, atol=0, rtol=0)


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
    close(B, (A.sum() + seed).reshape(1), atol=0, rtol=0)


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
    close(B, A.sum().astype(np.int32).reshape(1), atol=0, rtol=0)


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
    close(B, A, atol=0, rtol=0)


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
    close(B, A.sum(axis=1), atol=1e-3, rtol=1e-3)


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
    close(B, A.sum(axis=1), atol=1e-3, rtol=1e-3)


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
    close(B, (A.sum() + seed).reshape(1), atol=0, rtol=0)


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
    close(B, A + seed, atol=0, rtol=0)


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
    close(B, A.T, atol=0, rtol=0)


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
    close(B, A.sum(axis=1).reshape(1, M), atol=1e-3, rtol=1e-3)


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
    close(B, A.sum(axis=1), atol=1e-2, rtol=1e-2)


# ---------------------------------------------------------------------------
# Packed partial accumulation (16-bit floats)
# ---------------------------------------------------------------------------


def _rowsum_kernel(M, K, threads, dtype):
    @T.prim_func
    def kernel(A: T.Tensor((M, K), dtype), B: T.Tensor((M,), dtype)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((M, K), dtype)
            T.copy(A, src)
            acc = T.alloc_reducer((M,), dtype, op="sum")
            T.reducer_init(acc)
            for i, k in T.Parallel(M, K):
                T.reducer_update(acc[i], src[i, k])
            result = T.alloc_fragment((M,), dtype)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    return kernel


def test_packed_accumulation_fp16_parallel_reduction(target):
    """fp16 narrow plans split each per-thread partial into two lanes keyed
    by the reduction var's parity ("_pk" storage), halving the serial combine
    dependence chain; a per-thread fold recombines the lanes before the
    (unchanged) projected collective."""
    M, K, threads = 32, 64, 128

    A = RNG.standard_normal((M, K,)).astype(np.float16)
    B = tl.compile(_rowsum_kernel(M, K, threads, T.float16), out_idx=-1)(A)
    assert_fp16_row_sums(B, A)


def test_packed_accumulation_fp16_inner_serial(target):
    """An enclosing serial loop is the preferred lane source: its parity
    alternates lanes on the owning thread with zero cross-thread effects."""
    M, K, threads = 8, 16, 128

    @T.prim_func
    def kernel(A: T.Tensor((M, K), T.float16), B: T.Tensor((M,), T.float16)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((M, K), T.float16)
            T.copy(A, src)
            acc = T.alloc_reducer((M,), T.float16, op="sum")
            T.reducer_init(acc)
            for i in T.Parallel(M):
                for k in T.serial(K):
                    T.reducer_update(acc[i], src[i, k])
            result = T.alloc_fragment((M,), T.float16)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    if target != "cpu":     # a serial loop inside T.Parallel (see above)
        with pytest.raises(TileLangError) as info:
            tl.compile(kernel, out_idx=-1)
        assert info.value.diagnostics[0].code == "TL0806"
        return
    A = RNG.standard_normal((M, K,)).astype(np.float16)
    B = tl.compile(kernel, out_idx=-1)(A)
    assert_fp16_row_sums(B, A)


def test_packed_accumulation_bf16_max(target):
    """Packing applies to idempotent combines on bf16 too (max folds are
    order-insensitive, so lanes cannot change the result)."""
    M, K, threads = 32, 64, 128

    @T.prim_func
    def kernel(A: T.Tensor((M, K), T.bfloat16), B: T.Tensor((M,), T.bfloat16)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((M, K), T.bfloat16)
            T.copy(A, src)
            acc = T.alloc_reducer((M,), T.bfloat16, op="max")
            T.reducer_init(acc)
            for i, k in T.Parallel(M, K):
                T.reducer_update(acc[i], src[i, k])
            result = T.alloc_fragment((M,), T.bfloat16)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    A = RNG.standard_normal((M, K,)).astype(ml_dtypes.bfloat16)
    B = tl.compile(kernel, out_idx=-1)(A)
    close(B, A.max(axis=1), atol=0, rtol=0)


@pytest.mark.parametrize("force_baseline", [False, True])
def test_differential_packed_vs_baseline_fp16(target, force_baseline):
    """The packed narrow plan and the wide baseline must agree numerically
    (fp16 sum: same contribution multiset up to reassociation)."""
    M, K, threads = 32, 64, 128
    configs = _FORCE_BASELINE if force_baseline else None
    A = RNG.standard_normal((M, K,)).astype(np.float16)
    B = tl.compile(_rowsum_kernel(M, K, threads, T.float16), out_idx=-1, pass_configs=configs)(A)
    assert_fp16_row_sums(B, A)


# ---------------------------------------------------------------------------
# Bitwise combine ops
# ---------------------------------------------------------------------------


def test_epoch_inside_serial_loop_online_softmax(target):
    """A full epoch (init/update/finalize) inside a serial tile loop reopens
    once per iteration — the online-softmax rescale pattern. The max epoch
    seeds from the running maximum, a loop-variant expression."""
    K, BLOCK_K, threads = 512, 128, 128

    @T.prim_func
    def kernel(A: T.Tensor((K,), T.float32), B: T.Tensor((1,), T.float32)):
        with T.Kernel(1, threads=threads):
            a_frag = T.alloc_fragment((BLOCK_K,), T.float32)
            running_max = T.alloc_fragment((1,), T.float32)
            running_sum = T.alloc_fragment((1,), T.float32)
            running_max[0] = -T.infinity(T.float32)
            running_sum[0] = 0.0
            for k_tile in T.serial(T.ceildiv(K, BLOCK_K)):
                T.copy(A[k_tile * BLOCK_K], a_frag)
                new_max = T.alloc_reducer((1,), T.float32, op="max")
                T.reducer_init(new_max, running_max[0])
                for i in T.Parallel(BLOCK_K):
                    T.reducer_update(new_max[0], a_frag[i])
                max_result = T.alloc_fragment((1,), T.float32)
                T.finalize_reducer(new_max, max_result)

                new_sum = T.alloc_reducer((1,), T.float32, op="sum")
                T.reducer_init(new_sum)
                for i in T.Parallel(BLOCK_K):
                    T.reducer_update(new_sum[0], T.exp(a_frag[i] - max_result[0]))
                sum_result = T.alloc_fragment((1,), T.float32)
                T.finalize_reducer(new_sum, sum_result)

                running_sum[0] = T.exp(running_max[0] - max_result[0]) * running_sum[0] + sum_result[0]
                running_max[0] = max_result[0]
            if T.get_thread_binding() == 0:
                B[0] = T.log(running_sum[0]) + running_max[0]

    A = RNG.standard_normal((K,)).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    close(B, np.log(np.exp(A.astype(np.float64)).sum()).reshape(1), atol=1e-4, rtol=1e-4)


def test_epoch_inside_pipelined_loop(target):
    """A full epoch inside a T.Pipelined body: the per-iteration collective
    must survive software pipelining. Warp specialization is disabled, as
    for every reducer-under-pipelining test."""
    K, BLOCK_K, threads = 512, 128, 128

    @T.prim_func
    def kernel(A: T.Tensor((K,), T.float32), B: T.Tensor((1,), T.float32)):
        with T.Kernel(1, threads=threads):
            a_shared = T.alloc_shared((BLOCK_K,), T.float32)
            a_frag = T.alloc_fragment((BLOCK_K,), T.float32)
            running_max = T.alloc_fragment((1,), T.float32)
            running_max[0] = -T.infinity(T.float32)
            for k_tile in T.Pipelined(T.ceildiv(K, BLOCK_K), num_stages=2):
                T.copy(A[k_tile * BLOCK_K], a_shared)
                T.copy(a_shared, a_frag)
                new_max = T.alloc_reducer((1,), T.float32, op="max")
                T.reducer_init(new_max, running_max[0])
                for i in T.Parallel(BLOCK_K):
                    T.reducer_update(new_max[0], a_frag[i])
                max_result = T.alloc_fragment((1,), T.float32)
                T.finalize_reducer(new_max, max_result)
                running_max[0] = max_result[0]
            if T.get_thread_binding() == 0:
                B[0] = running_max[0]

    A = RNG.standard_normal((K,)).astype(np.float32)
    B = tl.compile(
        kernel,
        out_idx=-1,
        pass_configs={tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True},
    )(A)
    close(B, A.max().reshape(1), atol=0, rtol=0)


def test_epoch_inside_uniform_conditional(target):
    """A full epoch inside a block-uniform conditional: every thread of the
    block takes the same branch, so the collective stays barrier-uniform."""
    extent, threads = 8, 128

    @T.prim_func
    def kernel(A: T.Tensor((extent,), T.float32), B: T.Tensor((2,), T.float32)):
        with T.Kernel(2, threads=threads) as bx:
            src = T.alloc_fragment((extent,), T.float32)
            T.copy(A, src)
            result = T.alloc_fragment((1,), T.float32)
            result[0] = 0.0
            if bx == 0:
                acc = T.alloc_reducer((1,), T.float32, op="sum")
                T.reducer_init(acc)
                for i in T.Parallel(extent):
                    T.reducer_update(acc[0], src[i])
                T.finalize_reducer(acc, result)
            if T.get_thread_binding() == 0:
                B[bx] = result[0]

    A = np.arange(1, extent + 1).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    expected = np.array([A.sum(), 0.0])
    close(B, expected, atol=0, rtol=0)


def test_seed_captured_at_init_site(target):
    """The T.reducer_init starting value is evaluated at the init site:
    overwriting the expression's source before finalize must not change the
    epoch's logical starting value."""
    extent, threads = 8, 128

    @T.prim_func
    def kernel(A: T.Tensor((extent,), T.float32), B: T.Tensor((1,), T.float32)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((extent,), T.float32)
            T.copy(A, src)
            seed = T.alloc_fragment((1,), T.float32)
            seed[0] = 5.0
            acc = T.alloc_reducer((1,), T.float32, op="sum")
            T.reducer_init(acc, seed[0])
            seed[0] = 100.0  # after init, before finalize: must not matter
            for i in T.Parallel(extent):
                T.reducer_update(acc[0], src[i])
            result = T.alloc_fragment((1,), T.float32)
            T.finalize_reducer(acc, result)
            if T.get_thread_binding() == 0:
                B[0] = result[0]

    A = np.arange(1, extent + 1).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    close(B, (A.sum() + 5.0).reshape(1), atol=0, rtol=0)


def test_finalize_in_conditional_refinement(target):
    """A finalize inside a block-uniform conditional nested in the init's
    scope runs 0 or 1 times per init — legal. Blocks that skip the branch
    leave the partials unread. (The sum_smaller_probs pattern.)"""
    extent, threads = 8, 128

    @T.prim_func
    def kernel(
        A: T.Tensor((extent,), T.float32),
        S: T.Tensor((2,), T.int32),
        B: T.Tensor((2,), T.float32),
    ):
        with T.Kernel(2, threads=threads) as bx:
            src = T.alloc_fragment((extent,), T.float32)
            T.copy(A, src)
            acc = T.alloc_reducer((1,), T.float32, op="sum")
            T.reducer_init(acc)
            if S[bx] < 0:
                if T.get_thread_binding() == 0:
                    B[bx] = 0.0
            else:
                for i in T.Parallel(extent):
                    T.reducer_update(acc[0], src[i])
                result = T.alloc_fragment((1,), T.float32)
                T.finalize_reducer(acc, result)
                if T.get_thread_binding() == 0:
                    B[bx] = result[0]

    A = np.arange(1, extent + 1).astype(np.float32)
    S = np.array([-1, 1], np.int32)
    B = tl.compile(kernel, out_idx=-1)(A, S)
    expected = np.array([0.0, A.sum()])
    close(B, expected, atol=0, rtol=0)
