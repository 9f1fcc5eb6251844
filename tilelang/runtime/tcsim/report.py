"""What a simulation reports: cycles, time, achieved TFLOPS, MMA utilisation, the
roofline bound and how close the run came to it, bytes per memory level, per-engine busy
share, stall breakdown, waves."""
from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class Report:
    config: str
    cycles: float
    time_s: float
    flops: float                    # useful: over the valid extents of the tiles
    tflops: float                   # useful FLOPs per second
    mma_utilization: float          # useful MMA FLOP/s / the peak at the nominal clock
    roofline_cycles: float
    roofline_bound: str             # "compute" | "memory"
    roofline_fraction: float        # roofline_cycles / cycles
    bytes: dict = field(default_factory=dict)
    l2_hit_rate: float = 0.0
    engine_busy: dict = field(default_factory=dict)      # engine -> fraction of core time
    stalls: dict = field(default_factory=dict)           # kind -> core-cycles
    # engine -> {"sem_wait": share, "bandwidth": share} of core time the engine had an
    # instruction at its queue head that could not start (a wait= not yet signalled /
    # its transfer slowed by a shared bandwidth pool)
    engine_stalls: dict = field(default_factory=dict)
    blocks: int = 0
    waves: int = 0
    cores: int = 0
    blocks_per_core: int = 1        # resident at once (memory and config permitting)
    instructions: int = 0
    issued_flops: float = 0.0       # whole MMA tiles, padding of ragged tiles included
    clock_ghz: float = 0.0          # the clock the run was simulated at (the clock model)
    duty_clock_ghz: float = 0.0     # the clock its tensor-core duty implies (within the
                                    # re-run tolerance of clock_ghz)
    nominal_clock_ghz: float = 0.0
    calibrated: bool = True         # False: the config has no published calibration
    # a kernel of several grids: each grid's own report, in launch order (this report
    # sums them); empty for a kernel of one grid
    grids: list = field(default_factory=list)

    def summary(self) -> str:
        b = self.bytes
        lines = [
            f"tcsim:{self.config}  {self.blocks} blocks on {self.cores} cores, "
            f"{self.blocks_per_core} resident per core "
            f"({self.waves} wave{'s' if self.waves != 1 else ''})"
            + ("" if self.calibrated else "  [uncalibrated: no published figures "
               "calibrate this config; relative comparisons only]"),
            f"  cycles            {self.cycles:,.0f}  ({self.time_s * 1e6:,.2f} us"
            f"{self._clock()})",
            f"  achieved          {self.tflops:,.2f} TFLOPS{self._padding()}",
            f"  MMA utilisation   {self.mma_utilization * 100:.1f} %",
            f"  roofline          {self.roofline_bound}-bound, {self.roofline_cycles:,.0f} "
            f"cycles: {self.roofline_fraction * 100:.1f} % of it reached",
            f"  bytes             HBM {_mb(b.get('hbm', 0))}  L2 {_mb(b.get('l2', 0))} "
            f"(hit {self.l2_hit_rate * 100:.0f} %)  shared {_mb(b.get('smem', 0))}"
            + (f"  gathered {_mb(b['gather'])}" if b.get("gather") else ""),
            "  engines busy      " + "  ".join(f"{k} {v * 100:.1f}%"
                                              for k, v in self.engine_busy.items()),
            "  stalls (core-cyc) " + "  ".join(f"{k} {v:,.0f}" for k, v in self.stalls.items()),
        ]
        return "\n".join(lines)

    def _clock(self) -> str:
        """The effective clock, when the power model lowered it below nominal."""
        if not self.nominal_clock_ghz or self.clock_ghz >= self.nominal_clock_ghz - 1e-9:
            return ""
        return (f" at {self.clock_ghz:.2f} GHz: tensor-core load holds the clock below "
                f"its nominal {self.nominal_clock_ghz:.2f}")

    def _padding(self) -> str:
        """How much of the issued MMA work multiplied padding, when any did."""
        if self.issued_flops <= self.flops * (1 + 1e-9):
            return ""
        pad = 1.0 - self.flops / self.issued_flops
        issued = self.issued_flops / self.time_s / 1e12 if self.time_s else 0.0
        return f" useful  ({issued:,.2f} issued: {pad * 100:.1f} % of the MMA work is padding)"

    def __str__(self) -> str:
        return self.summary()

    def to_dict(self) -> dict:
        """Every figure as plain JSON-able data (for tools and benchmark logs)."""
        from dataclasses import asdict
        return asdict(self)


def _mb(n: float) -> str:
    return f"{n / 1e6:,.2f} MB"


def build_report(sim) -> Report:
    cfg = sim.cfg
    cycles = sim.end
    cores = cfg.cores
    flops = sum(sim.useful.values())
    compute = sum(f / (cfg.flops_per_clk(d) * cores) for d, f in sim.useful.items())
    b = dict(sim.bytes)
    b["hbm"] = b["hbm_read"] + b["hbm_write"]
    b["l2"] = b["l2_read"] + b["hbm_write"]
    memory = b["hbm"] / sim.hbm_per_clk
    bound = max(compute, memory)
    total_core = cycles * cores if cycles else 1.0
    busy, stalls = {}, {"sem_wait": 0.0, "bandwidth": 0.0, "queue_full": 0.0, "drain": 0.0}
    engine_stalls = {}
    for name_i, name in enumerate(("DMA_IN", "DMA_OUT", "MMA", "VEC")):
        busy[name] = sum(engines[name_i].busy for engines in sim.phys) / total_core
        engine_stalls[name] = {
            "sem_wait": sum(engines[name_i].stall_sem for engines in sim.phys) / total_core,
            "bandwidth": sum(engines[name_i].stall_bw for engines in sim.phys) / total_core}
    for engines in sim.phys:
        for e in engines:
            stalls["sem_wait"] += e.stall_sem
            stalls["bandwidth"] += e.stall_bw
    for c in sim.cores:
        stalls["sem_wait"] += c.stall["sem_wait"]
        stalls["queue_full"] += c.stall["queue_full"]
        stalls["drain"] += c.stall["drain"]
    l2 = sim.l2
    accesses = l2.hits + l2.misses
    # the clock the cycles were simulated at (its bandwidths per cycle follow it); the
    # clock the run's tensor-core duty implies decides whether it runs again (sim.run)
    clock = sim.clock_ghz
    time_s = cycles / (clock * 1e9)
    return Report(
        config=cfg.name, cycles=cycles, time_s=time_s, flops=flops,
        tflops=flops / time_s / 1e12 if cycles else 0.0,
        # of the peak at the nominal clock: a throttled clock shows as lost utilisation
        mma_utilization=compute / cycles * clock / cfg.clock_ghz if cycles else 0.0,
        roofline_cycles=bound, roofline_bound="compute" if compute >= memory else "memory",
        roofline_fraction=bound / cycles if cycles else 0.0, bytes=b,
        l2_hit_rate=l2.hits / accesses if accesses else 0.0, engine_busy=busy,
        stalls=stalls, engine_stalls=engine_stalls, blocks=len(sim.order),
        waves=math.ceil(len(sim.order) / (cores * sim.resident)), cores=cores,
        blocks_per_core=sim.resident, instructions=sim.instructions,
        issued_flops=sum(sim.flops.values()), clock_ghz=clock,
        duty_clock_ghz=cfg.effective_clock_ghz(busy["MMA"]),
        nominal_clock_ghz=cfg.clock_ghz, calibrated=cfg.calibrated)


def sequence(reports: list, cfg) -> Report:
    """One report for grids run one after another (a kernel of several grids): times,
    work, bytes and stalls add up; shares, rates and the clock are over the whole run
    (weighted by each grid's time); `grids` keeps each grid's own report."""
    time_s = sum(r.time_s for r in reports)

    def weighted(get) -> float:
        return sum(get(r) * r.time_s for r in reports) / time_s if time_s else 0.0
    keys = dict.fromkeys(k for r in reports for k in r.bytes)
    bytes_ = {k: sum(r.bytes.get(k, 0) for r in reports) for k in keys}
    hits = sum(r.l2_hit_rate * r.bytes.get("l2_read", 0) for r in reports)
    cycles = sum(r.cycles for r in reports)
    roof = sum(r.roofline_cycles for r in reports)
    compute = sum(r.roofline_cycles for r in reports if r.roofline_bound == "compute")
    flops = sum(r.flops for r in reports)
    return Report(
        config=reports[0].config, cycles=cycles, time_s=time_s, flops=flops,
        tflops=flops / time_s / 1e12 if time_s else 0.0,
        mma_utilization=weighted(lambda r: r.mma_utilization), roofline_cycles=roof,
        roofline_bound="compute" if compute * 2 >= roof else "memory",
        roofline_fraction=roof / cycles if cycles else 0.0, bytes=bytes_,
        l2_hit_rate=hits / bytes_["l2_read"] if bytes_.get("l2_read") else 0.0,
        engine_busy={k: weighted(lambda r: r.engine_busy.get(k, 0.0))
                     for k in reports[0].engine_busy},
        stalls={k: sum(r.stalls.get(k, 0) for r in reports) for k in reports[0].stalls},
        engine_stalls={k: {kind: weighted(lambda r: r.engine_stalls.get(k, {}).get(kind, 0.0))
                           for kind in v} for k, v in reports[0].engine_stalls.items()},
        blocks=sum(r.blocks for r in reports), waves=sum(r.waves for r in reports),
        cores=reports[0].cores, blocks_per_core=max(r.blocks_per_core for r in reports),
        instructions=sum(r.instructions for r in reports),
        issued_flops=sum(r.issued_flops for r in reports),
        clock_ghz=weighted(lambda r: r.clock_ghz), nominal_clock_ghz=cfg.clock_ghz,
        duty_clock_ghz=weighted(lambda r: r.duty_clock_ghz),
        calibrated=reports[0].calibrated, grids=list(reports))
