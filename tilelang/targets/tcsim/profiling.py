"""The tcsim target's runner for the profiler and the autotuner (`profiler/runners.py`).

A functional simulation computes the outputs; time is the simulator's, from a
timing-only launch, the same on every call (so a tuner compares configs without
noise, and the tuner's estimate *is* that simulation). The profile reads the
simulator's report of each grid: per-engine busy, waiting and bandwidth-stalled
shares, waves and HBM traffic. The roofline is the machine config's.
"""
from __future__ import annotations

import itertools

from ...profiler.runners import Runner, upto

ENGINES = ("DMA_IN", "DMA_OUT", "MMA", "VEC")


class SimRunner(Runner):
    name = "tcsim"
    deterministic = True
    returns_outputs = False          # a simulated call writes its outputs in place
    pipeline_depths = (1, 2, 3, 4)

    def runtime_kernel(self, kernel_function):
        """The simulated kernel, built without `out_idx` (the profiler passes every
        argument; a tcsim call writes its outputs in place)."""
        from ...driver import build_module
        library = build_module(kernel_function.module(), kernel_function.options)
        return library[kernel_function.name]

    def call(self, runtime_kernel, args: list, num_threads=None) -> None:
        runtime_kernel(*args, mode="functional")

    def time_ms(self, runtime_kernel, args: list, *, quantiles=None, **_ignored):
        runtime_kernel(*args, mode="timing")
        ms = runtime_kernel.last_report.time_s * 1e3
        return [ms for _ in quantiles] if quantiles is not None else ms

    # -- the profile ----------------------------------------------------------------

    def measure(self, kernel_function, func, args, counts, **_ignored):
        """One timing-only simulation and the simulator's per-engine figures."""
        return sim_evidence(self.runtime_kernel(kernel_function), func, args, counts)

    def roofline_peaks(self, dtype: str, threads: int = 0, working_set=None):
        """The config's dense MMA peak for `dtype` inputs (bf16's when the machine has
        no MMA for `dtype`) and its HBM peak."""
        from ...profiler.roofline import Peaks
        from .config import MMA_CLASS
        cfg = self.target.machine_config()
        peaks = self.target.roofline_peaks(dtype, threads)
        if peaks is None:
            dtype = "bfloat16"
            peaks = self.target.roofline_peaks(dtype, threads)
        return Peaks(peaks.flops_per_s, peaks.bytes_per_s,
                     f"{MMA_CLASS.get(dtype, dtype)} MMA peak, {cfg.cores} cores", "HBM peak")

    def block_steps(self, dtype: str) -> dict:
        return {"block_m": 64, "block_n": 64}       # a warpgroup's MMA rows

    # -- the autotuner --------------------------------------------------------------

    def model_time(self, kernel_function, func, env: dict, threads: int) -> float:
        """A timing-only simulation."""
        from ...ir import nodes as ir
        from ...profiler.supply import InputSupply
        shapes = [(InputSupply(func).shape(p, env), p.dtype) if isinstance(p, ir.Buffer)
                  else env.get(p.name, 1) for p in func.params]
        kernel = self.runtime_kernel(kernel_function)
        kernel(*shapes, mode="timing")
        return kernel.last_report.time_s

    def gemm_blocks(self, m, n, k) -> list:
        """MMA-atom-friendly powers of two."""
        bm = upto([64, 128, 256], m, 64)
        bn = upto([64, 128, 256], n, 64)
        bk = upto([32, 64], k, 32)
        return list(itertools.product(bm, bn, bk))


# ----------------------------------------------------------------------------- measuring

def sim_evidence(runtime_kernel, func, args, counts):
    """One timing-only simulation: tensors as (shape, dtype) except index tensors, whose
    values steer addresses and loop bounds. Each grid is read from its own report (the
    simulator runs a kernel's grids one after another and keeps each one's report)."""
    from ... import dtypes
    from ...ir import nodes as ir
    from ...profiler.evidence import Measured
    sim_args = []
    for p, a in zip(func.params, args):
        if isinstance(p, ir.Buffer) and not dtypes.is_int(p.dtype):
            sim_args.append((a.shape, p.dtype))
        else:
            sim_args.append(a)
    runtime_kernel(*sim_args, mode="timing")
    rep = runtime_kernel.last_report
    parts = rep.grids or [rep]
    if len(parts) != len(counts):       # cannot happen for a kernel the driver compiled
        raise ValueError(f"the simulator reported {len(parts)} grids of a kernel with "
                         f"{len(counts)}")
    grids = []
    for part, c in zip(parts, counts):
        facts = _sim_facts(part, c)
        bars = [(e, _engine_bar(part, e, facts["active_core_share"])) for e in ENGINES
                if part.engine_busy.get(e, 0) > 0]
        measured_bytes = part.bytes.get("hbm", c.bytes) or c.bytes
        grids.append((c, measured_bytes, part.time_s, facts, bars))
    return Measured(rep.time_s, grids, 1)


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
