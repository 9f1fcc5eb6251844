"""Every example kernel of the spine compiled for tcsim:tiny and simulated, against the
numpy references with the tolerances of the CPU target's example tests, for drawn
(ragged) shapes; and against the CPU target's own output."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tilelang.runtime.tcsim import run

from .examples_tcsim import artifact, assert_close, assert_sum_close, np_dtype, random, ref

SETTINGS = settings(max_examples=6, deadline=None)
RNG = np.random.default_rng(1234)


@SETTINGS
@given(st.integers(1, 5000), st.sampled_from(["float32", "float16"]))
def test_vector_add(n, dtype):
    a, b = random(RNG, n, dtype), random(RNG, n, dtype)
    c = np.zeros(n, np_dtype(dtype))
    run(artifact("vector_add", dtype=dtype), a, b, c)
    want = (a.astype(np.float32) + b.astype(np.float32)).astype(np_dtype(dtype))
    np.testing.assert_array_equal(c, want)


@SETTINGS
@given(st.integers(1, 70), st.integers(1, 300))
def test_bias_gelu(m, n):
    x, bias = random(RNG, (m, n), "float32"), random(RNG, n, "float32")
    y = np.zeros((m, n), np.float32)
    run(artifact("bias_gelu"), x, bias, y)
    assert_close(y, ref.bias_gelu(x, bias), rtol=1e-5, atol=1e-6)


@SETTINGS
@given(st.integers(1, 20), st.integers(1, 600), st.sampled_from(["float32", "bfloat16"]))
def test_softmax(m, n, dtype):
    x = random(RNG, (m, n), dtype, 3.0)
    y = np.zeros((m, n), np_dtype(dtype))
    run(artifact("softmax", dtype=dtype), x, y)
    tol = dict(rtol=1e-5, atol=1e-9) if dtype == "float32" else dict(rtol=1e-2, atol=1e-4)
    assert_close(y, ref.softmax(x), **tol)


@SETTINGS
@given(st.integers(1, 20), st.integers(1, 600), st.sampled_from(["float32", "bfloat16"]))
def test_rmsnorm(m, n, dtype):
    x, w = random(RNG, (m, n), dtype), random(RNG, n, dtype)
    y = np.zeros((m, n), np_dtype(dtype))
    run(artifact("rmsnorm", dtype=dtype), x, w, y)
    tol = dict(rtol=1e-5, atol=1e-7) if dtype == "float32" else dict(rtol=1e-2, atol=1e-2)
    assert_close(y, ref.rmsnorm(x, w), **tol)


@SETTINGS
@given(st.integers(1, 100), st.integers(1, 300))
def test_row_and_column_sums(m, n):
    x = random(RNG, (m, n), "float32")
    rows, cols = np.zeros(m, np.float32), np.zeros(n, np.float32)
    run(artifact("reduce", "row_sum"), x, rows)
    run(artifact("reduce", "col_sum"), x, cols)
    ax = np.abs(x.astype(np.float64))
    assert_sum_close(rows, ref.row_sum(x), ax.sum(axis=1), 3e-5, "row_sum")
    assert_sum_close(cols, ref.col_sum(x), ax.sum(axis=0), 3e-5, "col_sum")


@SETTINGS
@given(st.integers(1, 100), st.integers(1, 100))
def test_transpose(m, n):
    a = random(RNG, (m, n), "float32")
    b = np.zeros((n, m), np.float32)
    run(artifact("transpose"), a, b)
    np.testing.assert_array_equal(b, a.T)


@SETTINGS
@given(st.integers(1, 300), st.integers(1, 300), st.integers(1, 200),
       st.sampled_from(["float32", "float16", "bfloat16"]), st.sampled_from([1, 2, 3]),
       st.sampled_from([(128, 128, 32), (32, 64, 16), (64, 16, 64)]))
def test_gemm(m, n, k, dtype, stages, tile):
    a, b = random(RNG, (m, k), dtype), random(RNG, (k, n), dtype)
    c = np.zeros((m, n), np.float32)
    bm, bn, bk = tile
    run(artifact("gemm", in_dtype=dtype, NUM_STAGES=stages, BLOCK_M=bm, BLOCK_N=bn,
                 BLOCK_K=bk), a, b, c)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert_sum_close(c, ref.gemm(a, b), np.abs(a64) @ np.abs(b64), 2e-5, "gemm")


@SETTINGS
@given(st.integers(1, 150), st.integers(1, 150), st.integers(1, 400))
def test_splitk_gemm_accumulates(m, n, k):
    a, b = random(RNG, (m, k), "float32"), random(RNG, (k, n), "float32")
    c0 = random(RNG, (m, n), "float32")
    c = c0.copy()
    run(artifact("splitk_gemm"), a, b, c)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert_sum_close(c, ref.gemm(a, b) + c0, np.abs(a64) @ np.abs(b64) + np.abs(c0), 2e-5,
                     "C += A @ B")


@SETTINGS
@given(st.integers(1, 2), st.integers(1, 2), st.integers(1, 100), st.integers(1, 100),
       st.booleans())
def test_flash_attention(batch, heads, sq, skv, causal):
    if causal:
        skv = max(skv, sq)             # every query sees at least one key
    q = random(RNG, (batch, heads, sq, 64), "float32")
    k = random(RNG, (batch, heads, skv, 64), "float32")
    v = random(RNG, (batch, heads, skv, 64), "float32")
    o = np.zeros_like(q)
    run(artifact("flash_attention", CAUSAL=causal), q, k, v, o)
    want = ref.flash_attention(q, k, v, causal=causal)
    assert_close(o, want, rtol=1e-4, atol=1e-4 * float(np.abs(v).max()))


# ----------------------------------------------------------------------------- vs the CPU

CASES = [
    ("vector_add", None, lambda r: [random(r, 1500, "float32"), random(r, 1500, "float32")],
     lambda: np.zeros(1500, np.float32)),
    ("softmax", None, lambda r: [random(r, (9, 300), "float32")],
     lambda: np.zeros((9, 300), np.float32)),
    ("gemm", None, lambda r: [random(r, (130, 70), "float32"), random(r, (70, 150), "float32")],
     lambda: np.zeros((130, 150), np.float32)),
    ("flash_attention", None,
     lambda r: [random(r, (1, 2, 70, 64), "float32"), random(r, (1, 2, 90, 64), "float32"),
                random(r, (1, 2, 90, 64), "float32")],
     lambda: np.zeros((1, 2, 70, 64), np.float32)),
]


@pytest.mark.parametrize("name, kernel, inputs, output", CASES, ids=[c[0] for c in CASES])
def test_tcsim_matches_the_cpu_target(name, kernel, inputs, output):
    from tilelang.driver import compile_file
    from .examples_tcsim import EXAMPLES
    args = inputs(np.random.default_rng(5))
    cpu_out, sim_out = output(), output()
    compile_file(EXAMPLES / f"{name}.tl")[kernel or name](*args, cpu_out)
    run(artifact(name, kernel), *args, sim_out)
    np.testing.assert_allclose(sim_out, cpu_out, rtol=1e-4, atol=1e-5)


@SETTINGS
@given(st.integers(1, 200), st.integers(1, 300), st.integers(1, 300))
def test_gemm_bias_relu(m, n, k):
    a, b = random(RNG, (m, k), "float32"), random(RNG, (k, n), "float32")
    bias = random(RNG, n, "float32")
    c = np.zeros((m, n), np.float32)
    run(artifact("gemm_bias_relu"), a, b, bias, c)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    # relu is 1-Lipschitz: the bound of the sum holds after it
    assert_sum_close(c, ref.gemm_bias_relu(a, b, bias),
                     np.abs(a64) @ np.abs(b64) + np.abs(bias), 2e-5, "relu(A @ B + bias)")


@SETTINGS
@given(st.integers(1, 300), st.integers(1, 300), st.integers(1, 100), st.booleans())
def test_gemm_epilogue_with_and_without_the_arena_plan(m, n, k, reuse):
    a, b = random(RNG, (m, k), "float16"), random(RNG, (k, n), "float16")
    c = np.zeros((m, n), np.float16)
    art = artifact("gemm_epilogue", reuse=reuse)
    run(art, a, b, c)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = a64 @ b64
    # the float32 sum's bound, plus the final rounding to float16 (half an ulp: 2^-11)
    err = np.abs(c.astype(np.float64) - want)
    assert (err <= 2e-5 * (np.abs(a64) @ np.abs(b64)) + 2.0 ** -11 * np.abs(want)
            + 1e-7).all()


def test_arena_plan_shrinks_shared_memory():
    planned = artifact("gemm_epilogue").program.resources()["SMEM"]
    unplanned = artifact("gemm_epilogue", reuse=False).program.resources()["SMEM"]
    # C_s (32 KB fp16) takes no memory of its own: it overlays A_s / B_s's old place
    assert planned < unplanned


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parents[2]
                                         / "examples").glob("*.tl")), ids=lambda p: p.stem)
def test_every_example_compiles_for_tcsim(path):
    """Every example (new ones included) compiles for tcsim:tiny; the tests above check
    the numerics of each."""
    from tilelang.codegen.tcsim import compile_module
    from tilelang.frontend import parse_module
    from .examples_tcsim import tile_ir
    arts = compile_module(tile_ir(parse_module(path.read_text(), str(path))), "tiny")
    assert arts and all(a.program.code for a in arts.values())


# ----------------------------------------------------------------------------- library kernels

def _library(name: str, **defines):
    """A kernel of tilelang/ops compiled for tcsim:tiny (the same .tl the CPU runs)."""
    from pathlib import Path
    import tilelang.ops
    from tilelang.codegen.tcsim import compile_module
    from tilelang.frontend import parse_module
    from .examples_tcsim import tile_ir
    path = Path(tilelang.ops.__file__).parent / f"{name}.tl"
    module = parse_module(path.read_text(), str(path), defines=defines or None)
    return compile_module(tile_ir(module), "tiny")[name]


@settings(max_examples=4, deadline=None)
@given(st.integers(1, 200), st.integers(1, 300), st.integers(1, 300))
def test_library_fp8_gemm_block_scaled(m, n, k):
    from tilelang.ops import fp8
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    qa, sa = fp8.quantize_per_token(a)
    qb, sb = fp8.quantize_per_block(b)
    c = np.zeros((m, n), np.float32)
    run(_fp8_artifact(), qa, sa, qb, sb, c)
    want = fp8.dequantize_per_token(qa, sa).astype(np.float64) @ \
        fp8.dequantize_per_block(qb, sb).astype(np.float64)
    # DeepGEMM's similarity measure, 1 - 2 sum(xy) / sum(x^2 + y^2), within 1e-3 for fp8
    diff = 1 - 2 * (c * want).sum() / max((c * c + want * want).sum(), 1e-30)
    assert diff < 1e-3


_FP8 = []


def _fp8_artifact():
    if not _FP8:
        _FP8.append(_library("fp8_gemm"))
    return _FP8[0]


def test_library_gemm():
    a = random(RNG, (150, 300), "float32")
    b = random(RNG, (300, 270), "float32")
    c = np.zeros((150, 270), np.float32)
    run(_library("gemm"), a, b, c)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert_sum_close(c, a64 @ b64, np.abs(a64) @ np.abs(b64), 2e-5, "ops/gemm.tl")
