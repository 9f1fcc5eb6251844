"""The tcsim code generator: program shape, pipelining, rasterisation, artifacts, and
the diagnostics for what it does not support."""
from __future__ import annotations

import numpy as np
import pytest

from tilelang.codegen.tcsim import compile_module
from tilelang.diagnostics import TileLangError
from tilelang.frontend import parse_module
from tilelang.driver import make_options
from tilelang.driver.stages import lower
from tilelang.runtime.tcsim import run
from tilelang.targets.tcsim.artifact import load
from tilelang.targets.tcsim.asm import disassemble

from .examples_tcsim import artifact


def compile_text(text: str, config="tiny", **kw):
    module = parse_module(text, "k.tl")
    return compile_module(tile_ir(module), config, **kw)


def tile_ir(module):
    """The tile IR after `simplify`, before the tcsim pipeline plans its arenas."""
    return lower(module, make_options(target="tcsim"), until="simplify")


def test_pipelined_gemm_has_a_ring_and_runs_loads_ahead():
    prog = artifact("gemm", NUM_STAGES=3).program
    assert prog.buffer("A_s").stages == 3 and prog.buffer("B_s").stages == 3
    assert prog.buffer("C_f").stages == 1
    ops = [i.op for i in prog.code]
    loop = ops.index("LOOP")
    assert ops[:loop].count("DMA.LD") == 4            # prologue: 2 iterations x (A, B)
    mma = next(i for i in prog.code if i.op == "MMA")
    assert {w.sem.index.value for w in mma.attr("wait")} >= {0}   # waits on DMA_IN
    text = disassemble(prog)
    assert "DMA.LD A_s[r" in text


def test_single_stage_gemm_has_no_ring():
    prog = artifact("gemm", NUM_STAGES=1).program
    assert prog.buffer("A_s").stages == 1
    ops = [i.op for i in prog.code]
    assert ops[:ops.index("LOOP")].count("DMA.LD") == 0


def test_pipelining_overlaps_loads_with_mma():
    shapes = [((512, 512), "float16"), ((512, 512), "float16"), ((512, 512), "float32")]
    one = run(artifact("gemm", NUM_STAGES=1, in_dtype="float16"), *shapes, mode="timing")
    three = run(artifact("gemm", NUM_STAGES=3, in_dtype="float16"), *shapes, mode="timing")
    assert three.cycles < 0.8 * one.cycles
    assert three.engine_busy["MMA"] > one.engine_busy["MMA"]


def test_raster_option_orders_blocks_and_keeps_results():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((300, 64)).astype(np.float32)
    b = rng.standard_normal((64, 600)).astype(np.float32)
    c = np.zeros((300, 600), np.float32)
    art = artifact("gemm", raster=2)
    assert art.program.raster == 2
    run(art, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_artifact_from_the_compiler_saves_loads_and_runs(tmp_path):
    art = artifact("vector_add")
    path = tmp_path / "vadd.tcsim"
    art.save(path)
    back = load(path)
    a = np.arange(3000, dtype=np.float32)
    c = np.zeros_like(a)
    run(back, a, a, c)
    np.testing.assert_array_equal(c, 2 * a)
    assert back.program == art.program


UNSUPPORTED = '''
import tilelang.language as T
N = T.dynamic("N")

@T.prim_func
def shift(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
    with T.Kernel(T.ceildiv(N, 64), threads=128) as bx:
        X = T.alloc_fragment((65,), "float32")
        Y = T.alloc_fragment((64,), "float32")
        T.copy(A[bx * 64], X)
        for i in T.Parallel(64):
            Y[2 * i - i] = X[i]
        T.copy(Y, B[bx * 64])
'''


def test_unsupported_index_is_a_diagnostic_with_a_position():
    with pytest.raises(TileLangError) as e:
        compile_text(UNSUPPORTED)
    d = e.value.diagnostics[0]
    assert d.code == "TL0806" and "loop variable" in d.message
    assert d.primary is not None and d.primary.line == 12


BIG = '''
import tilelang.language as T
N = T.dynamic("N")

@T.prim_func
def big(A: T.Tensor((N, 16384), "float32"), B: T.Tensor((N, 16384), "float32")):
    with T.Kernel(T.ceildiv(N, 256), threads=128) as bx:
        X = T.alloc_shared((256, 16384), "float32")
        T.copy(A[bx * 256, 0], X)
        T.copy(X, B[bx * 256, 0])
'''


def test_program_too_big_for_the_machine_is_tl0801():
    with pytest.raises(TileLangError) as e:
        compile_text(BIG)                       # 16 MB of SMEM on a 4 MB core
    assert e.value.code == "TL0801" and "SMEM" in str(e.value)


def test_unknown_configs():
    with pytest.raises(TileLangError) as e:
        compile_text(BIG, "b200_like")
    assert e.value.code == "TL0805"


@pytest.mark.parametrize("stages", [1, 3])
def test_every_wait_of_compiled_gemm_matters(stages):
    """Drop the waits of one instruction of the compiled pipelined GEMM at a time: the
    race detector must object whenever the instruction needed them."""
    from dataclasses import replace
    from tilelang.runtime.tcsim.errors import RaceError
    prog = artifact("gemm", NUM_STAGES=stages, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16).program
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 80)).astype(np.float32)
    b = rng.standard_normal((80, 64)).astype(np.float32)
    caught = 0
    for i, ins in enumerate(prog.code):
        waits = ins.attr("wait")
        if not waits or ins.op not in ("MMA", "DMA.ST"):
            continue
        attrs = tuple((k, v) for k, v in ins.attrs if k != "wait")
        broken = replace(prog, code=prog.code[:i] + (replace(ins, attrs=attrs),)
                         + prog.code[i + 1:])
        with pytest.raises(RaceError):
            run(broken, a, b, np.zeros((64, 64), np.float32))
        caught += 1
    assert caught >= 2


def test_partial_regions_and_offset_indices():
    """Sub-regions of on-chip buffers in T.copy and T.gemm, `j + 32` in T.Parallel."""
    from pathlib import Path
    path = Path(__file__).with_name("views.tl")
    art = compile_module(tile_ir(parse_module(path.read_text(), str(path))), "tiny")["views"]
    text = disassemble(art.program)
    assert "X<0:32,32:64>" in text and "C_f<16:32,0:16>" in text
    rng = np.random.default_rng(4)
    n = 70
    a = rng.standard_normal((n, 64)).astype(np.float32)
    w = rng.standard_normal((32, 16)).astype(np.float32)
    b, c = np.zeros((n, 64), np.float32), np.zeros((n, 16), np.float32)
    run(art, a, w, b, c)
    x = np.concatenate([a[:, 32:], a[:, :32]], axis=1).astype(np.float64)
    want_b = np.concatenate([2 * x[:, :32] + x[:, 32:], x[:, 32:] - x[:, :32]], axis=1)
    np.testing.assert_allclose(b, want_b, rtol=1e-6, atol=1e-6)
    rows = np.arange(n) % 32
    want_c = np.where((rows < 16)[:, None], x[:, :32] @ w, x[:, 32:] @ w)
    np.testing.assert_allclose(c, want_c, rtol=1e-5, atol=1e-5)


def test_alloc_var_scalars_and_data_dependent_loop_bounds():
    from pathlib import Path
    path = Path(__file__).with_name("scalars.tl")
    arts = compile_module(tile_ir(parse_module(path.read_text(), str(path))), "tiny")
    a = np.arange(100, dtype=np.float32)
    b = np.zeros_like(a)
    run(arts["count_scale"], a, b)
    np.testing.assert_array_equal(b, a * 8 + 3)        # s = 2^3, n = 0 + 1 + 2
    rng = np.random.default_rng(9)
    x = rng.standard_normal((7, 64)).astype(np.float32)
    lengths = np.array([0, 1, 2, 3, 4, 2, 1], np.int32)
    out = np.zeros((7, 16), np.float32)
    run(arts["chunk_sums"], x, lengths, out)
    want = np.stack([x[r, :16 * n].reshape(n, 16).sum(axis=0) if n else np.zeros(16)
                     for r, n in enumerate(lengths)])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
