"""The CPU's roofline ceilings from the peaks measured on this host.

The "peaks" memo (`host.memo_path("peaks")`, written by `benchmarks/peak.py` and the
profiler's `hostpeaks`) holds, as FLOP/s and bytes/s by thread count: `fma[dtype][bits]
[threads]` for each vector width, `bandwidth["read" | "copy"][threads]` (DRAM: a
buffer twice the last-level cache) and, from format 2 on, `cache_read["l2" | "l3"]
[threads]` (the same read over a working set that stays in that cache) with the cache
sizes it was measured against (`caches`: L2 per core, L3 shared, bytes).

A kernel's compute ceiling is the widest FMA of the dtype it computes in (every float
but float64 is computed in float32 on the CPU). Its memory ceiling is the read of the
nearest level its working set fits (its bytes moved: within the L2s of the threads it
runs on, else within the L3, else DRAM), so a kernel whose data stays in a cache is not
measured against DRAM; a level not measured (an older memo) falls to the next one out.
A ceiling is a bound, so a working set that fits a level at all gets that level's
figure. A thread count that was not measured takes the best figure at or below it
(more threads never lower what fewer can do).
"""
from __future__ import annotations

from dataclasses import dataclass

FORMAT = 2                                  # the memo layout written now
READS = (1, 2)                              # the layouts read (1: no cache levels)
COMPUTED_AS = {"float64": "float64"}        # every other float is computed in fp32
LEVEL_NAMES = {"l2": "L2", "l3": "L3", "dram": "DRAM"}


@dataclass(frozen=True)
class Ceilings:
    compute: str              # the dtype the FMA figure is for
    width: str                # its vector width, bits
    flops_per_s: float
    flops_threads: int        # the measured thread count the figure is from
    bytes_per_s: float
    bytes_threads: int
    level: str = "dram"       # the memory level of the bandwidth: "l2", "l3", "dram"
    level_bytes: int = 0      # that cache's size the working set fit (L2: all threads')
    working_set: float | None = None

    @property
    def memory_label(self) -> str:
        """`L3 read, 2 threads: working set 12 MiB fits the 260 MiB L3`."""
        threads = f"{self.bytes_threads} thread{'s' if self.bytes_threads > 1 else ''}"
        if self.level == "dram":
            return f"DRAM stream read, {threads}"
        name = LEVEL_NAMES[self.level]
        whose = " L2s" if self.level == "l2" and self.bytes_threads > 1 else f" {name}"
        return (f"{name} read, {threads}: working set {_mib(self.working_set)} fits the "
                f"{_mib(self.level_bytes)}{whose}")


def ceilings(figures: dict, dtype: str, threads: int, working_set: float | None = None,
             caches: dict | None = None) -> Ceilings:
    """The ceilings for a kernel computing in `dtype` on `threads` threads and moving
    `working_set` bytes (None: unknown, DRAM), against `caches` ({"l2": bytes per core,
    "l3": bytes}; default: the sizes in the memo)."""
    compute = COMPUTED_AS.get(dtype, "float32")
    widths = figures["fma"][compute]
    width = max(widths, key=int)
    flops, used = at_threads(widths[width], threads)
    level, size = memory_level(figures, threads, working_set, caches)
    rates = figures["bandwidth"]["read"] if level == "dram" else figures["cache_read"][level]
    bw, used_bw = at_threads(rates, threads)
    return Ceilings(compute, width, flops, used, bw, used_bw, level, size, working_set)


def memory_level(figures: dict, threads: int, working_set: float | None,
                 caches: dict | None = None) -> tuple[str, int]:
    """("l2" | "l3" | "dram", the cache size fitted): the nearest measured level that
    holds `working_set` bytes on `threads` threads (each thread's share in its own L2)."""
    caches = caches or figures.get("caches") or {}
    measured = figures.get("cache_read") or {}
    if working_set is None:
        return "dram", 0
    for level, size in (("l2", caches.get("l2", 0) * threads), ("l3", caches.get("l3", 0))):
        if measured.get(level) and 0 < working_set <= size:
            return level, size
    return "dram", 0


def at_threads(rates: dict, threads: int) -> tuple[float, int]:
    """The best rate measured at `threads` threads or fewer, and that thread count."""
    counts = sorted(int(t) for t in rates)
    usable = [t for t in counts if t <= threads] or counts[:1]
    best = max(usable, key=lambda t: rates[str(t)])
    return rates[str(best)], best


def _mib(nbytes: float | None) -> str:
    mib = (nbytes or 0) / (1 << 20)
    return f"{mib:.3g} MiB" if mib >= 1 else f"{(nbytes or 0) / 1024:.3g} KiB"
