"""The CPU's roofline ceilings from the peaks measured on this host.

The "peaks" memo (`host.memo_path("peaks")`, written by `benchmarks/peak.py` and the
profiler's `hostpeaks`) holds, as FLOP/s and bytes/s by thread count: `fma[dtype][bits]
[threads]` for each vector width, and `bandwidth["read" | "copy"][threads]`. A kernel's
compute ceiling is the widest FMA of the dtype it computes in (every float but float64 is
computed in float32 on the CPU), its memory ceiling the streaming read; a thread count
that was not measured takes the best figure at or below it (more threads never lower
what fewer can do).
"""
from __future__ import annotations

from dataclasses import dataclass

FORMAT = 1                                  # the memo layout this module reads
COMPUTED_AS = {"float64": "float64"}        # every other float is computed in fp32


@dataclass(frozen=True)
class Ceilings:
    compute: str              # the dtype the FMA figure is for
    width: str                # its vector width, bits
    flops_per_s: float
    flops_threads: int        # the measured thread count the figure is from
    bytes_per_s: float
    bytes_threads: int


def ceilings(figures: dict, dtype: str, threads: int) -> Ceilings:
    """The ceilings for a kernel computing in `dtype` on `threads` threads."""
    compute = COMPUTED_AS.get(dtype, "float32")
    widths = figures["fma"][compute]
    width = max(widths, key=int)
    flops, used = at_threads(widths[width], threads)
    bw, used_bw = at_threads(figures["bandwidth"]["read"], threads)
    return Ceilings(compute, width, flops, used, bw, used_bw)


def at_threads(rates: dict, threads: int) -> tuple[float, int]:
    """The best rate measured at `threads` threads or fewer, and that thread count."""
    counts = sorted(int(t) for t in rates)
    usable = [t for t in counts if t <= threads] or counts[:1]
    best = max(usable, key=lambda t: rates[str(t)])
    return rates[str(best)], best
