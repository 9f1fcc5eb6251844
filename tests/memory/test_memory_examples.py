"""Every example kernel gives bit-identical results with the memory_reuse pass on and off
(on the CPU), and gemm_epilogue.tl gets the shared-memory saving its comments claim."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tilelang.driver import compile_file, make_options, parse, read_source
from tilelang.driver.bench import make_arguments
from tilelang.driver.stages import memory_report
from tilelang.targets.cpu.machine import host

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FILES = sorted(p.name for p in EXAMPLES.glob("*.tl"))
# small but ragged sizes (not multiples of any block), a few heads for attention
SIZES = {"BATCH": 1, "HEADS": 2}
RAGGED = 77
VARIANTS = [(f, {}) for f in FILES] + [
    ("gemm.tl", {"in_dtype": "float16"}),
    ("flash_attention.tl", {"CAUSAL": True}),
    ("softmax.tl", {"dtype": "bfloat16"}),
]


def _module(name: str, defines: dict):
    path = str(EXAMPLES / name)
    return parse(read_source(path), path, make_options(defines=defines or None))


# in the default suite: attention (the most tiles, their lifetimes overlapping across a
# masked pipelined loop), split-K GEMM (atomics) and the epilogue whose saving is claimed;
# every example is planned by test_every_example_is_planned, and the random kernels of
# test_memory_property run both ways; the other examples run both ways under -m slow
DEFAULT_SUITE = {("flash_attention.tl", "CAUSAL=True"), ("splitk_gemm.tl", "default"),
                 ("gemm_epilogue.tl", "default")}


def _variant(f: str, d: dict):
    defines = "-".join(f"{k}={v}" for k, v in d.items()) or "default"
    marks = () if (f, defines) in DEFAULT_SUITE else (pytest.mark.slow,)
    return pytest.param(f, d, id=f"{f}-{defines}", marks=marks)


@pytest.mark.parametrize("name,defines", [_variant(f, d) for f, d in VARIANTS])
def test_example_bit_identical_with_and_without_reuse(name, defines):
    libs = [compile_file(EXAMPLES / name, defines=defines or None, memory_reuse=reuse)
            for reuse in (True, False)]
    for func in _module(name, defines).funcs:
        sizes = {s.name: SIZES.get(s.name, RAGGED) for s in func.symbols}
        results = []
        for lib in libs:
            args = make_arguments(func, sizes, {}, seed=1)
            # one thread: blocks that combine results atomically (split-K) then add in
            # one order, so the two builds are comparable bit for bit
            lib[func.name](*args, num_threads=1)
            results.append([np.asarray(a).tobytes() for a in args if hasattr(a, "shape")])
        assert results[0] == results[1], f"{name} {func.name}: outputs differ"


def test_every_example_is_planned():
    for name in FILES:
        report = memory_report(_module(name, {}), make_options())
        for k in report.kernels:
            for scope in k.scopes:
                assert all(r.offset is not None for r in scope.rows), (name, k.name)
                assert scope.after <= scope.before


def epilogue_operand_bytes() -> int:
    """gemm_epilogue.tl's A_s and B_s as the CPU passes leave them: the float16 tiles
    widened to float32 by their copies, and A's copy sunk into its row panels (one
    MR x 32 panel instead of the 128 x 32 tile)."""
    mr, _ = host().register_tile(32)
    return (mr * 32 + 32 * 128) * 4


def _epilogue_shared(reuse: bool):
    options = make_options(memory_reuse=reuse)
    return memory_report(_module("gemm_epilogue.tl", {}), options) \
        .kernel("gemm_epilogue").scope("shared")


def test_gemm_epilogue_tile_reuses_the_operand_tiles():
    on, off = _epilogue_shared(True), _epilogue_shared(False)
    # the operand tiles and C_s (32 KiB) side by side; with reuse C_s takes the bytes of
    # the operand tiles, dead after the K loop: the arena is C_s alone
    whole = epilogue_operand_bytes() + 32 * 1024
    assert off.before == off.after == whole
    assert on.before == whole and on.after == 32 * 1024
    rows = {r.name: r for r in on.rows}
    a, b = rows["A_s"], rows["B_s"]
    assert rows["C_s"].offset == 0
    assert a.offset + a.nbytes <= b.offset or b.offset + b.nbytes <= a.offset
    assert max(a.offset + a.nbytes, b.offset + b.nbytes) <= 32 * 1024


def test_gemm_epilogue_with_pipeline_stages_kept_apart_saves_40_percent():
    """On a target that gives every pipeline stage its own copy (tcsim's rings), the
    three stages of A_s and B_s (48 KiB) are dead when the epilogue tile is live."""
    from tilelang.passes.liveness import kernel_of
    from tilelang.driver import make_options
    from tilelang.driver.stages import lower
    from tilelang.passes.memory_reuse import TCSIM_RULES, plan_kernel
    tile_ir = lower(_module("gemm_epilogue.tl", {}), make_options(target="tcsim"), until="simplify")
    (shared,) = [a for a in plan_kernel(kernel_of(tile_ir.funcs[0].body), TCSIM_RULES)
                 if a.scope == "shared"]
    assert shared.before == 80 * 1024 and shared.after == 48 * 1024
    assert 1 - shared.after / shared.before >= 0.40


def test_gemm_epilogue_matches_numpy():
    lib = compile_file(EXAMPLES / "gemm_epilogue.tl")
    rng = np.random.default_rng(0)
    m, n, k = 130, 200, 70
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float16)
    lib["gemm_epilogue"](a, b, c)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=1e-2, atol=1e-2)
