"""The race detector, deadlock reports, and the Chrome trace."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tilelang.runtime.tcsim import run as simulate
from tilelang.runtime.tcsim.errors import DeadlockError, RaceError

from .progs import program


def run(program, *args, **kwargs):
    """The hand-written programs here are timed for the small test machine."""
    kwargs.setdefault("config", "tiny")
    return simulate(program, *args, **kwargs)

PIPE = """
    SEM.INIT full[0], 2
    SEM.INIT full[1], 2
    ACC.ZERO C
    MOV r10, 0
    LOOP 4
        MOD r11, r10, 2
        FDIV r12, r10, 2
        SUB r13, r12, 1
        MULI r14, r10, 16
        DMA.LD A[r11], GA[0, r14] box=16x16 wait=empty[r11]@r13 signal=full[r11]
        DMA.LD B[r11], GB[r14, 0] box=16x16 wait=empty[r11]@r13 signal=full[r11]
        MMA C, A[r11], B[r11] wait=full[r11]@r12 signal=empty[r11]
        ADDI r10, r10, 1
    ENDLOOP
    SEM.WAIT empty[1], 1
    COPY O_s, C signal=done[0]
    DMA.ST GC[0, 0], O_s box=16x16 wait=done[0]@0
    HALT
"""


def _pipe(text):
    return program(text, params=["GA tensor float32 [16, 64]", "GB tensor float32 [64, 16]",
                                 "GC tensor float32 [16, 16]"],
                   bufs=["A SMEM float32 [16, 16] stages=2", "B SMEM float32 [16, 16] stages=2",
                         "C RF float32 [16, 16]", "O_s SMEM float32 [16, 16]"],
                   sems=["full 2", "empty 2", "done 1"])


def _args():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 64)).astype(np.float32)
    b = rng.standard_normal((64, 16)).astype(np.float32)
    return a, b, np.zeros((16, 16), np.float32)


def test_correct_pipelined_program_runs_clean():
    a, b, c = _args()
    run(_pipe(PIPE), a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("wait, words", [
    ("wait=full[r11]@r12 ", "MMA (instruction 11"),            # MMA reads in-flight loads
    ("wait=empty[r11]@r13 ", "overwrites"),                     # loads overwrite a live stage
    ("wait=done[0]@0", "DMA.ST"),                               # store reads the staging tile
])
def test_deleting_one_wait_is_reported_as_a_race(wait, words):
    text = PIPE.replace(wait, "", 1)
    assert text != PIPE
    a, b, c = _args()
    with pytest.raises(RaceError) as e:
        run(_pipe(text), a, b, c)
    assert words in str(e.value) and e.value.code == "TL0803"


def test_race_detector_is_off_in_timing_mode_unless_asked():
    text = PIPE.replace("wait=full[r11]@r12 ", "", 1)
    args = [((16, 64), "float32"), ((64, 16), "float32"), ((16, 16), "float32")]
    run(_pipe(text), *args, mode="timing")
    with pytest.raises(RaceError):
        run(_pipe(text), *args, mode="timing", check_races=True)


def test_circular_wait_is_a_deadlock_not_a_hang():
    p = program("""
        MMA C, A, B wait=s[0]@0 signal=s[1]
        DMA.LD A, G[0, 0] box=16x16 wait=s[1]@0 signal=s[0]
        HALT""", params=["G tensor float16 [16, 16]"],
        bufs=["A SMEM float16 [16, 16]", "B SMEM float16 [16, 16]", "C RF float32 [16, 16]"],
        sems=["s 2"])
    with pytest.raises(DeadlockError) as e:
        run(p, np.zeros((16, 16), np.float16))
    err = e.value
    assert err.code == "TL0804"
    assert err.cycle is not None and "circular wait" in str(err)
    assert "core 0 MMA" in err.cycle and "core 0 DMA_IN" in err.cycle
    assert any("waits on s@0" in w for w in err.waits)


def test_wait_on_a_phase_never_completed_is_a_deadlock():
    p = program("SEM.INIT s[0], 2\nSEM.ARRIVE s[0]\nSEM.WAIT s[0], 0\nHALT", sems=["s 1"])
    with pytest.raises(DeadlockError, match="1/2 arrivals"):
        run(p)


def test_chrome_trace(tmp_path):
    a, b, c = _args()
    path = tmp_path / "trace.json"
    r = run(_pipe(PIPE), a, b, c, trace=str(path))
    data = json.loads(path.read_text())
    events = [e for e in data["traceEvents"] if e["ph"] == "X"]
    names = {e["name"] for e in events}
    assert {"DMA.LD", "MMA", "COPY", "DMA.ST", "(0, 0, 0)"} <= names
    threads = {e["args"]["name"] for e in data["traceEvents"] if e["name"] == "thread_name"}
    assert threads == {"BLOCK", "DMA_IN", "DMA_OUT", "MMA", "VEC"}
    assert max(e["args"]["end_cycle"] for e in events) == r.cycles
    mmas = sorted((e["ts"], e["dur"]) for e in events if e["name"] == "MMA")
    assert len(mmas) == 4 and all(d > 0 for _, d in mmas)


def test_stage_out_of_range_is_an_error_not_a_crash():
    from tilelang.runtime.tcsim.errors import SimError
    p = program("MOV r5, 2\nACC.ZERO C[r5]\nHALT", bufs=["C RF float32 [8, 8] stages=2"])
    with pytest.raises(SimError, match="stage 2 of C, which has 2"):
        run(p)


def test_expected_bytes_hold_a_phase_until_every_load_arrived():
    """mbarrier-style: one arrival is enough by count, but the phase also waits for the
    bytes announced with SEM.EXPECT, so the MMA sees both loads."""
    text = """
        SEM.EXPECT s[0], 2048
        DMA.LD A, G[0, 0] box=16x16 signal=s[0]
        DMA.LD B, G[16, 0] box=16x16 signal=s[0]
        ACC.ZERO C
        MMA C, A, B wait=s[0]@0 signal=t[0]
        DMA.ST O[0, 0], C box=16x16 wait=t[0]@0
        HALT"""
    p = program(text, params=["G tensor float32 [32, 16]", "O tensor float32 [16, 16]"],
                bufs=["A SMEM float32 [16, 16]", "B SMEM float32 [16, 16]",
                      "C RF float32 [16, 16]"], sems=["s 1", "t 1"])
    g = np.random.default_rng(1).standard_normal((32, 16)).astype(np.float32)
    o = np.zeros((16, 16), np.float32)
    run(p, g, o)
    np.testing.assert_allclose(o, g[:16] @ g[16:], rtol=1e-5, atol=1e-5)
    # expecting more bytes than ever arrive never completes the phase
    with pytest.raises(DeadlockError, match="waits on s@0"):
        run(program(text.replace("2048", "4096"), params=["G tensor float32 [32, 16]",
                                                          "O tensor float32 [16, 16]"],
                    bufs=["A SMEM float32 [16, 16]", "B SMEM float32 [16, 16]",
                          "C RF float32 [16, 16]"], sems=["s 1", "t 1"]), g, o)
    # without the expectation the first load completes the phase: the MMA races
    with pytest.raises(RaceError):
        run(program(text.replace("SEM.EXPECT s[0], 2048", ""),
                    params=["G tensor float32 [32, 16]", "O tensor float32 [16, 16]"],
                    bufs=["A SMEM float32 [16, 16]", "B SMEM float32 [16, 16]",
                          "C RF float32 [16, 16]"], sems=["s 1", "t 1"]), g, o)


def test_fence_orders_without_semaphores():
    text = """
        DMA.LD X, G[0] box=64
        FENCE
        VEC.MUL X, X, 3.0 shape=64
        FENCE
        DMA.ST O[0], X box=64
        HALT"""
    kw = dict(params=["G tensor float32 [64]", "O tensor float32 [64]"],
              bufs=["X RF float32 [64]"])
    g = np.arange(64, dtype=np.float32)
    o = np.zeros(64, np.float32)
    run(program(text, **kw), g, o)
    np.testing.assert_array_equal(o, 3 * g)
    with pytest.raises(RaceError):                       # drop the first FENCE
        run(program(text.replace("FENCE", "", 1), **kw), g, o)
