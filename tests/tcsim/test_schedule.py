"""T.Pipelined(order=, stage=, group=): the manual software pipeline of a
FlashAttention-3-style kernel, lowered for tcsim (codegen/tcsim/schedule.py)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tilelang.diagnostics import TileLangError
from tilelang.ir.nodes import For
from tilelang.ir.visitor import rewrite
from tilelang.runtime.tcsim import run

from .examples_tcsim import tile_ir

ROOT = Path(__file__).resolve().parents[2]
FA_WS = ROOT / "benchmarks" / "fidelity" / "flash_attention_ws.tl"
SMALL = dict(DIM=64, BLOCK_M=64, BLOCK_N=64, dtype="float32")


def _compile(path, config="tiny", strip=False, **defines):
    from tilelang.codegen.tcsim import compile_module
    from tilelang.frontend import parse_module
    module = tile_ir(parse_module(Path(path).read_text(), str(path), defines=defines))
    if strip:                     # the same loops as plain two-stage pipelines
        module = rewrite(module, lambda n: replace(n, annotations=(("num_stages", 2),))
                         if isinstance(n, For) and n.kind == "pipelined" else None)
    (art,) = compile_module(module, config).values()
    return art


def _attention(q, k, v, causal):
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("causal", [False, True])
def test_scheduled_attention_matches_numpy(causal):
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, 2, 192, 64)).astype(np.float32) for _ in range(3))
    o = np.zeros_like(q)
    run(_compile(FA_WS, CAUSAL=causal, **SMALL), q, k, v, o)
    np.testing.assert_allclose(o, _attention(q, k, v, causal), rtol=1e-5, atol=1e-5)


def test_buffers_crossing_stages_get_a_copy_per_step():
    p = _compile(FA_WS, **SMALL).program
    names = {b.name for b in p.buffers}
    # K, V (producers), P and the row rescale (softmax -> PV a step later): two copies
    for buf in ("K_s", "V_s", "P", "rescale"):
        assert {f"{buf}__c0", f"{buf}__c1"} <= names and buf not in names
    # S and the row statistics stay within one stage: one copy
    assert {"S", "m", "l"} <= names and "S__c0" not in names


def test_the_schedule_overlaps_the_softmax_with_the_multiplies():
    shapes = [((1, 4, 1024, 128), "bfloat16")] * 4
    staged = run(_compile(FA_WS, "h100_like"), *shapes, mode="timing")
    plain = run(_compile(FA_WS, "h100_like", strip=True), *shapes, mode="timing")
    assert staged.cycles < 0.85 * plain.cycles


@pytest.mark.parametrize("loop, message", [
    ("T.Pipelined(4, order=[0, 1], stage=[0])", "one entry per group"),
    ("T.Pipelined(4, order=[0], stage=[0], group=[[0]])", "each of the loop's 2"),
    ("T.Pipelined(4, stage=[0, 1])", "both `order=` and `stage=`"),
])
def test_bad_schedules_are_diagnosed(tmp_path, loop, message):
    src = f"""
import tilelang.language as T

@T.prim_func
def k(A: T.Tensor((256, 64), "float32"), B: T.Tensor((256, 64), "float32")):
    with T.Kernel(1, threads=128) as bx:
        X = T.alloc_shared((64, 64), "float32")
        for i in {loop}:
            T.copy(A[i * 64, 0], X)
            T.copy(X, B[i * 64, 0])
"""
    path = tmp_path / "k.tl"
    path.write_text(src)
    with pytest.raises(TileLangError) as info:
        _compile(path)
    assert info.value.code == "TL0806" and message in str(info.value)


def test_a_copy_loop_with_a_schedule_runs_its_stages_in_order(tmp_path):
    """Load (stage 0) and store (stage 1) of a tile a step apart: every tile arrives."""
    path = tmp_path / "copy.tl"
    path.write_text("""
import tilelang.language as T

@T.prim_func
def k(A: T.Tensor((320, 64), "float32"), B: T.Tensor((320, 64), "float32")):
    with T.Kernel(1, threads=128) as bx:
        X = T.alloc_shared((64, 64), "float32")
        for i in T.Pipelined(5, order=[0, 1], stage=[0, 1]):
            T.copy(A[i * 64, 0], X)
            T.copy(X, B[i * 64, 0])
""")
    a = np.arange(320 * 64, dtype=np.float32).reshape(320, 64)
    b = np.zeros_like(a)
    art = _compile(path)
    run(art, a, b)
    np.testing.assert_array_equal(a, b)
    assert {"X__c0", "X__c1"} <= {x.name for x in art.program.buffers}
