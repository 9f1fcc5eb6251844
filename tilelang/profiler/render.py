"""The profile as terminal text."""
from __future__ import annotations


def _si(value: float, unit: str) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _time(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    if s < 1:
        return f"{s * 1e3:.3f} ms"
    return f"{s:.3f} s"


def text(report) -> str:
    sizes = ", ".join(f"{k}={v}" for k, v in report.sizes.items()) or "no symbolic sizes"
    where = report.target + (f", {report.threads} thread{'s' * (report.threads != 1)}"
                             if report.threads else "")
    how = "simulated" if not report.threads else f"least of {report.calls} calls"
    if report.threads and report.median_s:
        how += f"; median {_time(report.median_s)}"
    lines = [f"{report.kernel} ({sizes}) on {where}",
             f"  time        {_time(report.time_s)}  ({how})"]
    for g in report.grids:
        lines += _grid_lines(g, report.time_s if len(report.grids) > 1 else None)
    if report.overhead is not None:
        lines.append(f"  timers      the timed build ran {report.overhead * 100:+.1f}% "
                     f"against the plain one (phase figures carry that overhead)")
    for note in report.notes:
        lines.append(f"  note        {note}")
    if report.advice:
        lines.append("advice")
        for i, a in enumerate(report.advice, 1):
            apply = ("  [" + " ".join(f"-D {k}={v}" for k, v in a.defines.items()) + "]"
                     if a.defines else "")
            lines.append(f"  {i}. {a.line}{apply}")
    else:
        lines.append("advice      none: no rule found a problem worth its share of the time")
    return "\n".join(lines)


def _grid_lines(g, launch_s: float | None) -> list[str]:
    """The lines of one grid; `launch_s`: the launch's time, when it has several grids
    (each then gets a heading with its own time)."""
    r, c = g.roofline, g.counts
    p = r.peaks
    intensity = f"{r.intensity:.3g}" if r.bytes else "inf"
    out, head = [], "grid"
    if launch_s is not None:
        share = f" ({g.time_s / launch_s * 100:.0f}% of the launch)" if launch_s else ""
        out.append(f"  grid {g.index:<6} {_time(g.time_s)}{share}")
        head = ""
    out += [f"  {head:<11} {c.blocks} blocks; {_si(c.flops, 'FLOP')} useful, "
            f"{_si(r.bytes, 'B')} moved; intensity {intensity} FLOP/B",
            f"  roofline    {_si(p.flops, 'FLOP/s')} ({p.compute_label}), "
            f"{_si(p.bytes_per_s, 'B/s')} ({p.memory_label}); ridge {p.ridge:.3g} FLOP/B",
            f"  reached     {_si(r.achieved_flops, 'FLOP/s')}, {_si(r.achieved_bytes_per_s, 'B/s')}"
            f": {r.fraction * 100:.1f}% of the {r.kind} roofline",
            f"  bound       {g.bound}"]
    for label, segs in g.bars:
        shown = "  ".join(f"{name} {share * 100:.0f}%" for name, share in segs
                          if share >= 0.005)
        out.append(f"  {label:<11} {shown}")
    return out
