"""The emitted assembly of a T.gemm: its hottest loop is loads + broadcasts + FMAs.

The micro-kernel's k loop is found as the basic block with the most FMAs that branches
back to itself; every instruction in it must be a vector load, a broadcast, an FMA or
loop/address bookkeeping. A store or a spill inside it, or a gather (LLVM vectorising
along k), fails the test.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import tilelang
from tilelang.targets.cpu.machine import host

ROOT = Path(__file__).resolve().parents[2]
FMA = re.compile(r"^vfn?madd(132|213|231)p[sd]$")
ALLOWED = re.compile(r"^(vfn?madd(132|213|231)p[sd]|vbroadcasts[sd]|vmov(a|u)p[sd]|"
                     r"vcvtph2ps|add[ql]?|sub[ql]?|inc[ql]?|dec[ql]?|lea[ql]?|cmp[ql]?|"
                     r"test[ql]?|j[a-z]+|nop[wl]?|vxorps|vpxor)$")


def hot_loop(asm: str) -> list[tuple[str, str]]:
    """(mnemonic, operands) of the innermost loop with the most FMAs: the instructions
    from a label to a jump back to it with no other label in between."""
    loops, label, body = [], None, []
    for line in asm.splitlines():
        line = line.split("#")[0].rstrip()
        m = re.match(r"^(\.?[\w.$]+):", line)
        if m:
            label, body = m.group(1), []
            continue
        parts = line.strip().split(None, 1)
        if not parts or parts[0].startswith("."):
            continue
        body.append((parts[0], parts[1] if len(parts) > 1 else ""))
        if parts[0].startswith("j") and len(parts) > 1 and parts[1].strip() == label:
            loops.append(list(body))
    assert loops, "no loop in the assembly"
    return max(loops, key=lambda ins: sum(bool(FMA.match(m)) for m, _ in ins))


def compile_asm(path: Path, **defines) -> str:
    return tilelang.compile(str(path), defines=defines).asm()


@pytest.mark.skipif(host().name not in ("avx2", "avx512"), reason="x86 FMA hosts only")
@pytest.mark.parametrize("defines", [{}, {"in_dtype": "float16"}],
                         ids=["fp32", "fp16-in"])
def test_gemm_inner_loop_is_loads_broadcasts_and_fmas(defines):
    loop = hot_loop(compile_asm(ROOT / "tilelang" / "ops" / "gemm.tl", **defines))
    mnemonics = [m for m, _ in loop]
    bad = sorted({m for m in mnemonics if not ALLOWED.match(m)})
    assert bad == [], f"unexpected instructions in the micro-kernel loop: {bad}"
    stores = [(m, ops) for m, ops in loop if m.startswith("vmov") and
              ops.rsplit(",", 1)[-1].strip().endswith(")")]
    assert stores == [], f"stores (spills) inside the micro-kernel loop: {stores}"
    fmas = sum(bool(FMA.match(m)) for m in mnemonics)
    broadcasts = sum(m.startswith("vbroadcast") for m in mnemonics)
    mr, nr = host().register_tile(32)
    vectors = nr // host().lanes(32)
    assert fmas % (mr * vectors) == 0 and fmas >= mr * vectors
    # each broadcast feeds a whole row of the register tile
    assert broadcasts * vectors == fmas


@pytest.mark.skipif(host().name not in ("avx2", "avx512"), reason="x86 FMA hosts only")
def test_user_kernel_gets_the_same_micro_kernel():
    loop = hot_loop(compile_asm(ROOT / "examples" / "gemm_bias_relu.tl"))
    mnemonics = [m for m, _ in loop]
    assert not [m for m in mnemonics if not ALLOWED.match(m)]
    assert sum(bool(FMA.match(m)) for m in mnemonics) >= host().register_tile(32)[0]


@pytest.mark.skipif(host().name not in ("avx2", "avx512"), reason="x86 hosts only")
def test_aot_target_gets_the_register_tile_of_its_own_isa():
    """An AVX2 build (on any x86 host) tiles 6 x 16 for 16 ymm registers: no spills."""
    kern = tilelang.compile(str(ROOT / "tilelang" / "ops" / "gemm.tl"), cpu="znver3",
                            features="+avx,+avx2,+fma,+f16c")
    assert "T.unroll(6)" in kern.ir(after="tiling")
    loop = hot_loop(kern.asm())
    assert not [m for m, _ in loop if not ALLOWED.match(m)]
    assert not [ops for m, ops in loop if "zmm" in ops]
    assert not [(m, ops) for m, ops in loop if m.startswith("vmov") and
                ops.rsplit(",", 1)[-1].strip().endswith(")")]
    assert sum(bool(FMA.match(m)) for m, _ in loop) % 12 == 0


THREE_VECTOR_ROWS = """
import tilelang.language as T


@T.prim_func
def tile(A: T.Tensor((4, 37), "float32"), B: T.Tensor((37, 48), "float32"),
         C: T.Tensor((4, 48), "float32")):
    with T.Kernel(1, threads=1) as bx:
        for k in T.serial(37):
            for ii in T.unroll(4):
                for jj in T.vectorized(48):
                    C[ii, jj] = C[ii, jj] + A[ii, k] * B[k, jj]
"""


@pytest.mark.skipif(host().name != "avx512", reason="AVX-512 hosts only (48 = 3 zmm lanes)")
def test_a_register_tile_row_of_three_vectors_is_three_registers(tmp_path):
    # NR = 48 is no power of two: as one <48 x float> LLVM widened it to 64 lanes and
    # shuffled every step (30x slower); the micro-kernel keeps three <16 x float> a row
    path = tmp_path / "tile.tl"
    path.write_text(THREE_VECTOR_ROWS)
    kern = tilelang.compile(str(path))
    loop = hot_loop(kern.asm())
    mnemonics = [m for m, _ in loop]
    assert not [m for m in mnemonics if not ALLOWED.match(m)]
    assert sum(bool(FMA.match(m)) for m in mnemonics) % 12 == 0
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 37), np.float32), rng.standard_normal((37, 48), np.float32)
    c = rng.standard_normal((4, 48), np.float32)
    want = c.astype(np.float64) + a.astype(np.float64) @ b
    kern(a, b, c)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)
