"""Chrome-trace JSON (chrome://tracing, Perfetto): one process per core, one thread per
engine, a complete ("X") event per instruction from its start to its completion, and
one per block on the BLOCK row. Times are microseconds of simulated time."""
from __future__ import annotations

import json

_TID = {"BLOCK": 0, "DMA_IN": 1, "DMA_OUT": 2, "MMA": 3, "VEC": 4}


def _tid(name: str) -> int:
    """Engines 1-4; the block rows of resident block slots 0, 10, 11, ..."""
    if name in _TID:
        return _TID[name]
    return 10 + int(name.split()[1])


def trace_events(sim, offset: float = 0.0) -> list[dict]:
    """The events of one simulated grid, starting `offset` cycles into the kernel."""
    us = 1.0 / (sim.cfg.clock_ghz * 1e3)          # cycles -> microseconds
    events = []
    cores = sorted({rec[0] for rec in sim.trace})
    rows = sorted({rec[1] for rec in sim.trace} | set(_TID), key=_tid)
    for c in cores:
        events.append({"ph": "M", "name": "process_name", "pid": c, "tid": 0,
                       "args": {"name": f"core {c}"}})
        for name in rows:
            events.append({"ph": "M", "name": "thread_name", "pid": c, "tid": _tid(name),
                           "args": {"name": name}})
    for core, engine, name, start, end in sim.trace:
        events.append({"ph": "X", "name": name, "pid": core, "tid": _tid(engine),
                       "ts": (offset + start) * us, "dur": max(end - start, 0.0) * us,
                       "args": {"start_cycle": offset + start, "end_cycle": offset + end}})
    return events


def write_trace(sims, path) -> None:
    """`sims`: one simulation, or the grids of one kernel in order (laid end to end)."""
    if not isinstance(sims, (list, tuple)):
        sims = [sims]
    events, offset = [], 0.0
    for sim in sims:
        events += trace_events(sim, offset)
        offset += sim.end
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ns"}, f)
