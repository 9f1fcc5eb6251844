"""Ports of TileLang's reduction tests (testing/python/language/test_tilelang_language_reduce.py
and test_tilelang_language_reduce_maxmin_nan.py): T.reduce_sum / max / min / abssum /
absmax of shared, fragment and local tiles, `clear=False`, `batch=`, `nan_propagate=`,
and T.alloc_reducer / T.finalize_reducer, each checked against numpy on both targets.
Shapes are smaller than TileLang's; the kernels' lines are TileLang's."""
import ml_dtypes
import numpy as np
import pytest

import tilelang
import tilelang as tl
import tilelang.language as T
from tilelang.diagnostics import TileLangError
from tilelang.dtypes import numpy_dtype

from .helpers import RNG, close, slow_beyond

_COMPILE_FLAGS = {
    tl.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True,
    tl.PassConfigKey.TL_DISABLE_TMA_LOWER: True,
}



def _input(M, N, dtype):
    if dtype in ("int32", "int64"):
        return RNG.integers(-100, 100, (M, N)).astype(numpy_dtype(dtype))
    return RNG.standard_normal((M, N)).astype(numpy_dtype(dtype))


def _ref(A, op):
    a = A.astype(np.float64) if A.dtype.kind == "f" or A.dtype == ml_dtypes.bfloat16 else A
    return {"sum": lambda: a.sum(1), "max": lambda: a.max(1), "min": lambda: a.min(1),
            "abssum": lambda: np.abs(a).sum(1), "absmax": lambda: np.abs(a).max(1)}[op]()


def _reduce_op(T, op, src, dst, dim, batch=1):
    kwargs = {} if batch == 1 else {"batch": batch}
    if op == "sum":
        T.reduce_sum(src, dst, dim=dim, **kwargs)
    elif op == "max":
        T.reduce_max(src, dst, dim=dim, **kwargs)
    elif op == "min":
        T.reduce_min(src, dst, dim=dim, **kwargs)
    elif op == "abssum":
        T.reduce_abssum(src, dst, dim=dim, **kwargs)
    elif op == "absmax":
        T.reduce_absmax(src, dst, dim=dim, **kwargs)


# (op, dtype, M, N, src_scope, dst_scope, threads, batch): TileLang's cases, shapes shrunk
REDUCE_CASES = [
    ("sum", T.float32, 32, 32, "fragment", "fragment", 32, 1),
    ("max", T.float32, 32, 32, "shared", "shared", 32, 1),
    ("min", T.int64, 32, 32, "fragment", "fragment", 32, 1),
    ("abssum", T.float32, 32, 32, "fragment", "fragment", 32, 1),
    ("absmax", T.int64, 32, 32, "fragment", "fragment", 32, 1),
    ("sum", T.bfloat16, 32, 32, "fragment", "fragment", 32, 1),
    ("min", T.float16, 32, 32, "fragment", "fragment", 256, 8),
    ("sum", T.int32, 32, 32, "fragment", "fragment", 32, 1),
    ("sum", T.int64, 48, 16, "fragment", "fragment", 32, 1),
    ("sum", T.float32, 16, 16, "fragment", "fragment", 8, 1),
    ("sum", T.float32, 32, 32, "shared", "shared", 32, 1),
    ("sum", T.float32, 32, 32, "fragment", "shared", 32, 1),
    ("max", T.float32, 32, 32, "fragment", "fragment", 32, 1),
    ("max", T.int64, 32, 32, "fragment", "fragment", 32, 1),
    ("min", T.float32, 32, 32, "fragment", "fragment", 32, 1),
    ("abssum", T.int64, 32, 32, "fragment", "fragment", 32, 1),
    ("absmax", T.float32, 32, 32, "fragment", "fragment", 32, 1),
    ("sum", T.float32, 32, 16, "shared", "fragment", 256, 2),
    ("sum", T.float32, 32, 16, "shared", "fragment", 256, 4),
    ("sum", T.float16, 16, 32, "fragment", "fragment", 256, 4),
    ("max", T.bfloat16, 32, 16, "shared", "fragment", 256, 2),
    ("max", T.float32, 32, 32, "fragment", "fragment", 256, 4),
    ("min", T.float32, 16, 32, "shared", "fragment", 128, 2),
    ("abssum", T.float32, 32, 32, "fragment", "fragment", 256, 4),
    ("absmax", T.float32, 32, 32, "fragment", "fragment", 256, 4),
]


@pytest.mark.parametrize(("op", "dtype", "M", "N", "src_scope", "dst_scope", "threads", "batch"),
                         slow_beyond(REDUCE_CASES, 7),
                         ids=[f"{c[0]}-{c[1]}-{c[2]}x{c[3]}-{c[4][0]}2{c[5][0]}-b{c[7]}"
                              for c in REDUCE_CASES])
def test_reduce(target, op, dtype, M, N, src_scope, dst_scope, threads, batch):

    @tilelang.jit(out_idx=-1)
    def kernel(M, N, dtype, op, src_scope, dst_scope, threads, batch):
        @T.prim_func
        def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M,), dtype)):
            with T.Kernel(1, threads=threads):
                if src_scope == "fragment":
                    src = T.alloc_fragment((M, N), dtype)
                else:
                    src = T.alloc_shared((M, N), dtype)
                if dst_scope == "fragment":
                    dst = T.alloc_fragment((M,), dtype)
                else:
                    dst = T.alloc_shared((M,), dtype)
                T.copy(A, src, disable_tma=src_scope == "shared")
                _reduce_op(T, op, src, dst, dim=1, batch=batch)
                T.copy(dst, B)

        return main

    A = _input(M, N, str(dtype))
    B = kernel(M, N, dtype, op, src_scope, dst_scope, threads, batch)(A)
    tol = 1e-1 if str(dtype) in ("float16", "bfloat16") else 1e-2
    close(B, _ref(A, op), tol, tol)


@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_reduce_local(target, op):
    @tilelang.jit(out_idx=-1)
    def kernel():
        @T.prim_func
        def main(A: T.Tensor((8,), T.float16), B: T.Tensor((1,), T.float16)):
            with T.Kernel(1, threads=1):
                src = T.alloc_local((8,), T.float16)
                dst = T.alloc_local((1,), T.float16)
                for i in T.serial(8):
                    src[i] = A[i]
                _reduce_op(T, op, src, dst, dim=0)
                B[0] = dst[0]

        return main

    A = RNG.standard_normal(8).astype(np.float16)
    close(kernel()(A)[0], _ref(A.reshape(1, 8), op)[0], 1e-1, 1e-1)


# (op, dtype, M, N, src_scope, dst_scope); sum starts from 1, max from -inf
REDUCE_CLEAR_CASES = [
    ("sum", T.float32, 32, 32, "fragment", "fragment"),
    ("sum", T.float32, 32, 32, "fragment", "shared"),
    ("sum", T.float32, 32, 32, "shared", "shared"),
    ("max", T.float16, 32, 32, "fragment", "fragment"),
]


@pytest.mark.parametrize(("op", "dtype", "M", "N", "src_scope", "dst_scope"), REDUCE_CLEAR_CASES)
def test_reduce_clear(target, op, dtype, M, N, src_scope, dst_scope):
    @tilelang.jit(out_idx=-1)
    def kernel(M, N, dtype, op, src_scope, dst_scope):
        @T.prim_func
        def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M,), dtype)):
            with T.Kernel(1, threads=32):
                if src_scope == "fragment":
                    src = T.alloc_fragment((M, N), dtype)
                else:
                    src = T.alloc_shared((M, N), dtype)
                if dst_scope == "fragment":
                    dst = T.alloc_fragment((M,), dtype)
                else:
                    dst = T.alloc_shared((M,), dtype)
                T.copy(A, src, disable_tma=src_scope == "shared")
                if op == "sum":
                    T.fill(dst, 1)
                    T.reduce_sum(src, dst, dim=1, clear=False)
                elif op == "max":
                    T.fill(dst, -T.infinity(dtype))
                    T.reduce_max(src, dst, dim=1, clear=False)
                T.copy(dst, B)

        return main

    A = _input(M, N, str(dtype))
    B = kernel(M, N, dtype, op, src_scope, dst_scope)(A)
    ref = _ref(A, "sum") + 1 if op == "sum" else _ref(A, "max")
    close(B, ref, 1e-2, 1e-2)


def _make_finalize_reducer_kernel(block_M, block_N, dtype, op, batch):
    @T.prim_func
    def kernel(A: T.Tensor((block_M, block_N), dtype), B: T.Tensor((block_M,), dtype)):
        with T.Kernel(1, threads=256):
            o_reducer = T.alloc_reducer(block_M, dtype, op=op, replication="all")
            T.clear(o_reducer)
            A_smem = T.alloc_shared((block_M, block_N), dtype)
            T.copy(A, A_smem)
            A_frag = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(A_smem, A_frag)
            for i, j in T.Parallel(block_M, block_N):
                if op == "sum":
                    o_reducer[i] += A_frag[i, j]
                elif op == "max":
                    o_reducer[i] = T.max(o_reducer[i], A_frag[i, j])
                else:
                    o_reducer[i] = T.min(o_reducer[i], A_frag[i, j])
            T.finalize_reducer(o_reducer, batch=batch)
            T.copy(o_reducer, B)

    return kernel


# TileLang's max / min reducers start from T.clear's 0 too, so the inputs are shifted to
# one side of it and the reference includes the 0
FINALIZE_REDUCER_CASES = [
    ("sum", T.float32, 32, 16, 1),
    ("sum", T.float32, 32, 16, 4),
    ("max", T.float16, 16, 32, 1),
    ("max", T.float16, 16, 32, 8),
    ("min", T.float32, 32, 32, 1),
    ("min", T.float32, 32, 32, 16),
]


@pytest.mark.parametrize(("op", "dtype", "block_M", "block_N", "batch"),
                         slow_beyond(FINALIZE_REDUCER_CASES, 4))
def test_finalize_reducer(target, op, dtype, block_M, block_N, batch):
    A = _input(block_M, block_N, str(dtype))
    B = tl.compile(_make_finalize_reducer_kernel(block_M, block_N, dtype, op, batch),
                   out_idx=-1, pass_configs=_COMPILE_FLAGS)(A)
    a = A.astype(np.float64)
    ref = {"sum": a.sum(1), "max": np.maximum(a.max(1), 0),
           "min": np.minimum(a.min(1), 0)}[op]
    close(B, ref, 1e-2, 1e-2)


@pytest.mark.parametrize("batch", [0, -1])
def test_finalize_reducer_invalid_batch(batch):
    """TileLang's other invalid counts (above the row count, not dividing it) are limits
    of its CUDA all-reduce; a count of at least 1 has no effect here."""
    with pytest.raises(TileLangError) as info:
        tl.compile(_make_finalize_reducer_kernel(64, 64, T.float32, "sum", batch), out_idx=-1)
    diag = info.value.diagnostics[0]
    assert diag.code == "TL0390" and "batch must be at least 1" in diag.message
    assert "T.finalize_reducer(o_reducer, batch=batch)" in str(info.value)


def _make_allreduce_width_kernel(reduce_fn, M, width, threads):
    @T.prim_func
    def kernel(A: T.Tensor((M, width), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((M, width), T.float32)
            dst = T.alloc_fragment((M,), T.float32)
            T.copy(A, src)
            reduce_fn(src, dst, dim=1)
            T.copy(dst, B)

    return kernel


def _make_allreduce_dim0_scale_kernel(reduce_fn, logical_width, scale):
    @T.prim_func
    def kernel(
        A: T.Tensor((logical_width, scale), T.float32),
        B: T.Tensor((scale,), T.float32),
    ):
        with T.Kernel(1, threads=logical_width * scale):
            src = T.alloc_fragment((logical_width, scale), T.float32)
            dst = T.alloc_fragment((scale,), T.float32)
            T.copy(A, src)
            reduce_fn(src, dst, dim=0)
            T.copy(dst, B)

    return kernel


# TileLang's CUDA lowering rejects widths that are not powers of two; a block-level
# reduction here takes any width, so those cases run too
@pytest.mark.parametrize("reduce_fn", [T.reduce_sum, T.reduce_max], ids=["sum", "max"])
@pytest.mark.parametrize("width", [32, 48])
def test_allreduce_width(target, reduce_fn, width):
    M = 4
    A = RNG.standard_normal((M, width)).astype(np.float32)
    B = tl.compile(_make_allreduce_width_kernel(reduce_fn, M, width, width), out_idx=-1)(A)
    close(B, A.sum(1) if reduce_fn is T.reduce_sum else A.max(1), 1e-4, 1e-4)


@pytest.mark.parametrize(("logical_width", "scale"), [(32, 2), (48, 2)])
def test_allreduce_dim0(target, logical_width, scale):
    A = RNG.standard_normal((logical_width, scale)).astype(np.float32)
    k = tl.compile(_make_allreduce_dim0_scale_kernel(T.reduce_sum, logical_width, scale),
                   out_idx=-1)
    close(k(A), A.sum(0), 1e-4, 1e-4)


# ---- nan_propagate (test_tilelang_language_reduce_maxmin_nan.py)

def _make_reduce_kernel(reduce_fn, length, dtype, *, nan_propagate):

    @T.prim_func
    def kernel(a: T.Tensor((length,), dtype), out: T.Tensor((1,), dtype)):
        with T.Kernel(1, threads=32):
            frag = T.alloc_fragment((length,), dtype)
            out_frag = T.alloc_fragment((1,), dtype)
            T.copy(a, frag)
            reduce_fn(frag, out_frag, nan_propagate=nan_propagate)
            T.copy(out_frag, out)

    return kernel


def _make_reduce_clear_false_kernel(reduce_fn, length, dtype, *, nan_propagate):

    @T.prim_func
    def kernel(a: T.Tensor((length,), dtype), out: T.Tensor((1,), dtype)):
        with T.Kernel(1, threads=32):
            frag = T.alloc_fragment((length,), dtype)
            out_frag = T.alloc_fragment((1,), dtype)
            T.copy(a, frag)
            out_frag[0] = -1.0
            reduce_fn(frag, out_frag, clear=False, nan_propagate=nan_propagate)
            T.copy(out_frag, out)

    return kernel


NAN_CASES = [(T.reduce_max, 7, "max"), (T.reduce_min, 13, "min"), (T.reduce_absmax, 5, "absmax")]


@pytest.mark.parametrize("dtype", slow_beyond([T.float16, T.bfloat16, T.float32], 1))
@pytest.mark.parametrize("make", [_make_reduce_kernel, _make_reduce_clear_false_kernel])
@pytest.mark.parametrize("reduce_fn,at,op", slow_beyond(NAN_CASES[::-1], 2),
                         ids=[c[2] for c in NAN_CASES[::-1]])
def test_reduce_nan(target, make, reduce_fn, at, op, dtype):
    """A NaN element is skipped by default and gives NaN with nan_propagate=True."""
    length = 64
    a = np.arange(length, dtype=np.float32).astype(numpy_dtype(str(dtype)))
    a[at] = np.nan
    seed = -1.0 if make is _make_reduce_clear_false_kernel else None
    rest = np.delete(a.astype(np.float64), at)
    if seed is not None:
        rest = np.append(rest, seed)
    want = {"max": rest.max(), "min": rest.min(), "absmax": np.abs(rest).max()}[op]
    plain = tl.compile(make(reduce_fn, length, dtype, nan_propagate=False), out_idx=-1)(a)
    assert float(plain[0]) == want
    nan = tl.compile(make(reduce_fn, length, dtype, nan_propagate=True), out_idx=-1)(a)
    assert np.isnan(float(nan[0]))


@pytest.mark.parametrize("dtype", slow_beyond([T.bfloat16, T.float16], 1))
@pytest.mark.parametrize("reduce_fn,row", [(T.reduce_max, 0), (T.reduce_min, 1)])
def test_reduce_nan_rows(target, reduce_fn, row, dtype):
    """Only the row holding the NaN reduces to NaN."""
    M, N = 16, 32

    def _make_nan_reduce_kernel(reduce_fn, M, N, dtype, threads, *, nan_propagate):
        @T.prim_func
        def kernel(A: T.Tensor((M, N), dtype), B: T.Tensor((M,), dtype)):
            with T.Kernel(1, threads=threads):
                src = T.alloc_fragment((M, N), dtype)
                dst = T.alloc_fragment((M,), dtype)
                T.copy(A, src)
                reduce_fn(src, dst, dim=1, nan_propagate=nan_propagate)
                T.copy(dst, B)

        return kernel

    A = np.tile(np.arange(N, dtype=np.float32), (M, 1)).astype(numpy_dtype(str(dtype)))
    A[row, 7] = np.nan
    B = tl.compile(_make_nan_reduce_kernel(reduce_fn, M, N, dtype, threads=256,
                                           nan_propagate=True), out_idx=-1)(A)
    isnan = np.isnan(B.astype(np.float32))
    assert isnan[row] and isnan.sum() == 1


# ---- finalize_reducer around a one-thread store (`if T.get_thread_binding() == 0:`,
# TileLang's guard; a block program stores once anyway)

def test_finalize_reducer_short_parallel_extent(target):
    extent = 8
    threads = 128

    @T.prim_func
    def kernel(A: T.Tensor((extent,), T.float32), B: T.Tensor((1,), T.float32)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((extent,), T.float32)
            T.copy(A, src)
            total = T.alloc_reducer((1,), T.float32, replication="all")
            T.clear(total)
            for i in T.Parallel(extent):
                total[0] += src[i]
            T.finalize_reducer(total)
            if T.get_thread_binding() == 0:
                B[0] = total[0]

    A = np.arange(1, extent + 1).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1, pass_configs=_COMPILE_FLAGS)(A)
    close(B, A.sum().reshape(1), atol=0, rtol=0)


def test_finalize_reducer_mixed_parallel_extents(target):
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
            total = T.alloc_reducer((1,), T.float32, replication="all")
            T.clear(total)
            for i in T.Parallel(extent):
                total[0] += a_frag[i]
            for j in T.Parallel(2 * extent):
                total[0] += b_frag[j]
            T.finalize_reducer(total)
            if T.get_thread_binding() == 0:
                C[0] = total[0]

    A = np.arange(1, extent + 1).astype(np.float32)
    B = np.arange(1, 2 * extent + 1).astype(np.float32)
    C = tl.compile(kernel, out_idx=-1, pass_configs=_COMPILE_FLAGS)(A, B)
    close(C, (A.sum() + B.sum()).reshape(1), atol=0, rtol=0)


def test_finalize_reducer_epoch_inside_pipelined_loop(target):
    """Legacy online-softmax: a full v1 epoch (fill / RMW updates / in-place
    finalize / direct reads) reopens once per iteration of a T.Pipelined
    tile loop, seeding the max from the running maximum."""
    K, BLOCK_K, threads = 512, 128, 128

    @T.prim_func
    def kernel(A: T.Tensor((K,), T.float32), B: T.Tensor((1,), T.float32)):
        with T.Kernel(1, threads=threads):
            a_shared = T.alloc_shared((BLOCK_K,), T.float32)
            a_frag = T.alloc_fragment((BLOCK_K,), T.float32)
            running_max = T.alloc_fragment((1,), T.float32)
            running_sum = T.alloc_fragment((1,), T.float32)
            running_max[0] = -T.infinity(T.float32)
            running_sum[0] = 0.0
            for k_tile in T.Pipelined(T.ceildiv(K, BLOCK_K), num_stages=2):
                T.copy(A[k_tile * BLOCK_K], a_shared)
                T.copy(a_shared, a_frag)

                new_max = T.alloc_reducer((1,), T.float32, op="max", replication="all")
                T.fill(new_max, running_max[0])
                for i in T.Parallel(BLOCK_K):
                    new_max[0] = T.max(new_max[0], a_frag[i])
                T.finalize_reducer(new_max)

                new_sum = T.alloc_reducer((1,), T.float32, replication="all")
                T.fill(new_sum, 0.0)
                for i in T.Parallel(BLOCK_K):
                    new_sum[0] += T.exp(a_frag[i] - new_max[0])
                T.finalize_reducer(new_sum)

                running_sum[0] = T.exp(running_max[0] - new_max[0]) * running_sum[0] + new_sum[0]
                running_max[0] = new_max[0]
            if T.get_thread_binding() == 0:
                B[0] = T.log(running_sum[0]) + running_max[0]

    A = RNG.standard_normal((K,)).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1, pass_configs=_COMPILE_FLAGS)(A)
    close(B, np.log(np.exp(A.astype(np.float64)).sum()).reshape(1), atol=1e-4, rtol=1e-4)


def test_finalize_reducer_default_alloc_v1_syntax(target):
    """Pre-v2 default: T.alloc_reducer without `replication` used with v1
    syntax (T.clear / `acc[i] +=` / in-place finalize / direct reads) must
    keep compiling — the buffer is v2-allocated but never touched by a v2
    op, so the legacy shim canonicalizes it."""
    BLOCK, K, threads = 64, 8, 128

    @T.prim_func
    def kernel(
        G: T.Tensor((BLOCK, K), T.float32),
        Y: T.Tensor((BLOCK, K), T.float32),
        O: T.Tensor((BLOCK, K), T.float32),
    ):
        with T.Kernel(1, threads=threads):
            g_frag = T.alloc_fragment((BLOCK, K), T.float32)
            y_frag = T.alloc_fragment((BLOCK, K), T.float32)
            out_frag = T.alloc_fragment((BLOCK, K), T.float32)
            reducer = T.alloc_reducer((BLOCK,), T.float32)
            T.copy(G, g_frag)
            T.copy(Y, y_frag)
            T.clear(reducer)
            for i, j in T.Parallel(BLOCK, K):
                reducer[i] += g_frag[i, j] * y_frag[i, j]
            T.finalize_reducer(reducer)
            for i, j in T.Parallel(BLOCK, K):
                out_frag[i, j] = g_frag[i, j] - reducer[i]
            T.copy(out_frag, O)

    G = RNG.standard_normal((BLOCK, K,)).astype(np.float32)
    Y = RNG.standard_normal((BLOCK, K,)).astype(np.float32)
    O = tl.compile(kernel, out_idx=-1, pass_configs=_COMPILE_FLAGS)(G, Y)
    ref = G - (G * Y).sum(axis=1, keepdims=True)
    close(O, ref, atol=1e-4, rtol=1e-4)


def test_finalize_reducer_conditional_finalize(target):
    """Legacy epoch opened at block scope, updated and finalized inside one
    arm of a block-uniform conditional (the vllm sum_smaller_probs pattern):
    the finalize runs 0 or 1 times per init, and skipped blocks never read
    the reducer."""
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
            total = T.alloc_reducer((1,), T.float32, replication="all")
            T.fill(total, 0.0)
            if S[bx] < 0:
                if T.get_thread_binding() == 0:
                    B[bx] = 0.0
            else:
                for i in T.Parallel(extent):
                    total[0] += src[i]
                T.finalize_reducer(total)
                if T.get_thread_binding() == 0:
                    B[bx] = total[0]

    A = np.arange(1, extent + 1).astype(np.float32)
    S = np.array([-1, 1], np.int32)
    B = tl.compile(kernel, out_idx=-1, pass_configs=_COMPILE_FLAGS)(A, S)
    expected = np.array([0.0, A.sum()])
    close(B, expected, atol=0, rtol=0)


def _make_partial_reduce_kernel():
    block_threads = 128
    fragment_threads = 64
    rows = 4
    width = 512
    vector_size = 8

    @tilelang.jit(
        out_idx=1,
        target="cuda",
        pass_configs={
            tilelang.PassConfigKey.TL_DISABLE_DATA_RACE_CHECK: True,
            tilelang.PassConfigKey.TL_DISABLE_THREAD_STORAGE_SYNC: True,
        },
    )
    def make_kernel():
        def x_layout(i: int, j: int) -> tuple[int, int]:
            return j // vector_size, i * vector_size + j % vector_size

        @T.prim_func
        def fragment_reduce(
            x: T.Tensor((rows, width), "float32"),
            out: T.Tensor((rows, width), "float32"),
        ) -> None:
            with T.Kernel(1, threads=block_threads):
                x_frag = T.alloc_fragment((rows, width), "float32")
                sum_frag = T.alloc_fragment((rows,), "float32")
                T.annotate_layout(
                    {
                        x_frag: T.Fragment(x_frag.shape, forward_fn=x_layout),
                        sum_frag: T.Fragment(
                            sum_frag.shape,
                            forward_fn=lambda i, rep: (rep, i),
                            replicate=fragment_threads,
                        ),
                    }
                )
                for i, j in T.Parallel(rows, width):
                    x_frag[i, j] = x[i, j]
                T.reduce_sum(x_frag, sum_frag, dim=1)
                for i, j in T.Parallel(rows, width):
                    out[i, j] = x_frag[i, j] / sum_frag[i]

        return fragment_reduce

    return make_kernel()


def _make_two_group_reduce_kernel(block_threads: int = 128, group_stride: int = 64):
    @tilelang.jit(out_idx=1, target="cuda")
    def make_kernel():
        def x_layout(i: int, j: int) -> tuple[int, int]:
            return i * group_stride + j // 8, j % 8

        @T.prim_func
        def two_group_reduce(
            x: T.Tensor((2, 512), "float32"),
            out: T.Tensor((2,), "float32"),
        ) -> None:
            with T.Kernel(1, threads=block_threads):
                x_frag = T.alloc_fragment((2, 512), "float32")
                out_frag = T.alloc_fragment((2,), "float32")
                T.annotate_layout(
                    {
                        x_frag: T.Fragment(x_frag.shape, forward_fn=x_layout),
                        out_frag: T.Fragment(
                            out_frag.shape,
                            forward_fn=lambda i, rep: (i * group_stride + rep, 0),
                            replicate=64,
                        ),
                    }
                )
                for i, j in T.Parallel(2, 512):
                    x_frag[i, j] = x[i, j]
                T.reduce_sum(x_frag, out_frag, dim=1)
                for i in T.Parallel(2):
                    out[i] = out_frag[i]

        return two_group_reduce

    return make_kernel()


def _make_offset_thread_reduce_kernel():
    """Reduction whose participating threads occupy a non-zero thread range,
    i.e. tx in [32, 96) of a 128-thread block."""

    @tilelang.jit(
        out_idx=1,
        target="cuda",
        pass_configs={
            tilelang.PassConfigKey.TL_DISABLE_DATA_RACE_CHECK: True,
            tilelang.PassConfigKey.TL_DISABLE_THREAD_STORAGE_SYNC: True,
        },
    )
    def make_kernel():
        thread_offset = 32
        fragment_threads = 64
        rows = 2
        width = 512
        vector_size = 8

        @T.prim_func
        def offset_thread_reduce(
            x: T.Tensor((rows, width), "float32"),
            out: T.Tensor((rows, width), "float32"),
        ) -> None:
            with T.Kernel(1, threads=128):
                x_frag = T.alloc_fragment((rows, width), "float32")
                sum_frag = T.alloc_fragment((rows,), "float32")
                T.annotate_layout(
                    {
                        x_frag: T.Fragment(
                            x_frag.shape,
                            forward_fn=lambda i, j: (
                                thread_offset + j // vector_size,
                                i * vector_size + j % vector_size,
                            ),
                        ),
                        sum_frag: T.Fragment(
                            sum_frag.shape,
                            forward_fn=lambda i, rep: (thread_offset + rep, i),
                            replicate=fragment_threads,
                        ),
                    }
                )
                for i, j in T.Parallel(rows, width):
                    x_frag[i, j] = x[i, j]
                T.reduce_sum(x_frag, sum_frag, dim=1)
                for i, j in T.Parallel(rows, width):
                    out[i, j] = x_frag[i, j] / sum_frag[i]

        return offset_thread_reduce

    return make_kernel()


# ---- reductions over fragments with TileLang's thread layouts (T.Fragment hints; the
# partial-thread-barrier cases): the values, on both targets

def test_reduce_partial_thread_layout(target):
    x = RNG.random((4, 512)).astype(np.float32)
    out = _make_partial_reduce_kernel()(x)
    close(out, x / x.sum(1, keepdims=True), 1e-5, 1e-6)


@pytest.mark.parametrize("block_threads", [128, 256])
def test_reduce_two_groups(target, block_threads):
    x = RNG.random((2, 512)).astype(np.float32)
    close(_make_two_group_reduce_kernel(block_threads=block_threads)(x), x.sum(1), 1e-5, 1e-5)


def test_reduce_offset_thread_range(target):
    x = RNG.random((2, 512)).astype(np.float32)
    close(_make_offset_thread_reduce_kernel()(x), x / x.sum(1, keepdims=True), 1e-5, 1e-6)


def test_reduce_fp8_to_float16_absmax(target):
    @T.prim_func
    def kernel(A: T.Tensor((4, 32), T.float8_e4m3fn), B: T.Tensor((4,), T.float16)):
        with T.Kernel(1, threads=32):
            src = T.alloc_fragment((4, 32), T.float8_e4m3fn)
            dst = T.alloc_fragment((4,), T.float16)
            T.copy(A, src)
            T.reduce_absmax(src, dst, dim=1)
            T.copy(dst, B)

    base = np.linspace(-2.0, 2.0, 128).astype(np.float16).reshape(4, 32)
    base[0, 3], base[1, 17], base[2, 31], base[3, 0] = -7.0, 5.5, -3.25, 4.0
    A = base.astype(ml_dtypes.float8_e4m3fn)
    B = tl.compile(kernel, out_idx=-1)(A)
    np.testing.assert_array_equal(B, np.abs(A.astype(np.float16)).max(1))
