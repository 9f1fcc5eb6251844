"""Several blocks resident on one core: each with its own scalar unit, semaphores,
buffers and engine queues, sharing the core's engines; residency limited by memory."""
from __future__ import annotations

import numpy as np
import pytest

from tilelang.runtime.tcsim import run
from tilelang.targets.tcsim.config import H100_LIKE, TINY
from tilelang.runtime.tcsim.errors import DeadlockError
from tilelang.runtime.tcsim.sim import resident_blocks

from .examples_tcsim import artifact
from .progs import program

LOAD = """
    MULI r4, r0, 64
    DMA.LD X, A[r4, 0] box=64x64 signal=s[0]
    SEM.WAIT s[0], 0
    HALT"""


def _load_program(buf="X SMEM float32 [64, 64]"):
    return program(LOAD, params=["A tensor float32 [M, 64]"], symbols=["M r3"], bufs=[buf],
                   sems=["s 1"], grid="ceildiv(M, 64) | 1 | 1")


def test_resident_blocks_hide_latency():
    cfg1, cfg4 = TINY.with_(dma_latency=2000), TINY.with_(dma_latency=2000,
                                                           max_blocks_per_core=4)
    args = [((64 * 16, 64), "float32")]
    one = run(_load_program(), *args, config=cfg1, mode="timing")
    four = run(_load_program(), *args, config=cfg4, mode="timing")
    assert one.blocks_per_core == 1 and four.blocks_per_core == 4
    assert one.waves == 4 and four.waves == 1
    assert four.cycles < 0.55 * one.cycles       # four latencies overlap per core


def test_residency_is_limited_by_memory_and_threads():
    cfg = TINY.with_(max_blocks_per_core=8)
    assert resident_blocks(_load_program(), cfg) == 8
    big = _load_program("X SMEM float32 [64, 64] stages=160")     # 2.5 MB of 4 MB
    assert resident_blocks(big, cfg) == 1
    gemm = artifact("gemm", config="h100_like", in_dtype="bfloat16", BLOCK_M=128,
                    BLOCK_N=256, BLOCK_K=64, NUM_STAGES=1).program
    # a 128 KB accumulator plus 128 threads' registers: one block per SM, as on an H100
    assert gemm.threads == 128 and resident_blocks(gemm, H100_LIKE) == 1
    assert resident_blocks(gemm, H100_LIKE.with_(thread_bytes=0)) == 2


def test_resident_blocks_compute_the_same_results():
    rng = np.random.default_rng(2)
    cfg = TINY.with_(max_blocks_per_core=3)
    a = rng.standard_normal((300, 70)).astype(np.float32)
    b = rng.standard_normal((70, 260)).astype(np.float32)
    c = np.zeros((300, 260), np.float32)
    art = artifact("gemm", BLOCK_M=64, BLOCK_N=64, NUM_STAGES=2)
    r = run(art, a, b, c, config=cfg, trace=None)
    assert r.blocks_per_core == 3
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    x = rng.standard_normal((37, 300)).astype(np.float32)
    y = np.zeros_like(x)
    run(artifact("softmax"), x, y, config=cfg)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-9)


def test_memory_bound_kernel_reaches_hbm_bandwidth_on_h100_like():
    n = 1 << 22
    r = run(artifact("vector_add", config="h100_like"), ((n,), "float32"), ((n,), "float32"),
            ((n,), "float32"), config="h100_like", mode="timing")
    assert r.blocks_per_core > 1 and r.roofline_bound == "memory"
    # 90 % of what HBM sustains (the roofline uses the peak)
    assert r.roofline_fraction >= 0.9 * H100_LIKE.hbm_efficiency


def test_deadlock_names_the_block_slot():
    p = program("SEM.WAIT s[0], 0\nHALT", sems=["s 1"], params=["A tensor float32 [G]"],
                symbols=["G r3"], grid="G | 1 | 1")
    with pytest.raises(DeadlockError) as e:
        run(p, np.zeros(8, np.float32), config=TINY.with_(max_blocks_per_core=2))
    assert any("core 0.1 scalar waits on s@0" in w for w in e.value.waits)


def test_trace_has_a_block_row_per_resident_slot(tmp_path):
    import json
    path = tmp_path / "t.json"
    run(_load_program(), ((64 * 8, 64), "float32"), mode="timing",
        config=TINY.with_(max_blocks_per_core=2), trace=str(path))
    events = json.loads(path.read_text())["traceEvents"]
    rows = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert {"BLOCK", "BLOCK 1", "DMA_IN"} <= rows
    blocks = [e for e in events if e["ph"] == "X" and e["tid"] in (0, 11)]
    assert len(blocks) == 8
