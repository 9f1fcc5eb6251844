"""Property tests of the plan: random kernels (tests/memory/programs.py) and random
intervals.

* Static: no two buffers whose live intervals meet share a byte of their arena, every
  offset is a multiple of the alignment, and every planned buffer fits in its arena.
* Dynamic: a random kernel compiled with the pass gives bit-identical outputs to the
  same kernel compiled without it (so the intervals themselves are right: a buffer
  clobbered while still live would change what is read).
"""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from tilelang.frontend import parse_module
from tilelang.ir.nodes import Alloc
from tilelang.ir.visitor import walk
from tilelang.passes.liveness import Live, block_liveness, buffer_bytes, kernel_of
from tilelang.driver import make_options
from tilelang.driver.stages import lower
from tilelang.passes.memory_reuse import CPU_RULES, TCSIM_RULES, pack, plan_kernel

from .programs import kernels

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check_arena(arena, align):
    slots = list(arena.slots)
    for s in slots:
        assert s.offset % align == 0, s
        assert s.offset + s.size <= arena.after
        assert s.size >= s.live.nbytes * s.live.stages
    for i, a in enumerate(slots):
        for b in slots[i + 1:]:
            if a.live.overlaps(b.live):
                assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset, \
                    f"{a.live.name} and {b.live.name} are live together and overlap"


@settings(max_examples=60, **SETTINGS)
@given(kernels(), st.sampled_from([CPU_RULES, TCSIM_RULES]))
def test_live_buffers_never_overlap_and_offsets_are_aligned(source, rules):
    module = parse_module(source, "<random>")
    for stage in ("simplify", "predicate"):    # tile ops, and their lowered loops
        kernel = kernel_of(lower(module, make_options(), until=stage).funcs[0].body)
        for arena in plan_kernel(kernel, rules):
            _check_arena(arena, rules.align)


@settings(max_examples=60, **SETTINGS)
@given(kernels())
def test_the_pass_places_what_the_planner_planned(source):
    lowered = lower(parse_module(source, "<random>"), make_options(), until="memory_reuse")
    allocs = [n for n in walk(lowered) if isinstance(n, Alloc)]
    assert allocs and all(a.offset is not None and a.align == CPU_RULES.align for a in allocs)
    lives = {lv.name: lv for lv in block_liveness(kernel_of(lowered.funcs[0].body))}
    for a in allocs:
        for b in allocs:
            if a is not b and a.buffer.scope == b.buffer.scope \
                    and lives[a.buffer.name].overlaps(lives[b.buffer.name]):
                assert a.offset + buffer_bytes(a.buffer) <= b.offset or \
                    b.offset + buffer_bytes(b.buffer) <= a.offset


@st.composite
def intervals(draw):
    lives = []
    for i in range(draw(st.integers(1, 12))):
        start = draw(st.integers(0, 30))
        end = draw(st.integers(start, 40))
        from tilelang.ir.nodes import Buffer, Const
        n = draw(st.integers(1, 300))
        buf = Buffer(f"v{i}", (Const(n, "int32"),), "float32", "shared")
        lives.append(Live(buf, start, end, draw(st.integers(1, 3))))
    return lives


@settings(max_examples=300, **SETTINGS)
@given(intervals(), st.sampled_from([16, 64, 128]))
def test_packing_random_intervals(lives, align):
    from tilelang.passes.memory_reuse import Arena
    slots = pack(lives, align)
    arena = Arena("shared", tuple(slots), align)
    _check_arena(arena, align)
    # never worse than no reuse at all, and at least the largest point of pressure
    assert arena.after <= arena.before
    for p in range(41):
        live = [s for s in slots if s.live.start <= p <= s.live.end]
        assert sum(s.size for s in live) <= arena.after


@settings(max_examples=25, **SETTINGS)
@given(kernels(max_statements=10))
def test_random_kernels_bit_identical_with_and_without_reuse(source):
    from tilelang.driver import compile_source
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    outs = []
    for reuse in (True, False):
        lib = compile_source(source, "<random>", memory_reuse=reuse)
        out = np.zeros((2, 16), np.float32)
        lib["k"](x, out)
        outs.append(out)
    assert outs[0].tobytes() == outs[1].tobytes(), source


def test_a_target_can_group_buffers_by_its_own_memories():
    """tcsim places buffers by level (L1, L0A, ...), not by scope: `memory=` groups them."""
    from tilelang.driver import make_options
    from tilelang.driver.stages import lower
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "examples" / "gemm_epilogue.tl"
    tile_ir = lower(parse_module(path.read_text(), str(path)), make_options(), until="simplify")
    kernel = kernel_of(tile_ir.funcs[0].body)
    level = {"A_s": "L0A", "B_s": "L0B", "C_f": "L0C", "C_s": "L0A"}
    arenas = {a.scope: a for a in plan_kernel(kernel, TCSIM_RULES, lambda b: level[b.name])}
    assert sorted(arenas) == ["L0A", "L0B", "L0C"]
    slots = {s.live.name: s for s in arenas["L0A"].slots}
    # three stages of A_s (8 KiB each), dead when C_s is live: C_s reuses them
    assert slots["A_s"].size == 3 * 8192 and slots["C_s"].offset == 0
    assert arenas["L0A"].after == 32768 and arenas["L0A"].before == 24576 + 32768


def _interp():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "passes" / "interp.py"
    spec = importlib.util.spec_from_file_location("tl_memory_interp", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@settings(max_examples=100, **SETTINGS)
@given(kernels())
def test_random_kernels_same_in_the_interpreter_with_and_without_the_plan(source):
    """The reference interpreter gives each placed buffer a view of a garbage-filled
    arena at its offset: a buffer overwritten while still live, or read before it was
    written, changes the output. Faster than compiling, so many more programs."""
    interp = _interp()
    module = parse_module(source, "<random>")
    x = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    outs = []
    for until in ("predicate", "dce"):          # before the plan, and the whole pipeline
        lowered = lower(module, make_options(), until=until)
        out = np.zeros((2, 16), np.float32)
        interp.run(lowered, "k", {"In": x, "Out": out})
        outs.append(out)
    assert outs[0].tobytes() == outs[1].tobytes(), source
