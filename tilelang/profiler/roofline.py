"""The roofline: the two ceilings of a target and where a kernel sits under them.

A kernel doing F useful FLOPs and moving B bytes cannot take less than
max(F / peak FLOP/s, B / peak bytes/s); that bound over the measured time is the
*fraction of roofline reached*, and whichever term is larger says whether the kernel is
compute- or memory-bound by its counts (arithmetic intensity F / B against the ridge
point peak FLOP/s / peak bytes/s).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Peaks:
    flops: float                 # FLOP/s
    bytes_per_s: float
    compute_label: str           # what the compute ceiling is ("fp32 FMA, 512-bit, 2 threads")
    memory_label: str            # what the memory ceiling is ("stream read, 2 threads")

    @property
    def ridge(self) -> float:
        """FLOP per byte above which a kernel is compute-bound."""
        return self.flops / self.bytes_per_s

    def to_dict(self) -> dict:
        return {**asdict(self), "ridge": self.ridge}


@dataclass(frozen=True)
class Roofline:
    peaks: Peaks
    flops: float                 # useful FLOPs of the launch
    bytes: float                 # bytes moved to and from memory
    time_s: float                # measured (or simulated) time

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else float("inf")

    @property
    def compute_time(self) -> float:
        return self.flops / self.peaks.flops

    @property
    def memory_time(self) -> float:
        return self.bytes / self.peaks.bytes_per_s

    @property
    def bound_time(self) -> float:
        """The least time the counts allow."""
        return max(self.compute_time, self.memory_time)

    @property
    def kind(self) -> str:
        """"compute" or "memory": the ceiling the counts put the kernel under."""
        return "compute" if self.compute_time >= self.memory_time else "memory"

    @property
    def fraction(self) -> float:
        """The share of the roofline reached: bound time / measured time."""
        return self.bound_time / self.time_s if self.time_s > 0 else 0.0

    @property
    def attainable(self) -> float:
        """FLOP/s the roofline allows at this intensity."""
        return min(self.peaks.flops, self.intensity * self.peaks.bytes_per_s)

    @property
    def achieved_flops(self) -> float:
        return self.flops / self.time_s if self.time_s > 0 else 0.0

    @property
    def achieved_bytes_per_s(self) -> float:
        return self.bytes / self.time_s if self.time_s > 0 else 0.0

    def to_dict(self) -> dict:
        return {"peaks": self.peaks.to_dict(), "flops": self.flops, "bytes": self.bytes,
                "time_s": self.time_s, "intensity": self.intensity, "kind": self.kind,
                "fraction": self.fraction, "bound_time_s": self.bound_time,
                "achieved_flops": self.achieved_flops,
                "achieved_bytes_per_s": self.achieved_bytes_per_s}
