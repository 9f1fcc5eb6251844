"""The cpu target's runner for the profiler and the autotuner (`profiler/runners.py`).

Kernels are called in place and timed with the wall clock. The profile's measurement
times the plain build, then runs the *timers build* (`profiler/timers.py`: cycle-counter
reads around each tile op) in turns with it: the timed calls give each block's phases
and its start and end, the plain ones the time and the timers' overhead. The roofline
is the host's measured peaks (`peaks.py`, the host memo); the tuner's estimate is the
IR cost model (`autotuner/model.py`); the default GEMM space is made of whole register
tiles of this machine.
"""
from __future__ import annotations

import itertools
import statistics

from ...profiler.runners import Runner, threads_label, upto


class CpuRunner(Runner):
    name = "cpu"

    def call(self, runtime_kernel, args: list, num_threads=None) -> None:
        runtime_kernel(*args, out_idx=None, num_threads=num_threads)

    def threads(self, num_threads=None) -> int:
        from ...runtime.launch import default_num_threads
        return num_threads or default_num_threads()

    def time_ms(self, runtime_kernel, args: list, *, warmup=25, rep=100, n_warmup=0,
                n_repeat=0, quantiles=None, return_mode="mean", early_stop=None,
                num_threads=None):
        from ...profiler import bench

        def once():
            runtime_kernel(*args, out_idx=None, num_threads=num_threads)
        return bench.do_bench(once, warmup, rep, n_warmup, n_repeat, quantiles=quantiles,
                              return_mode=return_mode, early_stop_baseline=early_stop)

    # -- the profile ----------------------------------------------------------------

    def measure(self, kernel_function, func, args, counts, *, threads, warmup=25, rep=100,
                timers=True):
        return cpu_evidence(kernel_function, func, args, counts, threads, warmup, rep,
                            use_timers=timers)

    def roofline_peaks(self, dtype: str, threads: int, working_set: float | None = None):
        """The target's ceilings (the host's peaks memo, measured briefly first if this
        host has none or measured again when it is provisional: `hostpeaks.host_peaks`),
        labelled with the vector width, the memory level and the thread count they are
        from."""
        from ...profiler import hostpeaks
        from ...profiler.roofline import Peaks
        from .machine import host
        from .peaks import ceilings
        figures = hostpeaks.host_peaks()            # makes the memo the target reads
        peaks = self.target.roofline_peaks(dtype, threads, working_set)
        c = ceilings(figures, dtype, threads, working_set, {"l2": host().l2, "l3": host().l3})
        if peaks is None:                           # a cross target: this host's figures
            flops, bw = c.flops_per_s, c.bytes_per_s
        else:
            flops, bw = peaks.flops_per_s, peaks.bytes_per_s
        name = "fp64" if c.compute == "float64" else "fp32"
        return Peaks(flops, bw, f"{name} FMA, {c.width}-bit, {threads_label(c.flops_threads)}",
                     c.memory_label)

    def block_steps(self, dtype: str) -> dict:
        """The register tile: MR rows by NR columns of accumulators."""
        from ... import dtypes
        bits = dtypes.bits(dtype) if dtypes.is_float(dtype) else 32
        mr, nr = self.target.machine().register_tile(max(32, bits))
        return {"block_m": mr, "block_n": nr}

    # -- the autotuner --------------------------------------------------------------

    def model_time(self, kernel_function, func, env: dict, threads: int) -> float:
        """The CPU cost model over the IR, at the host's per-thread peaks."""
        from ...autotuner.model import cpu_time
        from ...profiler import hostpeaks
        figures = hostpeaks.host_peaks()
        widths = figures["fma"]["float32"]
        per_thread = widths[max(widths, key=int)][min(figures["threads"], key=int)]
        copy = figures["bandwidth"]["copy"][min(figures["threads"], key=int)]
        return cpu_time(func, env, self.target.machine(), per_thread, copy, threads)

    def gemm_blocks(self, m, n, k) -> list:
        """Block rows in multiples of the register tile's MR and columns in multiples of
        its NR (whole micro-kernels), from two register tiles to the caches' reach; K
        blocks of 64 to 512."""
        mr, nr = self.target.machine().register_tile(32)
        bm = upto([mr * f for f in (2, 4, 8, 16, 32)], m, mr)
        bn = upto([nr * f for f in (2, 4, 8, 16, 22)], n, nr)
        bk = upto([64, 128, 256, 512], k, 1)
        return list(itertools.product(bm, bn, bk))


# ----------------------------------------------------------------------------- measuring

def cpu_evidence(kfn, func, args, counts, threads: int, warmup: float, rep: float,
                 use_timers: bool = True):
    """The plain build's time (the least of its calls; their median is reported
    beside it), and from the timers build each grid's phases and blocks. Everything the
    rules read is taken from *least* times — the launch's, each block's, each phase's —
    and the schedule of the blocks over the threads is the runtime's, replayed on those
    times (`timers.makespan`): another process taking a core only ever adds time, so on
    a busy host the figures stay those of the kernel."""
    from ...profiler import bench, timers
    from ...profiler.evidence import Measured
    from ...runtime.launch import CHUNKS_PER_THREAD
    rk = kfn.runtime_kernel

    def plain():
        rk(*args, out_idx=None, num_threads=threads)
    times = bench.measure(plain, warmup, rep)
    while len(times) < 5:                 # a median needs a few calls, however long
        times.append(bench.time_call(plain))
    time_s, median_s = min(times) / 1e3, statistics.median(times) / 1e3
    if not use_timers:
        return Measured(time_s, [(c, c.bytes, time_s * _grid_share(counts, c), {}, [])
                                 for c in counts], len(times), median_s=median_s)
    timed = _TimedRun(kfn, func, args, counts, threads)
    hz = timers.counter_hz()
    if not hz:
        return Measured(time_s, [(c, c.bytes, time_s, {}, []) for c in counts], len(times),
                        ["no readable cycle counter: no phase times"], median_s=median_s)
    plain_t, timed_t, runs, median_run = timed.alternate(plain,
                                                          rounds=max(5, min(15, len(times))))
    overhead = statistics.median(timed_t) / statistics.median(plain_t) - 1
    read = [timers.read(g, [run[i] for run in runs], median_run[i], threads, hz)
            for i, g in enumerate(timed.grids)]
    spans = [timers.makespan(gt.block_s, threads, CHUNKS_PER_THREAD) for gt in read]
    total = sum(spans)
    time_s = min(time_s, min(plain_t))
    # the launch and the threads' hand-offs: the lesser of two estimates that a busy
    # host only inflates — the timed calls' time outside their blocks' stamps, and the
    # least plain call less the blocks' schedule
    outside = min(timers.outside_blocks(runs, timed_t, hz), max(0.0, time_s - total))
    launch = outside / (outside + total) if outside + total > 0 else 0.0
    out = []
    for c, gt, span in zip(counts, read, spans):
        idle = max(0.0, 1.0 - gt.busy / (threads * span)) if span > 0 else 0.0
        facts = {"phase_shares": {p: gt.share(p) for p in gt.phases},
                 "phase_s": dict(gt.phases), "blocks_busy_s": gt.busy,
                 "makespan_s": span, "block_max_s": max(gt.block_s, default=0.0),
                 "imbalance_share": idle,
                 "threads_used": min(threads, gt.blocks), "launch_share": launch}
        t = time_s * span / total if total > 0 else time_s / len(counts)
        out.append((c, c.bytes, t, facts, [("thread time", _thread_bar(gt, idle))]))
    return Measured(time_s, out, len(times) + len(plain_t), overhead=overhead,
                    median_s=median_s)


def _grid_share(counts, c) -> float:
    total = sum(x.flops + x.bytes for x in counts) or 1.0
    return (c.flops + c.bytes) / total


def _thread_bar(gt, idle: float) -> list:
    """Thread time: each phase's share of the blocks' time, scaled to the share of
    thread time the blocks take; then the threads' idle share."""
    working = 1.0 - idle
    segs = [(p, gt.share(p) * working) for p in gt.phases]
    segs.append(("idle", idle))
    rest = 1.0 - sum(v for _, v in segs)
    if rest > 0.005:
        segs.append(("other", rest))
    return segs


class _TimedRun:
    """The timers build of a kernel, called on the same arguments as the plain one."""

    def __init__(self, kfn, func, args, counts, threads):
        import numpy as np
        from ...driver import build_module
        from ...ir.nodes import Module
        from ...profiler import timers
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
