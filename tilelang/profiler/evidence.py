"""What each target measures for the profiler: a `GridEvidence` per grid.

`cpu_evidence` times the kernel, then runs the timers build (timers.py) alternately
with the plain one — the timed calls give each block's phases and its start and end,
the plain ones the time and the timers' overhead. `sim_evidence` runs one timing-only
simulation and reads the simulator's per-engine busy and wait shares, waves and HBM
traffic. The facts each gives are the inputs the rules (rules.py) name.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from . import timers
from .counts import GridCounts
from .roofline import Roofline


@dataclass
class GridEvidence:
    index: int
    time_s: float
    counts: GridCounts
    roofline: Roofline
    facts: dict = field(default_factory=dict)
    bars: list = field(default_factory=list)      # [(label, [(segment, share of time)])]
    bound: str = ""

    def to_dict(self) -> dict:
        return {"grid": self.index, "time_s": self.time_s, "counts": self.counts.to_dict(),
                "roofline": self.roofline.to_dict(), "bound": self.bound,
                "facts": self.facts,
                "bars": [{"label": label, "segments": dict(segs)} for label, segs in self.bars]}


@dataclass
class Measured:
    """A target's measurement of one launch."""
    time_s: float
    grids: list                   # [(GridCounts, bytes for the roofline, time_s, facts, bars)]
    calls: int = 1
    notes: list = field(default_factory=list)
    overhead: float | None = None  # the timers build's extra time, as a share


# ----------------------------------------------------------------------------- CPU

def cpu_evidence(kfn, func, args, counts, threads: int, warmup: float, rep: float,
                 use_timers: bool = True) -> Measured:
    from . import bench
    rk = kfn.runtime_kernel

    def plain():
        rk(*args, out_idx=None, num_threads=threads)
    times = bench.measure(plain, warmup, rep)
    while len(times) < 5:                 # a median needs a few calls, however long
        times.append(bench.time_call(plain))
    time_s = statistics.median(times) / 1e3
    if not use_timers:
        return Measured(time_s, [(c, c.bytes, time_s * _grid_share(counts, c), {}, [])
                                 for c in counts], len(times))
    timed = _TimedRun(kfn, func, args, counts, threads)
    hz = timers.counter_hz()
    if not hz:
        return Measured(time_s, [(c, c.bytes, time_s, {}, []) for c in counts], len(times),
                        ["no readable cycle counter: no phase times"])
    plain_t, timed_t, runs, median_run = timed.alternate(plain,
                                                          rounds=max(5, min(15, len(times))))
    overhead = statistics.median(timed_t) / statistics.median(plain_t) - 1
    grids = []
    spans = []
    for i, (c, g) in enumerate(zip(counts, timed.grids)):
        gt = timers.read(g, [run[i] for run in runs], median_run[i], threads, hz)
        spans.append(gt.span)
        grids.append((c, gt))
    total_span = sum(spans) or 1.0
    timed_wall = statistics.median(timed_t)
    out = []
    for (c, gt), span in zip(grids, spans):
        t = time_s * span / total_span
        launch = max(0.0, 1.0 - total_span / timed_wall) if timed_wall else 0.0
        facts = {"phase_shares": {p: gt.share(p) for p in gt.phases},
                 "phase_s": dict(gt.phases), "idle_at_end_share": gt.idle_at_end_share,
                 "imbalance_share": gt.idle_share, "threads_used": min(threads, gt.blocks),
                 "launch_share": launch, "blocks_busy_s": gt.busy, "span_s": gt.span}
        out.append((c, c.bytes, t, facts, [("thread time", _thread_bar(gt))]))
    return Measured(time_s, out, len(times), overhead=overhead)


def _grid_share(counts, c) -> float:
    total = sum(x.flops + x.bytes for x in counts) or 1.0
    return (c.flops + c.bytes) / total


def _thread_bar(gt) -> list:
    """Thread time: each phase's share of the blocks' time, scaled to the share of
    thread time the blocks took; then the idle threads' share."""
    working = 1.0 - gt.idle_share
    segs = [(p, gt.share(p) * working) for p in gt.phases]
    segs.append(("idle", gt.idle_share))
    rest = 1.0 - sum(v for _, v in segs)
    if rest > 0.005:
        segs.append(("other", rest))
    return segs


class _TimedRun:
    """The timers build of a kernel, called on the same arguments as the plain one."""

    def __init__(self, kfn, func, args, counts, threads):
        import numpy as np
        from ..driver import build_module
        from ..ir.nodes import Module
        timed_func, self.grids = timers.instrument(func)
        self.kernel = build_module(Module((timed_func,)), kfn.options)[timed_func.name]
        self.tables = [np.zeros((c.blocks, timers.FIRST_PHASE + len(g.phases)), np.int64)
                       for c, g in zip(counts, self.grids)]
        self.args = list(args) + self.tables
        self.threads = threads

    def alternate(self, plain, rounds: int):
        """Plain and timed calls in turns: their times, every timed call's tables and
        the tables of the median timed call."""
        import time
        plain_t, timed_t, kept = [], [], []
        self.kernel(*self.args, out_idx=None, num_threads=self.threads)     # warm
        for _ in range(rounds):
            t0 = time.perf_counter()
            plain()
            t1 = time.perf_counter()
            for t in self.tables:
                t[:] = 0
            self.kernel(*self.args, out_idx=None, num_threads=self.threads)
            t2 = time.perf_counter()
            plain_t.append(t1 - t0)
            timed_t.append(t2 - t1)
            kept.append([t.copy() for t in self.tables])
        order = sorted(range(rounds), key=lambda i: timed_t[i])
        return plain_t, timed_t, kept, kept[order[rounds // 2]]


# ----------------------------------------------------------------------------- tcsim

ENGINES = ("DMA_IN", "DMA_OUT", "MMA", "VEC")


def sim_evidence(runtime_kernel, func, args, counts) -> Measured:
    """One timing-only simulation: tensors as (shape, dtype) except index tensors, whose
    values steer addresses and loop bounds."""
    from .. import dtypes
    from ..ir import nodes as ir
    sim_args = []
    for p, a in zip(func.params, args):
        if isinstance(p, ir.Buffer) and not dtypes.is_int(p.dtype):
            sim_args.append((a.shape, p.dtype))
        else:
            sim_args.append(a)
    runtime_kernel(*sim_args, mode="timing")
    rep = runtime_kernel.last_report
    c = counts[0]
    facts = _sim_facts(rep, c)
    bars = [(e, _engine_bar(rep, e, facts["active_core_share"])) for e in ENGINES
            if rep.engine_busy.get(e, 0) > 0]
    measured_bytes = rep.bytes.get("hbm", c.bytes) or c.bytes
    notes = []
    if len(counts) > 1:
        notes.append("tcsim reports one launch: every grid is shown with the whole time")
    return Measured(rep.time_s, [(c, measured_bytes, rep.time_s, facts, bars)
                                 for c in counts], 1, notes)


def _sim_facts(rep, c) -> dict:
    slots = rep.cores * rep.blocks_per_core
    active = min(rep.cores, rep.blocks) / rep.cores if rep.cores else 1.0
    waves = rep.waves
    fill = (rep.blocks - (waves - 1) * slots) / slots if waves else 1.0
    stalls = rep.engine_stalls or {}

    def share(engine, kind):
        if kind == "busy":
            return rep.engine_busy.get(engine, 0.0) / active
        return stalls.get(engine, {}).get(kind, 0.0) / active
    compute = "MMA" if c.gemm_flops else "VEC"
    reads = rep.bytes.get("l2_read", 0.0) + rep.bytes.get("hbm_read", 0.0)
    return {"cores": rep.cores, "slots": slots, "waves": waves, "last_wave_fill": fill,
            "active_core_share": active, "mma_busy_share": share("MMA", "busy"),
            "mma_wait_share": share("MMA", "sem_wait") if c.gemm_flops else None,
            "compute_wait_share": share(compute, "sem_wait"),
            "latency_share": share(compute, "sem_wait"),
            "imbalance_share": (1 - fill) / waves if waves > 1 else 1 - active,
            "load_traffic_ratio": reads / c.bytes_read if c.bytes_read else None,
            "cycles": rep.cycles, "l2_hit_rate": rep.l2_hit_rate,
            "engine_busy": {e: share(e, "busy") for e in ENGINES},
            "engine_wait": {e: share(e, "sem_wait") for e in ENGINES},
            "hbm_bytes": rep.bytes.get("hbm", 0.0)}


def _engine_bar(rep, engine, active) -> list:
    stalls = (rep.engine_stalls or {}).get(engine, {})
    busy = min(1.0, rep.engine_busy.get(engine, 0.0) / active)
    # a transfer slowed by a shared bandwidth pool is busy for longer: that part of
    # its busy time is shown as the bandwidth stall
    bw = min(busy, stalls.get("bandwidth", 0.0) / active)
    wait = min(1.0 - busy, stalls.get("sem_wait", 0.0) / active)
    return [("busy", busy - bw), ("bandwidth", bw), ("waiting", wait),
            ("idle", max(0.0, 1.0 - busy - wait))]
