"""TileLang's profiler API: do_bench, get_profiler, assert_allclose, run_once, supply types."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang
from tilelang.profiler import TensorSupplyType, do_bench
from tilelang.profiler.supply import InputSupply, MissingSizes, fill, tensor_supply_type

from .kernels import AXPY, GATHER, GEMM


# ----------------------------------------------------------------------------- do_bench

def test_do_bench_counts_and_modes():
    calls = []
    ms = do_bench(lambda: calls.append(1), _n_warmup=3, _n_repeat=7)
    assert len(calls) == 1 + 2 + 7          # the estimate is the first warm-up call
    assert ms >= 0
    q = do_bench(lambda: sum(range(1000)), _n_repeat=20, quantiles=[0.0, 0.5, 1.0])
    assert len(q) == 3 and q[0] <= q[1] <= q[2]
    from tilelang.profiler.bench import measure, summarize
    times = measure(lambda: sum(range(1000)), n_repeat=20)     # one set of calls:
    lo, mid, hi = (summarize(times, m) for m in ("min", "median", "max"))
    assert len(times) == 20 and 0 < lo <= mid <= hi           # the modes agree on it


def test_do_bench_times_what_it_runs():
    import time
    ms = do_bench(lambda: time.sleep(0.004), _n_warmup=1, _n_repeat=3, return_mode="min")
    assert 3.5 < ms < 50


def test_do_bench_budget_in_milliseconds():
    calls = []
    do_bench(lambda: calls.append(1), warmup=0, rep=0)
    assert len(calls) == 2                   # the estimate, then one timed call


def test_do_bench_bad_arguments():
    with pytest.raises(ValueError, match="return_mode"):
        do_bench(lambda: None, return_mode="average")
    with pytest.raises(ValueError, match="backend"):
        do_bench(lambda: None, backend="cuda")
    with pytest.raises(ValueError, match="quantiles"):
        do_bench(lambda: None, _n_repeat=2, quantiles=[1.5])


def test_early_stop_returns_the_estimate():
    import time
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.003)
    ms = do_bench(slow, _n_repeat=50, early_stop_baseline=0.5)
    assert len(calls) == 1 and ms > 0.5


# ----------------------------------------------------------------------------- supply types

def test_supply_type_values_are_tilelangs():
    assert [t.value for t in TensorSupplyType] == [1, 2, 3, 4, 5, 6, 7]
    assert tilelang.TensorSupplyType is TensorSupplyType
    assert tensor_supply_type("randn") is TensorSupplyType.Randn
    assert tensor_supply_type(5) is TensorSupplyType.Zero
    with pytest.raises(ValueError, match="Integer"):
        tensor_supply_type("gaussian")


@settings(max_examples=30, deadline=None)
@given(kind=st.sampled_from(list(TensorSupplyType)),
       dtype=st.sampled_from(["float32", "float16", "bfloat16", "int32", "int8", "uint8",
                              "float8_e4m3fn", "float8_e4m3", "bool"]),
       shape=st.lists(st.integers(1, 5), min_size=0, max_size=3).map(tuple))
def test_fill_ranges(kind, dtype, shape):
    from tilelang import dtypes
    rng = np.random.default_rng(0)
    arr = fill(rng, shape, dtype, kind)
    assert arr.shape == shape and arr.dtype == dtypes.numpy_dtype(dtype)
    values = arr.astype(np.float64)
    if kind is TensorSupplyType.Zero:
        assert not values.any()
    elif kind is TensorSupplyType.One:
        assert (values == 1).all()
    elif dtype == "bool":
        assert set(np.unique(values)) <= {0.0, 1.0}
    elif kind is TensorSupplyType.Integer or dtypes.is_int(dtype):
        assert (values >= -2).all() and (values <= 2).all()
        assert (values == np.round(values)).all()
    elif kind in (TensorSupplyType.Uniform, TensorSupplyType.Auto):
        assert (np.abs(values) <= 1.0).all()


@pytest.mark.parametrize("n, rows", [(100, 7), (5, 1000), (64, 64)])
def test_index_inputs_are_realistic(n, rows):
    func = tilelang.compile(GATHER)._func()
    ins = InputSupply(func, TensorSupplyType.Auto).make({"N": n, "R": rows}, skip=(2,))
    idx = ins[1]
    assert idx.dtype == np.int32 and idx.shape == (n,)
    assert idx.min() >= 0 and idx.max() < rows           # every index lands in the table
    assert len(np.unique(idx)) == min(n, rows)           # spread, never all zeros


def test_missing_sizes_name_the_symbols():
    func = tilelang.compile(GEMM)._func()
    with pytest.raises(MissingSizes, match=r"M, K, N.*dynamic_symbolic_constraints"):
        InputSupply(func).make({})


# ----------------------------------------------------------------------------- profiler

def _gemm(**defines):
    return tilelang.compile(GEMM, out_idx=[-1], defines=defines)


def test_profiler_of_a_jit_kernel():
    import tilelang.language as T

    @tilelang.jit(out_idx=[-1])
    def matmul(M, N, K, block_M, block_N, block_K):
        @T.prim_func
        def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((N, K), "float32"),
                 C: T.Tensor((M, N), "float32")):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
                A_s = T.alloc_shared((block_M, block_K), "float32")
                B_s = T.alloc_shared((block_N, block_K), "float32")
                C_l = T.alloc_fragment((block_M, block_N), "float32")
                T.clear(C_l)
                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                    T.copy(A[by * block_M, k * block_K], A_s)
                    T.copy(B[bx * block_N, k * block_K], B_s)
                    T.gemm(A_s, B_s, C_l, transpose_B=True)
                T.copy(C_l, C[by * block_M, bx * block_N])
        return main

    kernel = matmul(100, 72, 40, 32, 32, 16)
    profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Auto)
    assert profiler.do_bench(warmup=1, rep=5) > 0
    assert profiler.do_bench(lambda A, B: A @ B.T, warmup=1, rep=5) > 0
    profiler.assert_allclose(lambda A, B: A.astype(np.float64) @ B.T.astype(np.float64),
                             atol=1e-4, rtol=1e-4)
    out = profiler.run_once()
    assert out.shape == (100, 72) and out.dtype == np.float32 and np.abs(out).sum() > 0
    with pytest.raises(AssertionError, match=r"differ beyond atol=0.0001"):
        profiler.assert_allclose(lambda A, B: A @ B.T + 1.0, atol=1e-4, rtol=1e-4)


def test_profiler_symbolic_sizes():
    profiler = _gemm().get_profiler(sizes={"M": 65, "N": 33, "K": 17})
    out = profiler.run_once()
    assert out.shape == (65, 33)
    profiler.assert_allclose(lambda a, b: a.astype(np.float64) @ b, atol=1e-4, rtol=1e-4)
    ms = profiler.do_bench(n_repeat=2, dynamic_symbolic_constraints={"M": 8, "N": 8, "K": 8})
    assert ms > 0
    with pytest.raises(MissingSizes, match="dynamic_symbolic_constraints"):
        _gemm().get_profiler().run_once()


def test_profiler_mismatch_ratio_allows_a_few():
    profiler = _gemm().get_profiler(sizes={"M": 10, "N": 10, "K": 10})

    def ref(a, b):
        c = a.astype(np.float64) @ b
        c[0, 0] += 100.0                     # one element of 100 is wrong
        return c
    profiler.assert_allclose(ref, atol=1e-4, rtol=1e-4, max_mismatched_ratio=0.02)
    with pytest.raises(AssertionError, match=r"1 of 100 elements"):
        profiler.assert_allclose(ref, atol=1e-4, rtol=1e-4, max_mismatched_ratio=0.0)


def test_profiler_in_place_kernel_compares_written_tensors():
    kernel = tilelang.compile(AXPY)
    profiler = kernel.get_profiler(sizes={"N": 3000})
    profiler.assert_allclose(lambda x, y: x * 2.0 + y, atol=1e-6, rtol=1e-6)
    with pytest.raises(AssertionError):
        profiler.assert_allclose(lambda x, y: x * 3.0 + y, atol=1e-6, rtol=1e-6)


def test_profiler_consistency_check():
    _gemm().get_profiler(sizes={"M": 70, "N": 70, "K": 70}).assert_consistent(repeat=3)


def test_profiler_bad_result_idx():
    from tilelang.profiler.profiler import Profiler
    with pytest.raises(ValueError, match="result_idx"):
        Profiler(_gemm(), result_idx=[5])


def test_profiler_on_tcsim_reports_simulated_time():
    from tilelang.profiler.profiler import Profiler
    # a tcsim kernel writes its outputs in place; the profiler allocates and returns them
    kernel = tilelang.compile(GEMM, target="tcsim:tiny", defines={"dtype": "bfloat16"})
    profiler = Profiler(kernel, result_idx=[-1], sizes={"M": 64, "N": 64, "K": 64})
    a = profiler.do_bench()
    b = profiler.do_bench()
    assert a == b > 0                                       # deterministic
    rk = profiler.runtime_kernel
    assert a == pytest.approx(rk.last_report.time_s * 1e3)
    profiler.assert_allclose(lambda A, B: A.astype(np.float64) @ B.astype(np.float64),
                             atol=1e-2, rtol=1e-2)
