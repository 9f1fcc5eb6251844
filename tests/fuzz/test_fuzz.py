"""The fuzzing machinery: generated programs agree on every target (hypothesis draws and
shrinks them), malformed mutants are diagnosed, the shrinker and the campaign runner
work, and a short campaign (the one `make test` runs) finds nothing."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

from tilelang.fuzz import campaign as camp
from tilelang.fuzz.differential import check
from tilelang.fuzz.generate import FAMILIES, RandomChooser, generate, programs
from tilelang.fuzz.malformed import check_mutant, mutate
from tilelang.fuzz.shrink import load, save, shrink

FAST = settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck),
                database=None)


@pytest.fixture(autouse=True)
def no_cache(monkeypatch):
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")


def _acceptable(verdict) -> bool:
    """Agreement, a construct a target does not support, or the one rejection a
    generated program may earn: an integer divisor its constants make 0 (`x // (3 - 3)`)
    is TL0401, as a `-D` value of 0 would be."""
    return verdict.kind in ("ok", "unsupported") or \
        (verdict.kind == "rejected" and "TL0401" in verdict.detail)


@FAST
@given(programs())
def test_generated_programs_agree_everywhere(program):
    verdict = check(program.render(), program.size_dict, seed=0, targets=program.targets)
    assert _acceptable(verdict), f"{verdict}\n{program.render()}"


@FAST
@given(programs(families=("elementwise",)))
def test_generated_programs_after_every_pass(program):
    verdict = check(program.render(), program.size_dict, seed=1, targets=("cpu",),
                    stages="all")
    assert _acceptable(verdict), f"{verdict}\n{program.render()}"


@pytest.mark.parametrize("seed", range(12))
def test_malformed_mutants_are_diagnosed(seed):
    program = generate(RandomChooser(seed))
    text = mutate(program.render(), RandomChooser(10_000 + seed))
    outcome, detail = check_mutant(text, program.targets)
    assert outcome != "internal", f"{detail}\n{text}"


def test_every_family_is_generated_and_parses():
    from tilelang.frontend import parse_module
    families = set()
    for seed in range(40):
        program = generate(RandomChooser(seed))
        parse_module(program.render(), "gen.tl")
        families.add(program.family)
    assert families == set(FAMILIES)


def test_shrink_keeps_what_fails_and_drops_the_rest(tmp_path):
    program = next(p for p in (generate(RandomChooser(s), ("elementwise",)) for s in range(50))
                   if "T.exp" in p.render() or "T.tanh" in p.render())
    fn = "T.exp" if "T.exp" in program.render() else "T.tanh"
    small = shrink(program, lambda p: fn in p.render())
    assert fn in small.render() and len(small.render()) < len(program.render())
    assert all(v == 1 for _, v in small.sizes)
    path = save(small.render(), small.size_dict, 7, "miscompile in cpu:tiling: x", str(tmp_path))
    text, sizes, seed = load(path)
    assert small.render() in text and sizes == small.size_dict and seed == 7


def test_the_runner_counts_a_dying_worker_as_a_crash():
    replies = []
    camp.run_requests([{"op": "exit", "status": 11, "seed": 5}, {"op": "seed", "seed": 1,
                       "families": ["scalar"], "stages": "ends"}], 1, None, replies.append)
    kinds = sorted(r["kind"] for r in replies)
    assert kinds == ["crash", "ok"]
    crash = next(r for r in replies if r["kind"] == "crash")
    assert crash["seed"] == 5 and "exit status 11" in crash["detail"]


def test_a_short_campaign_finds_nothing():
    """What `make test` runs of the campaign: up to 40 programs in 40 seconds."""
    summary = camp.campaign(programs=40, seconds=40, seed=20_000, jobs=1, stages="mixed",
                            malformed=0.1)
    print("\n".join(summary.lines()))
    assert summary.tried >= 3                  # a loaded machine tries fewer
    assert summary.bugs == [], "\n".join(summary.lines())


def test_a_divisor_that_only_lowering_makes_zero_divides_by_zero_at_run_time():
    # the index of a one-iteration T.Parallel is 0 once lowered: `// i` and `% i` give 0
    # (integer division by zero), as the interpreter computes, on every target
    src = """import tilelang.language as T

M = T.dynamic("M")


@T.prim_func
def k(A: T.Tensor((M, 2), "int32"), B: T.Tensor((M, 2), "int32"), C: T.Tensor((M, 2), "int32")):
    with T.Kernel(M, threads=128) as bx:
        xa = T.alloc_fragment((1, 2), "int32")
        xb = T.alloc_fragment((1, 2), "int32")
        T.copy(A[bx, 0], xa)
        for i, j in T.Parallel(1, 2):
            xb[i, j] = xa[i, j] % i
            xa[i, j] = xa[i, j] // i
        T.copy(xa, B[bx, 0])
        T.copy(xb, C[bx, 0])
"""
    for target in ("cpu", "tcsim:tiny"):
        verdict = check(src, {"M": 3}, seed=1, targets=(target,), stages="all")
        assert verdict.kind == "ok", f"{target}: {verdict}"
