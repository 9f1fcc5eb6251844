"""The simulator's figures, pinned: what the engine computes for a spread of programs
(pipelined, single-stage and clustered GEMMs, scheduled and plain attention, several
resident blocks, a memory-bound kernel, scalar loads, the tiny config). A faster engine
must reproduce every count exactly: a speed-up may change how the simulation runs,
never what it predicts. The values are what the engine of commit 7e2729b (before the
speed-up) computes for these programs as today's compiler emits them, with today's
clock tolerance (a codegen or clock-policy change re-pins from that engine, as its
commit says; fp8_gemm_tiny, whose dtype that engine no longer reads, from the
current one);
benchmarks/tcsim_speed.py runs both engines on the same artifacts."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tilelang.runtime.tcsim import run

from .examples_tcsim import artifact, tile_ir
from .test_schedule import FA_WS, _compile

ROOT = Path(__file__).resolve().parents[2]
G1024 = [((1024, 1024), "bfloat16"), ((1024, 1024), "bfloat16"), ((1024, 1024), "float32")]
TILE = dict(in_dtype="bfloat16", BLOCK_M=128, BLOCK_N=256, BLOCK_K=64)


def _fp8():
    from tilelang.codegen.tcsim import compile_module
    from tilelang.frontend import parse_module
    p = ROOT / "tilelang" / "ops" / "fp8_gemm.tl"
    return compile_module(tile_ir(parse_module(p.read_text(), str(p))), "tiny")["fp8_gemm"]


def _fp8_args():
    rng = np.random.default_rng(0)
    return [((448, 512), "float8_e4m3fn"), rng.random((448, 4)).astype(np.float32),
            ((512, 256), "float8_e4m3fn"), rng.random((4, 2)).astype(np.float32),
            ((448, 256), "float32")]


CASES = {
    "gemm_pipelined": (lambda: artifact("gemm", config="h100_like", raster=4, NUM_STAGES=4,
                                        **TILE), lambda: G1024, {}),
    "gemm_single": (lambda: artifact("gemm", config="h100_like", NUM_STAGES=1, **TILE),
                    lambda: G1024, {}),
    "gemm_cluster": (lambda: artifact("gemm", config="h100_like", raster=4, cluster=(1, 2),
                                      NUM_STAGES=4, **TILE), lambda: G1024, {}),
    "gemm_waves": (lambda: artifact("gemm", config="h100_like", raster=8, in_dtype="bfloat16",
                                    BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, NUM_STAGES=3),
                   lambda: [((2048, 1024), "bfloat16"), ((1024, 2048), "bfloat16"),
                            ((2048, 2048), "float32")], {}),
    "fa_ws": (lambda: _compile(FA_WS, "h100_like"),
              lambda: [((2, 4, 512, 128), "bfloat16")] * 4, {}),
    "fa_ws_causal": (lambda: _compile(FA_WS, "h100_like", CAUSAL=True),
                     lambda: [((2, 4, 512, 128), "bfloat16")] * 4, {}),
    "fa_plain": (lambda: artifact("flash_attention", config="h100_like", dtype="float16",
                                  BLOCK_M=128, BLOCK_N=64, DIM=128, CAUSAL=True),
                 lambda: [((2, 4, 512, 128), "float16")] * 4, {}),
    "fa_resident": (lambda: artifact("flash_attention", config="h100_like", dtype="float16",
                                     BLOCK_M=64, BLOCK_N=64, DIM=64),
                    lambda: [((1, 4, 512, 64), "float16")] * 4, {}),
    "vector_add": (lambda: artifact("vector_add", config="h100_like"),
                   lambda: [((1 << 22,), "float32")] * 3, {}),
    "fp8_gemm_tiny": (_fp8, _fp8_args, {"config": "tiny"}),
    "softmax_tiny": (lambda: artifact("softmax"), lambda: [((300, 700), "float32")] * 2,
                     {"config": "tiny"}),
}

# (cycles, HBM bytes, L2 bytes, shared bytes, useful FLOPs, issued FLOPs, the clock the
#  tensor-core duty implies (GHz), scalar + engine instructions)
PINNED = {
    "gemm_pipelined": (20628.517710372267, 8388608.0, 29360128.0, 50331648.0,
                       2147483648.0, 2147483648.0, 1.785023134786871, 20672),
    "gemm_single": (37330.16314578514, 8388608.0, 29360128.0, 50331648.0, 2147483648.0,
                    2147483648.0, 1.8051459414473303, 16352),
    "gemm_cluster": (20628.517710372267, 8388608.0, 20971520.0, 50331648.0, 2147483648.0,
                     2147483648.0, 1.785023134786871, 20672),
    "gemm_waves": (42978.29917386388, 25165824.0, 150994944.0, 268435456.0, 8589934592.0,
                   8589934592.0, 1.7436488806266879, 152832),
    "fa_ws": (17395.64068093635, 4194304.0, 10485760.0, 22020096.0, 1073741824.0,
              1073741824.0, 1.8016911312366564, 23392),
    "fa_ws_causal": (18307.342097149536, 4194304.0, 7340032.0, 14155776.0, 671088640.0,
                     671088640.0, 1.813041875758332, 20240),
    "fa_plain": (22077.36106048884, 4194304.0, 7340032.0, 19398656.0, 671088640.0,
                 671088640.0, 1.8159377132544252, 24704),
    "fa_resident": (9652.34799641686, 1048576.0, 4718592.0, 12845056.0, 268435456.0,
                    268435456.0, 1.8165059054006292, 30880),
    "vector_add": (31653.5846481876, 50331648.0, 50331648.0, 0.0, 0, 0, 1.83, 139264),
    "fp8_gemm_tiny": (70294.0, 833536.0, 1456128.0, 4915200.0, 117440512.0, 117440512.0,
                      1.0, 2160),
    "softmax_tiny": (46152.0, 1689600.0, 2524800.0, 0.0, 0, 0, 1.0, 14060),
}


def figures(report) -> tuple:
    b = report.bytes
    return (report.cycles, b["hbm"], b["l2"], b["smem"], report.flops,
            report.issued_flops, report.duty_clock_ghz, report.instructions)


@pytest.mark.parametrize("name", list(CASES))
def test_engine_reproduces_the_pinned_figures(name):
    build, args, kw = CASES[name]
    assert figures(run(build(), *args(), mode="timing", **kw)) == PINNED[name]


@pytest.mark.parametrize("name", ["fa_ws", "gemm_waves", "softmax_tiny"])
def test_the_interpreter_and_the_general_loop_count_the_same(name, monkeypatch):
    """Without the compiled resume points (the scalar unit interprets after a full
    queue) and with the general event loop instead of the timing one, every figure
    is the same: both are ways of running, not parts of the model."""
    from tilelang.runtime.tcsim import decode, events, runs
    monkeypatch.setattr(runs, "RESUME_BUDGET", 0)
    monkeypatch.setattr(decode, "_DECODED", {})
    monkeypatch.setattr(events, "run_timing", events.run_general)
    build, args, kw = CASES[name]
    assert figures(run(build(), *args(), mode="timing", **kw)) == PINNED[name]


@pytest.mark.parametrize("name", ["fa_ws", "gemm_pipelined", "fa_resident"])
def test_the_scalar_unit_shortcuts_count_the_same(name, monkeypatch):
    """A unit stopped by a full queue blocks at once where coming back could only block
    it, and a unit woken by a pop refills the queue at the pop where its step could
    only do that: with both off (it always comes back, its step runs at the end of the
    time's events) every figure is the same, and with them on they are taken."""
    from tilelang.runtime.tcsim import decode, events, machine
    build, args, kw = CASES[name]
    taken = []
    at_pop = events._resume_at_pop
    monkeypatch.setattr(events, "_resume_at_pop",
                        lambda core, now, resume: (taken.append(now), at_pop(core, now, resume)))
    assert figures(run(build(), *args(), mode="timing", **kw)) == PINNED[name]
    if name == "fa_ws":
        assert taken
    monkeypatch.setattr(machine, "EARLY_BLOCK", False)
    monkeypatch.setattr(decode, "_refills", lambda code, cycles: None)
    monkeypatch.setattr(decode, "_DECODED", {})
    taken.clear()
    assert figures(run(build(), *args(), mode="timing", **kw)) == PINNED[name]
    assert not taken


def test_a_unit_at_a_full_dma_queue_blocks_while_the_transfer_cannot_end(monkeypatch):
    """A unit stopped at a full DMA queue, whose engine's one transfer cannot have moved
    its bytes by the unit's time, blocks at once: taken in a pipelined GEMM, with every
    figure pinned (the shortcut test above turns it off)."""
    from tilelang.runtime.tcsim import machine
    build, args, kw = CASES["gemm_pipelined"]
    taken = []
    full_past = machine.full_past

    def spy(eng, t, share):
        out = full_past(eng, t, share)
        if out and not eng.solo_fixed:
            taken.append(t)
        return out
    monkeypatch.setattr(machine, "full_past", spy)
    assert figures(run(build(), *args(), mode="timing", **kw)) == PINNED["gemm_pipelined"]
    assert taken


def test_a_unit_at_a_halt_blocks_while_its_work_cannot_have_drained(monkeypatch):
    """A unit reaching HALT ahead of the clock, with an instruction still queued that
    cannot complete by the unit's time, blocks at once instead of coming back to find
    its work in flight: taken in a streaming kernel, every figure pinned (with
    EARLY_BLOCK off, the shortcut test above, it comes back)."""
    from tilelang.runtime.tcsim import machine
    build, args, kw = CASES["vector_add"]
    taken = []
    busy_past = machine.Core._busy_past

    def spy(core, t, now):
        out = busy_past(core, t, now)
        taken.append(out)
        return out
    monkeypatch.setattr(machine.Core, "_busy_past", spy)
    assert figures(run(build(), *args(), mode="timing", **kw)) == PINNED["vector_add"]
    assert any(taken)


@pytest.mark.parametrize("name", ["gemm_pipelined", "softmax_tiny"])
def test_rebasing_the_l2_clock_inside_a_dma_start_keeps_every_figure(name, monkeypatch):
    """A compiled start writes L2's first touch of a tile out (L2._miss_tile), its
    clock rebase included: with a rebase every few dozen sectors, the same figures."""
    from tilelang.runtime.tcsim import l2
    build, args, kw = CASES[name]
    monkeypatch.setattr(l2, "REBASE", 40)
    assert figures(run(build(), *args(), mode="timing", **kw)) == PINNED[name]


# rows [r0, r1) of each 16-row tile, r1 read at run time: the load and the store are
# stopped short (tests/constructs/test_dynamic_slices.py checks the data)
TAIL_COPY = '''import tilelang.language as T

N = T.dynamic("N")


@T.prim_func
def tail_copy(X: T.Tensor((N, 8), "float32"), ends: T.Tensor((N,), "int32"),
              Y: T.Tensor((N, 8), "float32")):
    with T.Kernel(T.ceildiv(N, 16), threads=32) as bx:
        X_s = T.alloc_shared((16, 8), "float32")
        r1 = T.min(bx * 16 + ends[bx], N)
        T.copy(X[bx * 16:r1, 0:8], X_s)
        T.copy(X_s, Y[bx * 16:r1, 0:8])
'''


def _tail_copy():
    from tilelang.codegen.tcsim import compile_module
    from tilelang.frontend import parse_module
    art = compile_module(tile_ir(parse_module(TAIL_COPY, "tail_copy.py")), "tiny")["tail_copy"]
    rng = np.random.default_rng(1)
    ends = np.zeros(61, np.int32)
    ends[:4] = [16, 3, 0, 9]
    return art, [rng.random((61, 8)).astype(np.float32), ends, np.zeros((61, 8), np.float32)]


@pytest.mark.parametrize("name", ["softmax_tiny", "gemm_cluster", "fp8_gemm_tiny",
                                  "fa_resident", "tail_copy"])
def test_the_compiled_dma_starts_count_what_the_general_start_counts(name, monkeypatch):
    """Each DMA instruction's start is generated with its constants written in
    (dma.compiled_starts); with every start the general one instead, ragged, stopped,
    multicast and resident-block programs count the same."""
    from tilelang.runtime.tcsim import dma
    if name == "tail_copy":
        def go():
            art, args = _tail_copy()
            return figures(run(art, *args, mode="timing", config="tiny"))
    else:
        build, args, kw = CASES[name]

        def go():
            return figures(run(build(), *args(), mode="timing", **kw))
    compiled = go()
    monkeypatch.setattr(dma, "compiled_starts", lambda sim, general: [general] * len(sim.code))
    assert go() == compiled
    if name in PINNED:
        assert compiled == PINNED[name]


def _branchy():
    """A loop whose body fills the vector queue inside both arms of an IF / ELSE (the
    scalar unit resumes inside a then-branch and an else-branch) and after it."""
    from .progs import program
    vecs = "\n".join(["VEC.EXP2 Y, X shape=64x64"] * 6)
    return program(f"""
        MOV r1, 0
        LOOP 6
        MOD r2, r1, 2
        ADDI r1, r1, 1
        IF r2
        {vecs}
        MOV r3, 1
        ELSE
        {vecs}
        {vecs}
        MOV r3, 2
        ENDIF
        {vecs}
        ADDI r4, r3, 1
        ENDLOOP
        HALT""", bufs=["X RF float32 [64, 64]", "Y RF float32 [64, 64]"])


def test_resume_points_inside_branches_count_what_the_interpreter_counts(monkeypatch):
    from tilelang.runtime.tcsim import decode, runs
    compiled = figures(run(_branchy(), mode="timing", config="tiny"))
    monkeypatch.setattr(runs, "RESUME_BUDGET", 0)
    monkeypatch.setattr(decode, "_DECODED", {})
    assert figures(run(_branchy(), mode="timing", config="tiny")) == compiled
    # MOV, LOOP, HALT; each iteration MOD, ADDI, IF, the six after the branch, ADDI,
    # ENDLOOP, and a then-branch (6 + MOV + ELSE) or an else-branch (12 + MOV + ENDIF)
    assert compiled[-1] == 3 + 3 * (11 + 8) + 3 * (11 + 14)


def _load_then_full():
    """A loop body whose compiled region, resumed where a pop of the vector queue woke
    the unit, dispatches a vector op, issues a scalar load (LDG) and stops at the next
    vector op: the queue is full again and the engine busy for 64 cycles, so nothing can
    pop it by the unit's time (machine.full_past), but the load is in flight."""
    from .progs import program
    vec = "VEC.EXP2 Y, X shape=64x64"
    body = "\n".join([vec] * 5 + ["LDG r5, S[0]", vec, "VEC.MOV Z, r5 shape=1"])
    return program(f"LOOP 6\n{body}\nENDLOOP\nHALT", params=["S tensor float32 [4]"],
                   bufs=["X RF float32 [64, 64]", "Y RF float32 [64, 64]",
                         "Z RF float32 [1]"])


def test_a_unit_stopped_with_a_load_in_flight_comes_back_in_both_loops(monkeypatch):
    """Core._stop_at_full blocks a unit early only with no scalar load in flight; the
    timing loop's STEP handler, resuming a compiled region that issued an LDG, must
    take the same decision (it once blocked early there). Both loops make the same
    scalar-unit visits while a load is in flight, among them visits at a full queue
    whose engine is busy past the visit (the ones an early block would skip), and
    count the same figures and stalls (pinned)."""
    from tilelang.runtime.tcsim import events, machine
    visits = []
    step = machine.Core.step

    def spy(core, now):
        if core.loading:
            d = core.code[core.pc]
            idle = d.engine >= 0 and len(core.queues[d.engine]) >= core.depth and \
                machine.full_past(core.engines[d.engine], now, core.sim.transfer_share)
            visits.append((now, core.pc, idle))
        step(core, now)

    def once():
        visits.clear()
        r = run(_load_then_full(), np.arange(4, dtype=np.float32), mode="timing",
                config="tiny")
        return figures(r), r.stalls, list(visits)
    monkeypatch.setattr(machine.Core, "step", spy)
    timing = once()
    monkeypatch.setattr(events, "run_timing", events.run_general)
    general = once()
    assert timing == general
    figs, stalls, seen = timing
    # the region stops at the VEC after the LDG (pc 7) at 7, 389, 774, ...: the unit
    # comes back there with the engine busy till 66, 451, 836, ...
    assert [v for v in seen if v[2]] == [(7.0, 7, True), (389.0, 7, True), (774.0, 7, True),
                                         (1159.0, 7, True), (1544.0, 7, True),
                                         (1929.0, 7, True)]
    # the vector engine never idles once started at 2: 36 EXP2s of 64 cycles and six
    # one-cycle MOVs, then its latency of 4
    assert figs == (2 + 36 * 64 + 6 + 4, 0.0, 0.0, 0.0, 0, 0, 1.0, 56)
    assert stalls == {"sem_wait": 0.0, "bandwidth": 0.0, "queue_full": 2002.0, "drain": 259.0}


def test_functional_mode_keeps_its_cycles_too():
    """Functional mode (numerics, race detector) times the same as timing mode."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 2, 128, 64)).astype(np.float32) for _ in range(3))
    o = np.zeros_like(q)
    art = _compile(FA_WS, DIM=64, BLOCK_M=64, BLOCK_N=64, dtype="float32")
    r = run(art, q, k, v, o)
    assert figures(r) == (7385.0, 262144.0, 393216.0, 720896.0, 8388608.0, 8388608.0,
                          1.0, 1932)
