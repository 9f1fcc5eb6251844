"""Code generation for a split-buffer (Ascend-like) machine: buffers placed by role,
staging copies where an engine cannot reach, results as on the GPU-like configs."""
from __future__ import annotations

import numpy as np
import pytest

from tilelang.runtime.tcsim import run

from .examples_tcsim import artifact, assert_close, assert_sum_close, random, ref

RNG = np.random.default_rng(11)


def levels(art) -> dict:
    return {b.name: b.level for b in art.program.buffers}


def test_gemm_places_buffers_by_role_and_stages_operands():
    art = artifact("gemm", config="ascend_like", in_dtype="float16", NUM_STAGES=2)
    lv = levels(art)
    assert lv["A_s"] == "L1" and lv["B_s"] == "L1" and lv["C_f"] == "L0C"
    assert lv["A_s__l0a"] == "L0A" and lv["B_s__l0b"] == "L0B"
    assert lv["C_f__out"] == "UB"                       # DMA cannot read L0C
    ops = [i.op for i in art.program.code]
    assert ops.count("COPY") == 3                       # two operand stagings + drain
    a, b = random(RNG, (200, 90), "float16"), random(RNG, (90, 150), "float16")
    c = np.zeros((200, 150), np.float32)
    run(art, a, b, c, config="ascend_like")
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert_sum_close(c, a64 @ b64, np.abs(a64) @ np.abs(b64), 2e-5, "gemm on ascend_like")


def test_flash_attention_on_ascend_like():
    art = artifact("flash_attention", config="ascend_like")
    lv = levels(art)
    assert lv["S"] == "L0C" and lv["acc_o"] == "L0C" and lv["m"] == "UB"
    assert lv["P_s"] == "L1" and lv["Q_s"] == "L1"
    q = random(RNG, (1, 2, 50, 64), "float32")
    k = random(RNG, (1, 2, 77, 64), "float32")
    v = random(RNG, (1, 2, 77, 64), "float32")
    o = np.zeros_like(q)
    run(art, q, k, v, o, config="ascend_like")
    assert_close(o, ref.flash_attention(q, k, v), rtol=1e-4, atol=1e-4 * float(np.abs(v).max()))


def test_elementwise_kernels_keep_shared_buffers_in_ub():
    art = artifact("transpose", config="ascend_like")
    assert levels(art)["tile"] == "UB"                 # read by VEC, not by the cube
    a = random(RNG, (45, 70), "float32")
    b = np.zeros((70, 45), np.float32)
    run(art, a, b, config="ascend_like")
    np.testing.assert_array_equal(b, a.T)
    x = random(RNG, (9, 300), "float32")
    y = np.zeros_like(x)
    run(artifact("softmax", config="ascend_like"), x, y, config="ascend_like")
    assert_close(y, ref.softmax(x), rtol=1e-5, atol=1e-9)


def test_gemm_split_along_k_to_fit_l0():
    """A 128x256 fp16 A tile (64 KB) does not fit half of L0A: the MMA runs over K
    slices, each staged on its own."""
    art = artifact("gemm", config="ascend_like", in_dtype="float16", BLOCK_M=128,
                   BLOCK_N=128, BLOCK_K=256, NUM_STAGES=2)
    assert [i.op for i in art.program.code].count("MMA") > 1
    for b in art.program.buffers:
        if b.level in ("L0A", "L0B"):
            assert b.nbytes() <= 32 * 1024
    a, b = random(RNG, (150, 600), "float16"), random(RNG, (600, 130), "float16")
    c = np.zeros((150, 130), np.float32)
    run(art, a, b, c, config="ascend_like")
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert_sum_close(c, a64 @ b64, np.abs(a64) @ np.abs(b64), 2e-5, "K-split gemm")


def test_cpu_sized_epilogue_does_not_fit_ub():
    from tilelang.diagnostics import TileLangError
    with pytest.raises(TileLangError) as e:        # CPU-sized fp32 tiles
        artifact("gemm_bias_relu", config="ascend_like")
    assert e.value.code == "TL0801"
