"""The profiler's advice on kernels built to have one known problem each.

On tcsim the simulation is deterministic, so each test also follows the advice (the
defines it names) and asserts that the simulated time goes down. On the CPU the named
bound and the top advice are asserted; the speed-up of following it is reported by
benchmarks/profile.py, not asserted here.
"""
import os

import pytest

import tilelang
from tilelang.profiler.evidence import GridEvidence
from tilelang.profiler.counts import GridCounts, count
from tilelang.profiler.knobs import Knobs
from tilelang.profiler.roofline import Peaks, Roofline
from tilelang.profiler.rules import Context, advise, name_bound

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEMM = os.path.join(ROOT, "examples", "gemm.tl")
VADD = os.path.join(ROOT, "examples", "vector_add.tl")


def _profile(path, target, sizes, **defines):
    return tilelang.compile(path, target=target, defines=defines).profile(sizes=sizes)


def _follow(path, target, sizes, report, **defines):
    """The simulated time of the kernel with the top advice's defines applied: one
    timing-only launch through TileLang's profiler, not the profile that gave it."""
    advice = report.advice[0]
    assert advice.defines, f"the advice names no define to apply: {advice.line}"
    kernel = tilelang.compile(path, target=target, defines={**defines, **advice.defines})
    return kernel.get_profiler(sizes=sizes).do_bench(warmup=0, rep=1) / 1e3


# ----------------------------------------------------------------------------- tcsim

def test_single_stage_pipeline_on_tcsim():
    sizes = {"M": 2048, "N": 2048, "K": 1024}
    base = dict(in_dtype="bfloat16", NUM_STAGES=1)
    report = _profile(GEMM, "tcsim:h100_like", sizes, **base)
    top = report.advice[0]
    assert report.bound == "latency/launch"
    assert top.rule == "pipeline_wait" and top.defines == {"NUM_STAGES": 3}
    assert "DMA-wait" in top.evidence and "num_stages=1" in top.evidence
    assert top.action.startswith("NUM_STAGES 3 (measured: ") and "% less time)" in top.action
    assert _follow(GEMM, "tcsim:h100_like", sizes, report, **base) < 0.8 * report.time_s


def test_ragged_last_wave_on_tcsim():
    sizes = {"M": 640, "N": 128, "K": 256}            # 5 blocks on 4 cores: 2 waves
    base = dict(in_dtype="bfloat16", BLOCK_M=128, BLOCK_N=128, BLOCK_K=64)
    report = _profile(GEMM, "tcsim:tiny", sizes, **base)
    top = report.advice[0]
    assert report.bound == "imbalance"
    assert top.rule == "tail_wave" and "last wave 1/4 full" in top.evidence
    assert top.defines == {"BLOCK_M": 64}
    assert _follow(GEMM, "tcsim:tiny", sizes, report, **base) < report.time_s


def test_memory_bound_elementwise_on_tcsim():
    sizes = {"N": 1 << 18}
    report = _profile(VADD, "tcsim:tiny", sizes)
    top = report.advice[0]
    assert report.bound == "memory"
    assert top.rule == "memory_bound" and top.defines == {"dtype": "bfloat16"}
    assert _follow(VADD, "tcsim:tiny", sizes, report) < 0.7 * report.time_s


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
# What the CPU tests assert is read from least times (the launch's, each block's, each
# phase's), from block counts and from the fixed host peaks of conftest.py, so a busy
# host does not change it; the speed-up of following the advice is measured by
# benchmarks/profile.py.

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


# Two threads on a host with two cores: another process on either core stretches the
# launch beyond what least block times can correct, so the named bound can change under
# load. The balance rule itself is tested without timing below.
@pytest.mark.slow
def test_ragged_last_wave_on_cpu():
    """3 blocks on 2 threads: the advice is more, smaller blocks whose count divides
    among the threads — not merely a smaller BLOCK_M."""
    sizes = {"M": 768, "N": 256, "K": 1024}      # blocks long against the launch
    defines = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 256}
    report = tilelang.compile(GEMM, defines=defines).profile(sizes=sizes, num_threads=2,
                                                             rep=10)
    top = report.advice[0]
    assert report.bound == "imbalance", report.text()
    assert top.rule == "balance", report.text()
    assert top.evidence.startswith("3 blocks on 2 threads, the last round runs 1 of 2")
    after = tilelang.compile(GEMM, defines={**defines, **top.defines})._func()
    blocks = count(after, sizes)[0].blocks
    assert blocks % 2 == 0 and f"{blocks} blocks, predicted" in top.action


def test_memory_bound_elementwise_on_cpu():
    report = tilelang.compile(VADD).profile(sizes={"N": 1 << 20}, num_threads=1, rep=20)
    assert report.bound == "memory", report.text()
    top = report.advice[0]
    # no knob of this kernel moves fewer bytes: a narrower dtype or fusion does
    assert top.rule == "memory_bound" and top.defines == {"dtype": "bfloat16"}, report.text()
    assert "fewer bytes" in top.action
    g = report.grids[0]
    assert g.counts.bytes == 3 * 4 * (1 << 20)       # A, B read, C written, once each
    assert g.roofline.intensity == pytest.approx(1 / 12)


# ----------------------------------------------------------------------------- rules alone

def _evidence(facts, flops=1e9, nbytes=1e6, time_s=1e-3, blocks=3, peaks=(1e11, 1e10)):
    peaks = Peaks(*peaks, "fma", "stream")
    counts = GridCounts(0, blocks, flops, flops, nbytes, 0.0, "float32")
    return GridEvidence(0, time_s, counts, Roofline(peaks, flops, nbytes, time_s), facts)


def _ctx(values=None, blocks_with=None, threads=2, steps=None, **names):
    values = values or {"BLOCK_M": 128}
    knobs = Knobs(names=names, values=values, settable=set(values))
    return Context(knobs, [], threads, "cpu", blocks_with, steps or {})


def _rows(m):
    """The block count of a 768 x 256 GEMM whose BLOCK_M is set (BLOCK_N 256)."""
    return lambda defines: [-(-m // defines["BLOCK_M"])]


def _timed_blocks(blocks, per_block, threads, pack_b=0.0):
    rounds = -(-blocks // threads)
    return {"blocks_busy_s": blocks * per_block, "makespan_s": rounds * per_block,
            "phase_s": {"pack B": blocks * pack_b, "gemm": blocks * (per_block - pack_b)},
            "imbalance_share": 1 - blocks / (threads * rounds), "threads_used": threads}


def test_balance_rule_picks_a_count_that_divides_among_the_threads():
    ev = _evidence(_timed_blocks(3, 1e-3, 2, pack_b=5e-5), time_s=2e-3)
    ctx = _ctx({"BLOCK_M": 256}, _rows(768), steps={"block_m": 14}, block_m="BLOCK_M")
    top = advise(ev, ctx)[0]
    assert top.rule == "balance" and top.defines == {"BLOCK_M": 192}
    # 4 blocks of 192 rows for 256: 2 rounds of 0.05 + 3/4 * 0.95 ms, for 2 ms
    assert top.score == pytest.approx(1 - 2 * (0.05 + 3 / 4 * 0.95) / 2.0)
    assert top.line == ("3 blocks on 2 threads, the last round runs 1 of 2 threads: 25% of "
                        "thread time idle -> more, smaller blocks (BLOCK_M=192): 4 blocks, "
                        "predicted 24% less time")
    assert name_bound(ev) == "imbalance"


def test_balance_rule_stays_silent_when_no_size_helps():
    """Halving a block whose operand packing dominates costs more than the idle thread
    saves: no advice (the bound still says imbalance)."""
    ev = _evidence(_timed_blocks(3, 1e-3, 2, pack_b=9e-4), time_s=2e-3)
    ctx = _ctx({"BLOCK_M": 256}, _rows(768), block_m="BLOCK_M")
    assert [a.rule for a in advise(ev, ctx)] == []
    assert name_bound(ev) == "imbalance"


def test_packing_rule_predicts_its_gain():
    facts = _timed_blocks(32, 1e-4, 1, pack_b=6e-5)
    facts["phase_shares"] = {"pack B": 0.6, "gemm": 0.4}
    ev = _evidence(facts, blocks=32, time_s=3.2e-3)
    ctx = _ctx({"BLOCK_M": 8}, _rows(256), threads=1, block_m="BLOCK_M")
    top = advise(ev, ctx)[0]
    assert top.rule == "packing" and top.defines == {"BLOCK_M": 32}
    # 8 blocks of 4x the rows (at most 4x), each packing B once: 8 * (0.06 + 4 * 0.04) ms
    # vs 3.2 ms
    assert top.score == pytest.approx(1 - 8 * (0.06 + 4 * 0.04) / 3.2)
    # a knob that is not a constant of the source: the direction, without a define
    fixed = advise(ev, _ctx({}, None, threads=1, block_m="block_M"))[0]
    assert fixed.rule == "packing" and fixed.defines == {} and fixed.action == \
        "larger block_M"


@pytest.mark.parametrize("seconds, waiting, rule_action, defines, bound", [
    (1e-4 * 1.1, 0.6, "fewer bytes", {"dtype": "bfloat16"}, "memory"),   # at the ceiling
    (1e-4 * 4.0, 0.0, "fewer bytes", {"dtype": "bfloat16"}, "memory"),   # below, no waits
    (1e-4 * 4.0, 0.6, "longer blocks", {"BLOCK": 4096}, "latency/launch"),  # loads waited on
])
def test_memory_bound_rule(seconds, waiting, rule_action, defines, bound):
    ev = _evidence({"latency_share": waiting}, flops=1e5, nbytes=1e6, time_s=seconds)
    ctx = _ctx({"BLOCK": 1024, "dtype": "float32"}, block="BLOCK", dtype="dtype")
    top = advise(ev, ctx)[0]
    assert top.rule == "memory_bound" and rule_action in top.action
    assert top.defines == defines and name_bound(ev) == bound


def test_no_rule_fires_on_a_kernel_at_its_roofline():
    ev = _evidence({"phase_shares": {"gemm": 0.97, "pack B": 0.02},
                    "imbalance_share": 0.01}, time_s=1e9 / 1e11 / 0.9)
    assert advise(ev, _ctx()) == []
    assert name_bound(ev) == "compute"


def test_launch_bound():
    ev = _evidence({"launch_share": 0.8}, flops=1e3, nbytes=1e3, time_s=20e-6)
    assert name_bound(ev) == "latency/launch"
    assert advise(ev, _ctx())[0].rule == "launch_bound"


def test_the_schedule_replays_the_runtimes():
    from tilelang.profiler.timers import makespan
    assert makespan([1.0, 1.0, 1.0], 2) == 2.0
    assert makespan([1.0] * 4, 2) == 2.0 and makespan([1.0] * 4, 8) == 1.0
    assert makespan([3.0, 1.0, 1.0, 1.0], 2) == 4.0       # two chunks of two blocks
    assert makespan([3.0, 1.0, 1.0, 1.0], 2, chunks_per_thread=4) == 3.0   # of one
    assert makespan([1.0] * 16, 2, chunks_per_thread=4) == 8.0
    assert makespan([], 4) == 0.0


def test_time_outside_the_blocks_is_the_least_over_the_calls():
    import numpy as np
    from tilelang.profiler.timers import outside_blocks

    def table(*spans):                      # (start, end) stamps of each block, in ticks
        return np.array([[s, e, 0] for s, e in spans], np.int64)
    # two threads' blocks overlap: 0-60 and 40-100 cover 100 ticks; a gap of 50 ticks
    # between two grids is outside the blocks too
    calls = [[table((0, 60), (40, 100)), table((150, 200))],      # 150 of 200 us covered
             [table((0, 30), (30, 90)), table((90, 120))]]        # 120 of 400 us
    assert outside_blocks(calls, [200e-6, 400e-6], 1e6) == pytest.approx(50e-6)
    assert outside_blocks([], [], 1e6) == 0.0


def test_a_resize_that_does_not_split_the_work_saves_nothing():
    """A constant in a gemm tile's shape that leaves the block count as it is (a page
    size, say) cannot make each block do less of the grid's work."""
    facts = _timed_blocks(4, 1e-3, 2, pack_b=1e-4)
    facts["imbalance_share"] = 0.18
    ev = _evidence(facts, blocks=4, time_s=2.2e-3)
    ctx = _ctx({"PAGE": 64}, lambda defines: [4], block_m="PAGE")
    assert [a.rule for a in advise(ev, ctx)] == []
