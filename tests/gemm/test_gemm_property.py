"""GEMM from the library and from examples/gemm.tl against numpy, on hypothesis-drawn
ragged shapes, transposes and dtypes; fp8 by DeepGEMM's similarity measure.

Block sizes are drawn from a few fixed ones (each distinct block compiles once) chosen to
exercise every tail: blocks that are not multiples of the register tile, blocks larger
than the matrix, and the library's own choice.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings, strategies as st

import tilelang
from tilelang.ops import (dequantize_per_block, dequantize_per_token, fp8_gemm, gemm,
                          quantize_per_block, quantize_per_token)

ROOT = Path(__file__).resolve().parents[2]
DIM = st.integers(1, 600)
BLOCKS = st.sampled_from([None, (30, 40, 24), (64, 48, 64), (7, 33, 5)])
TOL = {"fp32": 1e-5, "fp16": 1e-2, "bf16": 1e-2}
ROUND = {"fp32": np.float32, "fp16": np.float16}


def _inputs(m, n, k, ta, tb, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    return a, b


def _rel_err(got, want) -> float:
    return float(np.abs(got - want).max() / max(1.0, np.abs(want).max()))


@settings(max_examples=25, deadline=None)
@given(m=DIM, n=DIM, k=DIM, ta=st.booleans(), tb=st.booleans(), block=BLOCKS,
       precision=st.sampled_from(["fp32", "fp16", "bf16"]), seed=st.integers(0, 99))
def test_library_gemm_matches_numpy(m, n, k, ta, tb, block, precision, seed):
    a, b = _inputs(m, n, k, ta, tb, seed)
    got = gemm(a, b, precision=precision, block=block, transpose_a=ta, transpose_b=tb)
    opa, opb = (a.T if ta else a), (b.T if tb else b)
    if precision == "bf16":
        import ml_dtypes
        opa, opb = (x.astype(ml_dtypes.bfloat16) for x in (opa, opb))
    else:
        opa, opb = (x.astype(ROUND[precision]) for x in (opa, opb))
    want = opa.astype(np.float64) @ opb.astype(np.float64)
    assert got.shape == (m, n) and got.dtype == np.float32
    # the inputs are rounded the same way on both sides: only fp32 summation differs
    assert _rel_err(got, want) < 1e-5 * max(1, k) ** 0.5 + TOL["fp32"]


@settings(max_examples=15, deadline=None)
@given(m=DIM, n=DIM, k=DIM,
       in_dtype=st.sampled_from(["float32", "float16", "bfloat16", "float64"]),
       seed=st.integers(0, 99))
def test_example_gemm_matches_numpy(m, n, k, in_dtype, seed):
    from tilelang.dtypes import numpy_dtype
    acc = "float64" if in_dtype == "float64" else "float32"
    kern = tilelang.compile(str(ROOT / "examples" / "gemm.tl"), defines={
        "in_dtype": in_dtype, "out_dtype": acc, "accum_dtype": acc})
    a, b = _inputs(m, n, k, False, False, seed)
    a, b = a.astype(numpy_dtype(in_dtype)), b.astype(numpy_dtype(in_dtype))
    c = np.zeros((m, n), acc)
    kern(a, b, c)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert _rel_err(c, want) < 1e-5 * max(1, k) ** 0.5 + 1e-5


def _similarity_gap(x, y) -> float:
    x, y = x.astype(np.float64), y.astype(np.float64)
    return float(1 - 2 * (x * y).sum() / max(1e-300, (x * x + y * y).sum()))


@settings(max_examples=15, deadline=None)
@given(m=DIM, n=DIM, k=DIM, out_dtype=st.sampled_from(["float32", "bfloat16"]),
       seed=st.integers(0, 99))
def test_fp8_gemm_meets_deepgemm_similarity(m, n, k, out_dtype, seed):
    a, b = _inputs(m, n, k, False, False, seed)
    qa, sa = quantize_per_token(a)
    qb, sb = quantize_per_block(b)
    got = fp8_gemm(qa, sa, qb, sb, out_dtype=out_dtype)
    want = dequantize_per_token(qa, sa) @ dequantize_per_block(qb, sb)
    assert got.shape == (m, n)
    assert _similarity_gap(got, want) < 1e-3


def test_fp8_quantisation_round_trips_within_e4m3_precision():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((130, 300)) * np.linspace(0.01, 100, 300)).astype(np.float32)
    for quant, dequant in ((quantize_per_token, dequantize_per_token),
                           (quantize_per_block, dequantize_per_block)):
        q, s = quant(x)
        assert np.isfinite(q.astype(np.float32)).all()
        assert _similarity_gap(dequant(q, s), x) < 1e-3


def test_precision_fp8_through_gemm():
    a, b = _inputs(70, 90, 260, False, False, 1)
    assert _similarity_gap(gemm(a, b, precision="fp8"), a.astype(np.float64) @ b) < 1e-3
