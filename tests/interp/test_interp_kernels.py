"""The reference interpreter agrees with the kernels whose integer inputs must be
consistent (so the differential check gets them instead of drawing them): the MoE
example's grouped GEMM (pairs grouped by expert, rows gathered in a T.Parallel body,
atomic adds) and the library's DeepGEMM-style block-scaled FP8 GEMM."""
from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tilelang.fuzz.differential import check

ROOT = Path(__file__).resolve().parents[2]
# kernels checked here rather than in test_interp_examples.py (drawn inputs)
GIVEN_INPUTS = ("grouped_gemm",)


def _grouped_gemm_inputs(rng):
    rows, hidden, ffn = 5, 20, 19
    count = np.array([4, 0, 6], np.int32)               # an expert with no pair
    start = np.array([0, 4, 4], np.int32)
    pairs = int(count.sum())
    return [rng.uniform(-1, 1, (rows, hidden)).astype(ml_dtypes.bfloat16),
            rng.uniform(-1, 1, (len(count), hidden, ffn)).astype(np.float32),
            rng.integers(0, rows, pairs).astype(np.int32),      # rows repeat: atomics
            rng.uniform(0, 1, pairs).astype(np.float32), start, count,
            rng.uniform(-1, 1, (rows, ffn)).astype(np.float32)]


def test_grouped_gemm_on_the_cpu():
    """(tcsim takes no row gathered inside a T.Parallel body: TL0806.)"""
    text = (ROOT / "examples/moe/grouped_gemm.tl").read_text()
    verdict = check(text, {}, kernel="grouped_gemm", targets=("cpu",), stages="bisect",
                    defines={"BLOCK_M": 4, "BLOCK_N": 8, "BLOCK_K": 8},
                    inputs=_grouped_gemm_inputs(np.random.default_rng(0)),
                    filename="grouped_gemm.tl")
    assert verdict.kind == "ok", str(verdict)


@pytest.mark.parametrize("target", ["cpu", "tcsim:tiny"])
def test_fp8_gemm_on_both_targets(target):
    """Ragged M, N, K over 8-wide scale blocks (the kernel's 128, made small)."""
    rng = np.random.default_rng(1)
    m, n, k = 13, 20, 27
    kb, nb = -(-k // 8), -(-n // 8)
    inputs = [rng.uniform(-2, 2, (m, k)).astype(ml_dtypes.float8_e4m3fn),
              rng.uniform(0.5, 2, (m, kb)).astype(np.float32),
              rng.uniform(-2, 2, (k, n)).astype(ml_dtypes.float8_e4m3fn),
              rng.uniform(0.5, 2, (kb, nb)).astype(np.float32),
              np.zeros((m, n), np.float32)]
    text = (ROOT / "tilelang/ops/fp8_gemm.tl").read_text()
    verdict = check(text, {}, kernel="fp8_gemm", targets=(target,), stages="bisect",
                    defines={"BLOCK_M": 4, "BLOCK_N": 8, "SCALE_K": 8}, inputs=inputs,
                    filename="fp8_gemm.tl")
    assert verdict.kind == "ok", str(verdict)
