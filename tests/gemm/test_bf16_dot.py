"""The native bf16 dot product (vdpbf16ps): taken only where measured to pay, and then
exact to the order it computes in; low-precision operands always accumulate in float32.

The dot path is forced here (a machine description with `bf16_dot`) wherever the host
has the instruction, whatever its measured speed, so its code is checked on every such
host; `with_measured` decides where it runs by default.
"""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tilelang
from tilelang.ops import gemm
from tilelang.ops import _build
from tilelang.profiler.hostpeaks import cpu_flags
from tilelang.targets.cpu import machine as cpu_machine
from tilelang.targets.cpu.target import CpuTarget

from .test_microkernel_asm import hot_loop

ROOT = Path(__file__).resolve().parents[2]
HAS_DOT = "avx512_bf16" in cpu_flags()
needs_dot = pytest.mark.skipif(not HAS_DOT, reason="the host has no avx512_bf16 (vdpbf16ps)")


@pytest.fixture
def dot_machine(monkeypatch):
    """Compile for the host with the bf16 dot path taken (a fresh library cache, so
    the library's kernels are built for it)."""
    machine = replace(cpu_machine.host(), bf16_dot=True)
    monkeypatch.setattr(CpuTarget, "machine", lambda self: machine)
    monkeypatch.setattr(_build, "_COMPILED", {})
    return machine


def _bf16(x):
    return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16)


# ----------------------------------------------------------------------------- choice

def _peaks(dot_gflops, fma_gflops):
    return {"fma": {"float32": {"512": {"1": fma_gflops * 1e9}}},
            "bf16_dot": {"512": {"1": dot_gflops * 1e9}}}


def test_dot_is_taken_only_where_measured_to_pay():
    base = cpu_machine.by_name("avx512")
    assert cpu_machine.with_measured(base, _peaks(320, 160)).bf16_dot          # Zen 4 class
    assert not cpu_machine.with_measured(base, _peaks(76, 163)).bf16_dot       # this kind: 0.47x
    assert not cpu_machine.with_measured(base, _peaks(280, 160)).bf16_dot      # 1.75x: no
    assert cpu_machine.with_measured(base, None) == base                       # not measured
    assert cpu_machine.with_measured(base, {"fma": {}, "bf16_dot": None}) == base
    taken = cpu_machine.with_measured(base, _peaks(320, 160))
    assert cpu_machine.fingerprint(taken) != cpu_machine.fingerprint(base)      # cache key


# ----------------------------------------------------------------------------- code

@needs_dot
def test_dot_tile_inner_loop_is_pair_loads_broadcasts_and_dots(dot_machine):
    kern = tilelang.compile(str(ROOT / "tilelang" / "ops" / "gemm.tl"),
                            defines={"in_dtype": "bfloat16", "BLOCK_K": 64})
    assert "kk * 2 + 1" in kern.ir(after="tiling")
    loop = hot_loop(kern.asm().replace("vdpbf16ps", "vfmadd231ps"))   # find it by its dots
    mnemonics = [m for m, _ in loop]
    dots = mnemonics.count("vfmadd231ps")
    mr, nr = dot_machine.register_tile(32)
    assert dots % (mr * nr // 16) == 0 and dots > 0
    allowed = re.compile(r"^(vfmadd231ps|vbroadcastss|vpbroadcastd|vmov(a|u)p[sd]|"
                         r"vmovdq[au](32|64)?|add[ql]?|sub[ql]?|inc[ql]?|cmp[ql]?|test[ql]?|"
                         r"j[a-z]+|nop[wl]?|lea[ql]?)$")
    assert not [m for m in mnemonics if not allowed.match(m)]


@needs_dot
def test_dot_is_exact_to_the_order_it_computes_in(dot_machine):
    # one block, even K: C = sum over pairs of (acc + a1 b1) + a0 b0, in float32
    rng = np.random.default_rng(3)
    a, b = _bf16(rng.standard_normal((20, 12))), _bf16(rng.standard_normal((12, 40)))
    got = gemm(a, b, precision="bf16", block=(28, 64, 12))
    af, bf = a.astype(np.float32), b.astype(np.float32)
    want = np.zeros((20, 40), np.float32)
    for kk in range(6):
        want = (want + af[:, 2 * kk + 1, None] * bf[2 * kk + 1]) + af[:, 2 * kk, None] * bf[2 * kk]
    assert np.array_equal(got, want)


@needs_dot
@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])   # it only sets the machine
@given(m=st.integers(1, 300), n=st.integers(1, 300), k=st.integers(1, 300),
       block=st.sampled_from([None, (30, 40, 24), (14, 48, 7), (64, 96, 33)]),
       seed=st.integers(0, 99))
def test_dot_gemm_matches_numpy(dot_machine, m, n, k, block, seed):
    rng = np.random.default_rng(seed)
    a, b = _bf16(rng.standard_normal((m, k))), _bf16(rng.standard_normal((k, n)))
    got = gemm(a, b, precision="bf16", block=block)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(got - want).max() / max(1.0, np.abs(want).max()) < 1e-5 * max(1, k) ** 0.5


# ----------------------------------------------------------------------------- accumulation

@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_low_precision_operands_accumulate_in_float32(precision):
    # 5000 ones: float32 holds every partial sum exactly; fp16 (and bf16) running sums
    # would stall at 2048 (256), whose next representable neighbour is 2 (2) away
    ones = np.ones((4, 5000), np.float32)
    got = gemm(ones, ones.T.copy(), precision=precision)
    assert np.array_equal(got, np.full((4, 4), 5000, np.float32))


@needs_dot
def test_dot_path_accumulates_in_float32(dot_machine):
    ones = np.ones((4, 5000), np.float32)
    got = gemm(ones, ones.T.copy(), precision="bf16")
    assert np.array_equal(got, np.full((4, 4), 5000, np.float32))
