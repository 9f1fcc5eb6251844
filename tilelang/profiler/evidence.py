"""What a target's runner measures for the profiler: a `Measured` launch and, per grid,
the `GridEvidence` the rules read.

Each target's runner fills them (`targets/cpu/profiling.py`: phase times of a timers
build; `targets/tcsim/profiling.py`: the simulator's per-engine busy and wait shares,
waves and HBM traffic); the facts it gives are the inputs the rules (rules.py) name.
"""
from __future__ import annotations

from dataclasses import dataclass, field

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
    # a timed target: `time_s` is the least call (what the kernel takes when it has the
    # cores), this the median of the calls (what a busy host gave it)
    median_s: float | None = None
