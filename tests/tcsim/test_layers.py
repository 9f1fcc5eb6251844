"""Layering and mode invariants: the simulator imports nothing of the compiler; timing
does not depend on the mode; reports add up."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tilelang import targets
from tilelang.diagnostics import TileLangError
from tilelang.runtime.tcsim import run
from tilelang.targets.tcsim.config import H100_LIKE, TINY

from .examples_tcsim import artifact
from .progs import program

CHILD = r"""
import sys, numpy as np
from tilelang.runtime.tcsim import run
from tilelang.targets.tcsim.asm import assemble
p = assemble('''.kernel k
.param A tensor float32 [N]
.symbol N r3
.grid ceildiv(N, 64) | 1 | 1
.buf X RF float32 [64]
    MULI r4, r0, 64
    DMA.LD X, A[r4] box=64 signal=s[0]
    VEC.MUL X, X, 2.0 shape=64 wait=s[0]@0 signal=s[0]
    DMA.ST A[r4], X box=64 wait=s[0]@1
    HALT
.sem s 1
''')
a = np.ones(100, np.float32)
run(p, a)
assert (a == 2).all()
bad = [m for m in sys.modules if m.split('.')[:2] in (['tilelang', 'ir'], ['tilelang', 'frontend'],
       ['tilelang', 'passes'], ['tilelang', 'codegen'], ['tilelang', 'driver'])
       or m.split('.')[0] in ('lark', 'llvmlite')]
print(bad)
"""


def test_simulator_imports_nothing_of_the_compiler():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@settings(max_examples=8, deadline=None)
@given(st.integers(1, 300), st.integers(1, 300), st.integers(1, 200), st.integers(1, 3))
def test_timing_is_the_same_in_both_modes(m, n, k, stages):
    art = artifact("gemm", NUM_STAGES=stages, in_dtype="float16")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    functional = run(art, a, b, np.zeros((m, n), np.float32))
    timing = run(art, ((m, k), "float16"), ((k, n), "float16"), ((m, n), "float32"),
                 mode="timing")
    assert functional.cycles == timing.cycles
    assert functional.bytes == timing.bytes


def test_report_adds_up():
    p = program("""
        MULI r4, r0, 64
        DMA.LD X, A[0, 0] box=64x64 signal=s[0]
        DMA.ST O[r4, 0], X box=64x64 wait=s[0]@0
        HALT""", params=["A tensor float32 [64, 64]", "O tensor float32 [M, 64]"],
        symbols=["M r3"], bufs=["X SMEM float32 [64, 64]"], sems=["s 1"],
        grid="ceildiv(M, 64) | 1 | 1")
    r = run(p, ((64, 64), "float32"), ((64 * 8, 64), "float32"), mode="timing",
            config="tiny")
    tile = 64 * 64 * 4
    assert r.blocks == 8 and r.waves == 2
    assert r.l2_hit_rate == pytest.approx(7 / 8)        # every block loads the same tile
    assert r.bytes["hbm_read"] == tile and r.bytes["hbm_write"] == 8 * tile
    assert r.bytes["l2"] == 16 * tile
    assert r.bytes["smem"] == 16 * tile                  # written by loads, read by stores
    assert 0 < r.engine_busy["DMA_IN"] < 1 and r.engine_busy["MMA"] == 0
    assert r.roofline_bound == "memory" and r.flops == 0
    assert "tcsim:tiny" in r.summary() and "waves" not in r.summary().split("\n")[1]
    import json
    d = json.loads(json.dumps(r.to_dict()))
    assert d["blocks"] == 8 and d["bytes"]["hbm_write"] == 8 * tile


def test_target_strings():
    assert targets.get("tcsim").machine_config() is H100_LIKE
    assert targets.get("tcsim:tiny").machine_config() is TINY
    with pytest.raises(TileLangError) as e:
        targets.get("tcsim:h300")
    assert e.value.code == "TL0805" and "tiny" in str(e.value)


@pytest.mark.parametrize("args, error, code, words", [
    ((np.zeros(4, np.float64),), TypeError, "TL0603", "expects float32 (numpy float32)"),
    ((np.zeros((4, 4), np.float32),), ValueError, "TL0604", "expects a 1-D tensor"),
    ((), TypeError, "TL0601", "missing argument(s) 'A'"),
    (([1.0, 2.0],), TypeError, "TL0602", "got list"),
])
def test_bad_launches_are_the_runtimes_tl06xx(args, error, code, words):
    """The simulator binds with the runtime's binder: same error types and codes."""
    p = program("HALT", params=["A tensor float32 [N]"], symbols=["N r3"])
    with pytest.raises(error) as e:
        run(p, *args)
    assert words in str(e.value) and e.value.code == code and e.value.argument == "A"


def test_inconsistent_symbol_is_tl0606():
    p = program("HALT", params=["A tensor float32 [N]", "B tensor float32 [N]"],
                symbols=["N r3"])
    with pytest.raises(ValueError, match="N is 4 from A.shape.0. but 5") as e:
        run(p, np.zeros(4, np.float32), np.zeros(5, np.float32))
    assert e.value.code == "TL0606"


def test_run_uses_the_artifacts_config_unless_told():
    art = artifact("vector_add", config="h100_like")
    n = 1 << 16
    args = [((n,), "float32")] * 3
    assert run(art, *args, mode="timing").config == "h100_like"
    assert run(art, *args, mode="timing", config="h200_like").config == "h200_like"
    assert run(art.program, *args, mode="timing").config == "h100_like"    # the default
