"""Machine configurations of the simulated tensor-core accelerator, as data.

A `MachineConfig` is a frozen, validated dataclass; every peak figure (TFLOPS, bytes per
cycle, ridge point) is *derived* from its fields, never stored beside them, so a config
cannot contradict itself. The sources of the numbers of each preset are in docs/tcsim.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

# Input dtype of an MMA -> the class that sets its rate (tensor cores run all 16-bit
# floats at one rate, all 8-bit inputs at twice that, float32 as TF32).
MMA_CLASS = {"bfloat16": "b16", "float16": "b16", "float8_e4m3fn": "b8", "float8_e4m3": "b8",
             "float8_e5m2": "b8", "int8": "b8", "uint8": "b8", "float32": "tf32", "float64": "f64"}

ENGINES = ("DMA_IN", "DMA_OUT", "MMA", "VEC")


class ConfigError(ValueError):
    """A machine configuration that cannot describe a machine."""


@dataclass(frozen=True)
class MemLevel:
    """An on-chip memory of each core: its name and capacity in bytes."""
    name: str
    bytes: int


@dataclass(frozen=True)
class MachineConfig:
    name: str
    cores: int
    clock_ghz: float
    # MMA: flops per clock per core for each input class, and the atom granularity:
    # an MMA of MxNxK is ceil(M/atom_m) * ceil(N/atom_n) * ceil(K/atom_k) atoms, with
    # atom_k = atom_k_bytes / element size (the K of one instruction is a fixed byte width).
    mma_flops_per_clk: tuple[tuple[str, int], ...]
    atom_m: int
    atom_n: int
    atom_k_bytes: int
    mma_latency: int
    vec_elems_per_clk: int
    vec_latency: int
    # memory system
    hbm_bytes_per_s: float
    l2_bytes_per_s: float
    l2_bytes: int
    port_bytes_per_clk: float          # one DMA direction of one core
    dma_latency: int                   # first byte after the data phase (pipelined)
    levels: tuple[MemLevel, ...]
    # which levels each use may name (the loader checks programs against these)
    dma_levels: tuple[str, ...]
    mma_ab_levels: tuple[str, ...]
    mma_c_levels: tuple[str, ...]
    vec_levels: tuple[str, ...]
    # scalar unit and queues
    scalar_cycles: int = 1
    queue_depth: int = 8
    issue_interval: int = 1            # cycles an engine needs between two instructions
    # data phases one DMA engine moves at once (a TMA unit keeps several transfers in
    # flight, each from its own pool: an L2 hit beside an HBM stream); 1: one at a time
    dma_transfers: int = 1
    block_launch_cycles: int = 0       # a core's gap between two blocks
    max_blocks_per_core: int = 1       # resident blocks, if their memory fits
    # registers each thread of a block holds besides its fragments (addresses, indices,
    # counters), in bytes, and the level they live in: they count against residency
    thread_bytes: int = 0
    thread_level: str = "RF"
    # the fraction of the HBM peak that transfers can sustain (refresh, page misses,
    # read/write turnaround); the roofline still uses the peak
    hbm_efficiency: float = 1.0
    # the vector unit's slower pipes, in elements per clock per core (0: at the lane rate
    # `vec_elems_per_clk`): special functions (exp2, log2, rsqrt, tanh, division) and
    # conversions between widths; and the bytes per clock a COPY moves through on-chip
    # memory (0: lane rate)
    sfu_elems_per_clk: int = 0
    cvt_elems_per_clk: int = 0
    smem_bytes_per_clk: float = 0.0
    # clock model: the clock the part sustains while its tensor cores are saturated
    # (power-limited; 0: always `clock_ghz`). A run's effective clock falls from
    # `clock_ghz` towards it with the share of time its MMA engines are busy.
    sustained_clock_ghz: float = 0.0
    # L2: the granularity it fetches and keeps data in (bytes), and the latency of a
    # scalar load that hits it (0: every scalar load takes `dma_latency`)
    l2_sector_bytes: int = 32
    l2_latency: int = 0
    # whether the figures were calibrated against published measurements of the part;
    # an uncalibrated config says so in every report
    calibrated: bool = True
    notes: str = field(default="", compare=False)

    def __post_init__(self):
        _validate(self)

    # ------------------------------------------------------------------ derived
    @property
    def clock_hz(self) -> float:
        return self.clock_ghz * 1e9

    def flops_per_clk(self, dtype: str) -> int:
        cls = MMA_CLASS.get(dtype)
        table = dict(self.mma_flops_per_clk)
        if cls not in table:
            raise ConfigError(f"{self.name}: no MMA rate for inputs of dtype {dtype}")
        return table[cls]

    def atom_k(self, dtype: str) -> int:
        from ...dtypes import nbytes
        return max(1, self.atom_k_bytes // nbytes(dtype))

    def atom_cycles(self, dtype: str) -> float:
        """Cycles one core's MMA engine needs for one atom of `dtype` inputs."""
        return 2.0 * self.atom_m * self.atom_n * self.atom_k(dtype) / self.flops_per_clk(dtype)

    def peak_flops(self, dtype: str = "bfloat16") -> float:
        """Dense peak of the whole machine, FLOP/s."""
        return self.cores * self.clock_hz * self.flops_per_clk(dtype)

    def peak_tflops(self, dtype: str = "bfloat16") -> float:
        return self.peak_flops(dtype) / 1e12

    @property
    def hbm_bytes_per_clk(self) -> float:
        return self.hbm_bytes_per_s / self.clock_hz

    @property
    def l2_bytes_per_clk(self) -> float:
        return self.l2_bytes_per_s / self.clock_hz

    def ridge_flops_per_byte(self, dtype: str = "bfloat16") -> float:
        """Arithmetic intensity above which a kernel is compute-bound (the roofline's knee)."""
        return self.peak_flops(dtype) / self.hbm_bytes_per_s

    @property
    def sustained_clock(self) -> float:
        """GHz with the tensor cores saturated (the nominal clock when not modelled)."""
        return self.sustained_clock_ghz or self.clock_ghz

    def effective_clock_ghz(self, mma_duty: float) -> float:
        """The clock of a run whose MMA engines were busy `mma_duty` (0..1) of its time:
        linear between the nominal clock (idle tensor cores) and the sustained clock
        (saturated), the first-order behaviour of a power-limited part."""
        duty = min(max(mma_duty, 0.0), 1.0)
        return self.clock_ghz - (self.clock_ghz - self.sustained_clock) * duty

    def level_bytes(self, name: str) -> int:
        for lv in self.levels:
            if lv.name == name:
                return lv.bytes
        raise ConfigError(f"{self.name}: no memory level {name!r}")

    def with_(self, **changes) -> "MachineConfig":
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def to_dict(self) -> dict:
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "levels":
                v = [[lv.name, lv.bytes] for lv in v]
            elif isinstance(v, tuple):
                v = [list(x) if isinstance(x, tuple) else x for x in v]
            out[f.name] = v
        return out


def _validate(c: MachineConfig) -> None:
    def need(cond, what):
        if not cond:
            raise ConfigError(f"machine config {c.name!r}: {what}")
    need(isinstance(c.name, str) and c.name, "needs a name")
    for name in ("cores", "atom_m", "atom_n", "atom_k_bytes", "vec_elems_per_clk",
                 "l2_bytes", "queue_depth", "scalar_cycles", "issue_interval",
                 "max_blocks_per_core", "l2_sector_bytes", "dma_transfers"):
        v = getattr(c, name)
        need(isinstance(v, int) and v > 0, f"{name} must be a positive integer, not {v!r}")
    for name in ("mma_latency", "vec_latency", "dma_latency", "block_launch_cycles",
                 "thread_bytes", "sfu_elems_per_clk", "cvt_elems_per_clk", "l2_latency"):
        v = getattr(c, name)
        need(isinstance(v, int) and v >= 0, f"{name} must be a non-negative integer")
    for name in ("clock_ghz", "hbm_bytes_per_s", "l2_bytes_per_s", "port_bytes_per_clk"):
        v = getattr(c, name)
        need(isinstance(v, (int, float)) and v > 0 and math.isfinite(v),
             f"{name} must be a positive number, not {v!r}")
    need(len(c.mma_flops_per_clk) > 0, "needs at least one MMA rate")
    for cls, rate in c.mma_flops_per_clk:
        need(cls in set(MMA_CLASS.values()), f"unknown MMA input class {cls!r}")
        need(isinstance(rate, int) and rate > 0, f"MMA rate of {cls} must be positive")
    names = [lv.name for lv in c.levels]
    need(len(names) == len(set(names)) and names, "memory levels need distinct names")
    need(all(lv.bytes > 0 for lv in c.levels), "memory levels need a positive size")
    for use in ("dma_levels", "mma_ab_levels", "mma_c_levels", "vec_levels"):
        lv = getattr(c, use)
        need(lv and all(n in names for n in lv), f"{use} must name known levels")
    need(c.l2_bytes_per_s >= c.hbm_bytes_per_s, "L2 must be at least as fast as HBM")
    need(isinstance(c.hbm_efficiency, (int, float)) and 0 < c.hbm_efficiency <= 1,
         "hbm_efficiency must be in (0, 1]")
    need(isinstance(c.smem_bytes_per_clk, (int, float)) and c.smem_bytes_per_clk >= 0,
         "smem_bytes_per_clk must be a non-negative number")
    need(isinstance(c.sustained_clock_ghz, (int, float))
         and 0 <= c.sustained_clock_ghz <= c.clock_ghz,
         "sustained_clock_ghz must be in [0, clock_ghz] (0: no throttling)")


def _levels(**sizes) -> tuple[MemLevel, ...]:
    return tuple(MemLevel(n, b) for n, b in sizes.items())


KB = 1024
MB = 1024 * 1024

# H100 SXM5-class. 2048 bf16 FMA/clk/SM x 132 SMs x 1.83 GHz = 989 TFLOPS dense.
H100_LIKE = MachineConfig(
    name="h100_like", cores=132, clock_ghz=1.83,
    mma_flops_per_clk=(("b16", 4096), ("b8", 8192), ("tf32", 2048), ("f64", 256)),
    atom_m=64, atom_n=8, atom_k_bytes=32, mma_latency=128,
    vec_elems_per_clk=128, vec_latency=20,
    # L2: the measured 5.5-7 TB/s, not the 12 TB/s that once stood in for multicast
    hbm_bytes_per_s=3.35e12, l2_bytes_per_s=6.5e12, l2_bytes=50 * MB,
    port_bytes_per_clk=128.0, dma_latency=600, l2_latency=260,
    # one transfer at a time per DMA engine: with two, the memory-bound DeepGEMM row
    # reaches the streaming rate its real kernel does not (docs/tcsim.md, Fidelity)
    dma_transfers=1,
    levels=_levels(SMEM=227 * KB, RF=256 * KB),
    dma_levels=("SMEM", "RF"), mma_ab_levels=("SMEM", "RF"), mma_c_levels=("RF",),
    vec_levels=("SMEM", "RF"), queue_depth=8, block_launch_cycles=200,
    max_blocks_per_core=32, thread_bytes=64 * 4,
    # calibrated once: benchmarks/fidelity/stream_copy.tl reaches 99.9 % of the HBM
    # pool's rate, and a streaming copy measures 3.0 TB/s (docs/tcsim.md): 3.0 / 3.35
    hbm_efficiency=0.896,
    # 16 special-function results per clock per SM (3.9 TFLOPS on 132 SMs at 1.83 GHz,
    # FlashAttention-3 paper); conversions at half the lane rate (assumption); the
    # shared-memory path at 32 banks x 4 bytes per clock
    sfu_elems_per_clk=16, cvt_elems_per_clk=64, smem_bytes_per_clk=128.0,
    # power-limited under dense MMA: ~1.6 GHz (FlashMLA's write-up, H800 SXM5)
    sustained_clock_ghz=1.6,
    notes="NVIDIA H100 SXM5-class; see docs/tcsim.md for each figure's source")

H200_LIKE = H100_LIKE.with_(name="h200_like", hbm_bytes_per_s=4.8e12,
                            notes="H100_LIKE with H200's HBM3e bandwidth")

# Ascend 910B-class Da Vinci core: a 16x16x16 fp16 cube per cycle, split buffers.
ASCEND_LIKE = MachineConfig(
    name="ascend_like", cores=20, clock_ghz=1.8,
    mma_flops_per_clk=(("b16", 8192), ("b8", 16384), ("tf32", 2048)),
    atom_m=16, atom_n=16, atom_k_bytes=32, mma_latency=32,
    vec_elems_per_clk=128, vec_latency=16,
    hbm_bytes_per_s=1.6e12, l2_bytes_per_s=5.0e12, l2_bytes=192 * MB,
    port_bytes_per_clk=128.0, dma_latency=500,
    levels=_levels(L1=1 * MB, L0A=64 * KB, L0B=64 * KB, L0C=256 * KB, UB=192 * KB),
    dma_levels=("L1", "UB"), mma_ab_levels=("L0A", "L0B"), mma_c_levels=("L0C",),
    vec_levels=("UB", "L0C"), queue_depth=8, block_launch_cycles=200,
    calibrated=False,
    notes="Ascend 910B-class; no published figure calibrates it; see docs/tcsim.md")

# Small, round numbers so tests can state exact cycle counts and run fast.
TINY = MachineConfig(
    name="tiny", cores=4, clock_ghz=1.0,
    mma_flops_per_clk=(("b16", 1024), ("b8", 2048), ("tf32", 512), ("f64", 128)),
    atom_m=8, atom_n=8, atom_k_bytes=32, mma_latency=10,
    vec_elems_per_clk=64, vec_latency=4,
    hbm_bytes_per_s=64e9, l2_bytes_per_s=256e9, l2_bytes=1 * MB,
    port_bytes_per_clk=32.0, dma_latency=20,
    # memories big enough for the examples' CPU-tuned tiles (gemm_bias_relu's are MBs)
    levels=_levels(SMEM=4 * MB, RF=4 * MB),
    dma_levels=("SMEM", "RF"), mma_ab_levels=("SMEM", "RF"), mma_c_levels=("RF",),
    vec_levels=("SMEM", "RF"), queue_depth=4,
    notes="for tests: round numbers, 4 cores")

CONFIGS = {c.name: c for c in (H100_LIKE, H200_LIKE, ASCEND_LIKE, TINY)}
DEFAULT_CONFIG = H100_LIKE.name     # what `tcsim` alone, a bare program and the tools mean


def get_config(name_or_config) -> MachineConfig:
    """A preset by name (`tiny`, `h100_like`, ...), or a MachineConfig passed through."""
    if isinstance(name_or_config, MachineConfig):
        return name_or_config
    try:
        return CONFIGS[name_or_config]
    except KeyError:
        raise ConfigError(f"unknown machine config {name_or_config!r}; known: "
                          f"{', '.join(CONFIGS)}") from None
