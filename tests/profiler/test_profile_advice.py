"""The profiler's advice on kernels built to have one known problem each.

On tcsim the simulation is deterministic, so each test also follows the advice (the
defines it names) and asserts that the cycle count goes down. On the CPU the named
bound and the top advice are asserted; the speed-up of following it is reported by
benchmarks/profile.py, not asserted here.
"""
import os

import pytest

import tilelang
from tilelang.profiler.evidence import GridEvidence
from tilelang.profiler.counts import GridCounts
from tilelang.profiler.knobs import Knobs
from tilelang.profiler.roofline import Peaks, Roofline
from tilelang.profiler.rules import Context, advise, name_bound

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEMM = os.path.join(ROOT, "examples", "gemm.tl")
VADD = os.path.join(ROOT, "examples", "vector_add.tl")


def _profile(path, target, sizes, **defines):
    return tilelang.compile(path, target=target, defines=defines).profile(sizes=sizes)


def _cycles(report):
    return report.grids[0].facts["cycles"]


def _follow(path, target, sizes, report, **defines):
    advice = report.advice[0]
    assert advice.defines, f"the advice names no define to apply: {advice.line}"
    return _profile(path, target, sizes, **{**defines, **advice.defines})


# ----------------------------------------------------------------------------- tcsim

def test_single_stage_pipeline_on_tcsim():
    sizes = {"M": 2048, "N": 2048, "K": 1024}
    base = dict(in_dtype="bfloat16", NUM_STAGES=1)
    report = _profile(GEMM, "tcsim:h100_like", sizes, **base)
    top = report.advice[0]
    assert report.bound == "latency/launch"
    assert top.rule == "pipeline_wait" and top.defines == {"NUM_STAGES": 3}
    assert "DMA-wait" in top.evidence and "num_stages=1" in top.evidence
    after = _follow(GEMM, "tcsim:h100_like", sizes, report, **base)
    assert _cycles(after) < 0.8 * _cycles(report)


def test_ragged_last_wave_on_tcsim():
    sizes = {"M": 640, "N": 128, "K": 256}            # 5 blocks on 4 cores: 2 waves
    base = dict(in_dtype="bfloat16", BLOCK_M=128, BLOCK_N=128, BLOCK_K=64)
    report = _profile(GEMM, "tcsim:tiny", sizes, **base)
    top = report.advice[0]
    assert report.bound == "imbalance"
    assert top.rule == "tail_wave" and "last wave 1/4 full" in top.evidence
    assert top.defines == {"BLOCK_M": 64}
    after = _follow(GEMM, "tcsim:tiny", sizes, report, **base)
    assert _cycles(after) < _cycles(report)


def test_memory_bound_elementwise_on_tcsim():
    sizes = {"N": 1 << 18}
    report = _profile(VADD, "tcsim:tiny", sizes)
    top = report.advice[0]
    assert report.bound == "memory"
    assert top.rule == "memory_bound" and top.defines == {"dtype": "bfloat16"}
    after = _follow(VADD, "tcsim:tiny", sizes, report)
    assert _cycles(after) < 0.7 * _cycles(report)


def test_tcsim_report_figures():
    report = _profile(GEMM, "tcsim:tiny", {"M": 256, "N": 256, "K": 256},
                      in_dtype="bfloat16", BLOCK_M=64, BLOCK_N=64, BLOCK_K=64)
    g = report.grids[0]
    assert g.counts.flops == 2 * 256 ** 3 and g.counts.blocks == 16
    assert g.roofline.peaks.flops == pytest.approx(4 * 1e9 * 1024)      # tiny: 4 cores
    assert 0 < g.roofline.fraction <= 1.0
    labels = [label for label, _ in g.bars]
    assert "MMA" in labels and "DMA_IN" in labels
    for _, segs in g.bars:
        assert sum(v for _, v in segs) == pytest.approx(1.0, abs=1e-6)


# ----------------------------------------------------------------------------- CPU

def test_block_too_small_to_amortise_packing_on_cpu():
    report = tilelang.compile(GEMM, defines={"BLOCK_M": 8, "BLOCK_N": 256,
                                             "BLOCK_K": 128}).profile(
        sizes={"M": 128, "N": 1024, "K": 512}, num_threads=1, rep=30)
    top = report.advice[0]
    assert report.bound == "compute", report.text()
    assert top.rule == "packing" and top.evidence.startswith("B packing"), report.text()
    assert "larger BLOCK_M" in top.action and top.defines["BLOCK_M"] > 8
    shares = report.grids[0].facts["phase_shares"]
    assert shares["pack B"] > shares.get("pack A", 0)
    assert report.overhead is not None


def test_memory_bound_elementwise_on_cpu():
    report = tilelang.compile(VADD).profile(sizes={"N": 1 << 20}, num_threads=1, rep=20)
    assert report.bound == "memory", report.text()
    assert report.advice[0].rule == "memory_bound", report.text()
    # at the memory ceiling: fewer bytes; far below it: longer blocks
    assert report.advice[0].defines in ({"dtype": "bfloat16"}, {"BLOCK": 4096})
    g = report.grids[0]
    assert g.counts.bytes == 3 * 4 * (1 << 20)       # A, B read, C written, once each
    assert g.roofline.intensity == pytest.approx(1 / 12)


# ----------------------------------------------------------------------------- rules alone

def _evidence(facts, flops=1e9, nbytes=1e6, time_s=1e-3, blocks=3):
    peaks = Peaks(1e11, 1e10, "fma", "stream")
    counts = GridCounts(0, blocks, flops, flops, nbytes, 0.0, "float32")
    return GridEvidence(0, time_s, counts, Roofline(peaks, flops, nbytes, time_s), facts)


def _ctx(**names):
    knobs = Knobs(names=names, values={"BLOCK_M": 128}, settable={"BLOCK_M"})
    return Context(knobs, [], 2, "cpu")


def test_idle_threads_rule_cites_its_evidence():
    ev = _evidence({"idle_at_end_share": 0.38, "imbalance_share": 0.38, "threads_used": 2},
                   time_s=0.05)
    top = advise(ev, _ctx(block_m="BLOCK_M"))[0]
    assert top.line == "2 of 2 threads, 38% idle at the end (3 blocks) -> more blocks " \
                       "(smaller BLOCK_M)"
    assert top.defines == {"BLOCK_M": 64}
    assert name_bound(ev) == "imbalance"


def test_no_rule_fires_on_a_kernel_at_its_roofline():
    ev = _evidence({"phase_shares": {"gemm": 0.97, "pack B": 0.02},
                    "idle_at_end_share": 0.01}, time_s=1e9 / 1e11 / 0.9)
    assert advise(ev, _ctx()) == []
    assert name_bound(ev) == "compute"


def test_launch_bound():
    ev = _evidence({"launch_share": 0.8}, flops=1e3, nbytes=1e3, time_s=20e-6)
    assert name_bound(ev) == "latency/launch"
    assert advise(ev, _ctx())[0].rule == "launch_bound"
