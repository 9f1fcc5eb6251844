"""The profile as one self-contained HTML page (no network, no scripts): a roofline
chart per grid (log-log: both ceilings drawn, the kernel as a point) and the time
breakdown as stacked bars, beside the figures and the advice.

SVG elements carry classes a test (or a reader of the source) can find:
`ceiling memory`, `ceiling compute`, `kernel` (the point), `bar-segment` (with
`data-name` and `data-share`).
"""
from __future__ import annotations

import html
import math

from .render import _si, _time

W, H = 560, 360                    # roofline chart
PAD_L, PAD_R, PAD_T, PAD_B = 70, 20, 20, 50
COLORS = {"gemm": "#4e79a7", "busy": "#4e79a7", "pack A": "#f28e2b", "pack B": "#e15759",
          "load": "#f28e2b", "store": "#76b7b2", "elementwise": "#59a14f", "fill": "#bab0ac",
          "copy": "#9c755f", "waiting": "#e15759", "bandwidth": "#f28e2b", "idle": "#dddddd",
          "other": "#bab0ac"}


def page(report) -> str:
    title = f"tilelang profile: {report.kernel} on {report.target}"
    body = [f"<h1>{_e(title)}</h1>", _summary(report)]
    for g in report.grids:
        label = f"grid {g.index}" if len(report.grids) > 1 else "roofline"
        body.append(f"<h2>{_e(label)}: {_e(g.bound)}-bound</h2>")
        body.append(roofline_svg(g))
        if g.bars:
            body.append("<h3>where the time goes</h3>")
            body.append(bars_svg(g.bars))
    body.append(_advice(report))
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")


_CSS = ("body{font-family:sans-serif;margin:24px;color:#222}"
        "table{border-collapse:collapse}td{padding:2px 12px 2px 0}"
        "svg text{font-size:12px;font-family:sans-serif}"
        "li{margin:4px 0}code{background:#f3f3f3;padding:1px 4px}")


def _e(x) -> str:
    return html.escape(str(x))


def _summary(report) -> str:
    rows = [("kernel", report.kernel), ("target", report.target),
            ("sizes", ", ".join(f"{k}={v}" for k, v in report.sizes.items()) or "-"),
            ("time", _time(report.time_s) + (f" (least of {report.calls} calls; median "
                                              f"{_time(report.median_s)})"
                                              if report.median_s else "")),
            ("bound", report.bound)]
    if report.threads:
        rows.insert(2, ("threads", report.threads))
    for g in report.grids:
        r = g.roofline
        time = (f"{_time(g.time_s)} ({g.time_s / report.time_s * 100:.0f}%), "
                if len(report.grids) > 1 and report.time_s else "")
        rows.append((f"grid {g.index}", f"{time}{g.counts.blocks} blocks, "
                     f"{_si(g.counts.flops, 'FLOP')}, {_si(r.bytes, 'B')}, "
                     f"{r.fraction * 100:.1f}% of the {r.kind} roofline"))
    if report.overhead is not None:
        rows.append(("timers overhead", f"{report.overhead * 100:+.1f}%"))
    return "<table>" + "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>"
                               for k, v in rows) + "</table>"


def _advice(report) -> str:
    if not report.advice:
        return "<h2>advice</h2><p>none: no rule found a problem worth its share of the time</p>"
    items = []
    for a in report.advice:
        apply = (" <code>" + _e(" ".join(f"-D {k}={v}" for k, v in a.defines.items()))
                 + "</code>" if a.defines else "")
        items.append(f"<li><b>{_e(a.problem)}</b>: {_e(a.evidence)} &rarr; "
                     f"{_e(a.action)}{apply}</li>")
    return "<h2>advice</h2><ol>" + "".join(items) + "</ol>"


# ----------------------------------------------------------------------------- roofline

def roofline_svg(grid) -> str:
    r = grid.roofline
    p = r.peaks
    ridge = p.ridge
    x_point = r.intensity if math.isfinite(r.intensity) else ridge * 1e3
    y_point = max(r.achieved_flops, 1.0)
    x_lo = 10 ** math.floor(math.log10(min(x_point, ridge) / 10))
    x_hi = 10 ** math.ceil(math.log10(max(x_point, ridge) * 10))
    y_hi = 10 ** math.ceil(math.log10(p.flops * 2))
    y_lo = 10 ** math.floor(math.log10(min(y_point, p.bytes_per_s * x_lo) / 2))

    def sx(x):
        return PAD_L + (W - PAD_L - PAD_R) * (math.log10(x) - math.log10(x_lo)) / \
            (math.log10(x_hi) - math.log10(x_lo))

    def sy(y):
        return H - PAD_B - (H - PAD_T - PAD_B) * (math.log10(y) - math.log10(y_lo)) / \
            (math.log10(y_hi) - math.log10(y_lo))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
             f'class="roofline" role="img" aria-label="roofline">',
             f'<rect x="{PAD_L}" y="{PAD_T}" width="{W - PAD_L - PAD_R}" '
             f'height="{H - PAD_T - PAD_B}" fill="none" stroke="#999"/>']
    parts += _ticks(sx, sy, x_lo, x_hi, y_lo, y_hi)
    x_mem_lo = max(x_lo, y_lo / p.bytes_per_s)
    parts.append(_line("ceiling memory", sx(x_mem_lo), sy(p.bytes_per_s * x_mem_lo),
                       sx(ridge), sy(p.flops), "#e15759"))
    parts.append(_line("ceiling compute", sx(ridge), sy(p.flops), sx(x_hi), sy(p.flops),
                       "#4e79a7"))
    parts.append(f'<text x="{sx(ridge) + 6:.1f}" y="{sy(p.flops) - 6:.1f}">'
                 f'{_e(_si(p.flops, "FLOP/s"))} {_e(p.compute_label)}</text>')
    # the level and threads on the chart; why that level (the working set) on hover
    short, _, why = p.memory_label.partition(": ")
    parts.append(f'<text x="{PAD_L + 6:.1f}" y="{sy(p.bytes_per_s * x_mem_lo) - 8:.1f}">'
                 f'{_e(_si(p.bytes_per_s, "B/s"))} {_e(short)}'
                 + (f'<title>{_e(why)}</title>' if why else '') + '</text>')
    cx, cy = sx(x_point), sy(y_point)
    parts.append(f'<circle class="kernel" cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="#222" '
                 f'data-intensity="{r.intensity:.6g}" data-flops="{r.achieved_flops:.6g}">'
                 f'<title>{_e(grid.counts.blocks)} blocks: {r.fraction * 100:.1f}% of roofline'
                 f'</title></circle>')
    parts.append(f'<text x="{cx + 9:.1f}" y="{cy + 4:.1f}">kernel: '
                 f'{r.fraction * 100:.1f}% of roofline</text>')
    parts.append(f'<text x="{(PAD_L + W - PAD_R) / 2:.0f}" y="{H - 12}" text-anchor="middle">'
                 f'arithmetic intensity (FLOP/byte)</text>')
    parts.append(f'<text x="16" y="{(PAD_T + H - PAD_B) / 2:.0f}" text-anchor="middle" '
                 f'transform="rotate(-90 16 {(PAD_T + H - PAD_B) / 2:.0f})">FLOP/s</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _line(cls, x1, y1, x2, y2, color) -> str:
    return (f'<line class="{cls}" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
            f'stroke="{color}" stroke-width="2.5"/>')


def _ticks(sx, sy, x_lo, x_hi, y_lo, y_hi) -> list[str]:
    out = []
    x = x_lo
    while x <= x_hi * 1.0001:
        out.append(f'<text x="{sx(x):.1f}" y="{H - PAD_B + 16}" text-anchor="middle">'
                   f'{x:g}</text>')
        x *= 10
    y = y_lo
    step = 10 ** max(1, round(math.log10(y_hi / y_lo) / 6))
    while y <= y_hi * 1.0001:
        out.append(f'<text x="{PAD_L - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">'
                   f'{_e(_si(y, ""))}</text>')
        y *= step
    return out


# ----------------------------------------------------------------------------- bars

def bars_svg(bars) -> str:
    bar_w, row_h, label_w = 420, 26, 90
    height = row_h * len(bars) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 20}" '
             f'height="{height}" class="breakdown" role="img" aria-label="time breakdown">']
    names = []
    for i, (label, segs) in enumerate(bars):
        y = 6 + i * row_h
        parts.append(f'<text x="0" y="{y + 15}">{_e(label)}</text>')
        x = label_w
        for name, share in segs:
            w = max(0.0, min(1.0, share)) * bar_w
            color = COLORS.get(name, "#af7aa1")
            parts.append(f'<rect class="bar-segment" data-name="{_e(name)}" '
                         f'data-share="{share:.4f}" x="{x:.1f}" y="{y}" width="{w:.1f}" '
                         f'height="{row_h - 6}" fill="{color}"><title>{_e(name)} '
                         f'{share * 100:.1f}%</title></rect>')
            x += w
            if name not in names:
                names.append(name)
    ly = height - 14
    lx = 0
    for name in names:
        parts.append(f'<rect x="{lx}" y="{ly - 10}" width="10" height="10" '
                     f'fill="{COLORS.get(name, "#af7aa1")}"/>'
                     f'<text x="{lx + 14}" y="{ly}">{_e(name)}</text>')
        lx += 24 + 7 * len(name)
    parts.append("</svg>")
    return "\n".join(parts)
