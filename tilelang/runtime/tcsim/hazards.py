"""The race detector: every access to an on-chip buffer stage must be ordered after the
last conflicting access by another engine.

Ordering comes from semaphores (engines of one core run their own queues in order) and
from FENCE (the scalar unit waits until every engine drained, so whatever completed
before it is ordered before every instruction dispatched after it). A unit "has seen"
phase p of semaphore S once it passed a wait `S@q` with q >= p;
an access by another engine that signalled S in phase p is then ordered before it. A
conflicting access (read after write, write after read or write) that is still in flight,
or was never signalled, or whose phase the accessing engine has not seen, is a race:
exactly the accesses whose result would depend on timing on real hardware.
"""
from __future__ import annotations


class Rec:
    __slots__ = ("engine", "done", "done_at", "sem", "phase", "what")

    def __init__(self, engine, what):
        self.engine = engine
        self.done = False
        self.done_at = 0.0
        self.sem = None
        self.phase = -1
        self.what = what


class Hazards:
    def __init__(self):
        self.races: list[str] = []

    def _conflict(self, rec: Rec, eng, fence: float) -> bool:
        if rec is None or rec.engine is eng:
            return False
        if rec.done and rec.done_at <= fence:
            return False                            # a FENCE came between them
        if not rec.done or rec.sem is None:
            return True
        return eng.seen.get(rec.sem, 0) <= rec.phase

    def on_start(self, core, eng, op, now: float) -> None:
        """Check op's accesses, then record them (completion fills in the ordering)."""
        for sem, ph in op.waits:
            if eng.seen.get(sem, 0) < ph + 1:
                eng.seen[sem] = ph + 1
        for sem, n in core.seen.items():          # what the scalar unit waited for
            if eng.seen.get(sem, 0) < n:
                eng.seen[sem] = n
        d = op.di
        what = f"{d.op} (instruction {d.index}{', line ' + str(d.line) if d.line else ''})"
        state = core.bufs_state
        recs = []
        for ts, stage in _slots(d.reads, d, op):
            w = state.get((ts.buf, stage, "w"))
            if self._conflict(w, eng, op.fence):
                self._report(core, now, f"{what} on {eng.name} reads {ts.buf}[{stage}] "
                                        f"written by {w.what} on {w.engine.name}", w)
        for ts, stage in _slots(d.writes, d, op):
            w = state.get((ts.buf, stage, "w"))
            if self._conflict(w, eng, op.fence):
                self._report(core, now, f"{what} on {eng.name} overwrites {ts.buf}[{stage}] "
                                        f"written by {w.what} on {w.engine.name}", w)
            for r in state.get((ts.buf, stage, "r"), {}).values():
                if self._conflict(r, eng, op.fence):
                    self._report(core, now, f"{what} on {eng.name} overwrites "
                                            f"{ts.buf}[{stage}] still read by {r.what} on "
                                            f"{r.engine.name}", r)
        for ts, stage in _slots(d.reads, d, op):
            rec = Rec(eng, what)
            state.setdefault((ts.buf, stage, "r"), {})[eng] = rec
            recs.append(rec)
        for ts, stage in _slots(d.writes, d, op):
            rec = Rec(eng, what)
            state[(ts.buf, stage, "w")] = rec
            state[(ts.buf, stage, "r")] = {}
            recs.append(rec)
        op.recs = recs

    def on_done(self, op, sem, phase: int, now: float) -> None:
        for rec in op.recs:
            rec.done = True
            rec.done_at = now
            rec.sem = sem
            rec.phase = phase

    def _report(self, core, now, message, rec) -> None:
        hint = ("it is still in flight" if not rec.done else
                "that instruction signals no semaphore" if rec.sem is None else
                f"no wait on {rec.sem.name}@{rec.phase} orders them")
        self.races.append(f"{core.label}, block {core.block}, cycle {now:.0f}: "
                          f"{message}; {hint}")


def _slots(tiles, d, op):
    for ts in tiles:
        yield ts, op.stages[d.tiles.index(ts)]
