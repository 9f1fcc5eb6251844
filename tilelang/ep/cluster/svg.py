"""The training-step projection as an SVG picture a browser opens: per scenario, the step
without overlap (compute, then each collective) and with overlap (compute and
communication side by side, the longer one setting the step), to one time scale."""
from __future__ import annotations

from html import escape

from .projection import StepRow

COLORS = {"attention": "#4e79a7", "experts": "#59a14f", "dispatch": "#e15759",
          "combine": "#f28e2b", "backward": "#76b7b2", "comm": "#edc948",
          "overlap compute": "#8cd17d", "overlap comm": "#ff9d9a"}
LEFT, WIDTH, BAR, GAP = 190, 640, 16, 6


def step_svg(rows: list[StepRow], title: str) -> str:
    scale = WIDTH / max(max(r.step_serial, r.step_overlap) for r in rows)
    out, y = [], 44
    for r in rows:
        out.append(_text(8, y + BAR + 2, r.name, bold=True))
        out.append(_text(8, y + 2 * BAR + GAP + 2, "no overlap / overlap"))
        out += _serial(r, y, scale)
        y += BAR + GAP
        out += _overlap(r, y, scale)
        y += 2 * BAR + 3 * GAP
    out.append(_legend(y))
    height = y + 52
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + WIDTH + 200}" '
            f'height="{height}" font-family="sans-serif" font-size="11">'
            f'<rect width="100%" height="100%" fill="white"/>'
            + _text(8, 20, title, bold=True, size=13))
    return head + "".join(out) + "</svg>\n"


def _serial(r: StepRow, y: float, scale: float) -> list[str]:
    parts = [("attention", r.attention), ("experts", r.experts_max),
             ("dispatch", r.dispatch), ("combine", r.combine),
             ("backward", 2 * (r.attention + r.experts_max)),
             ("comm", r.comm - r.dispatch - r.combine)]
    out, x = [], LEFT
    for kind, seconds in parts:
        out.append(_rect(x, y, seconds * scale, BAR, COLORS[kind],
                         f"{kind}: {seconds * 1e3:.2f} ms"))
        x += seconds * scale
    out.append(_text(x + 6, y + BAR - 4, f"{r.step_serial * 1e3:.1f} ms, "
                     f"comm {r.share(False) * 100:.0f} %"))
    return out


def _overlap(r: StepRow, y: float, scale: float) -> list[str]:
    compute = r.step_overlap if r.step_overlap > r.comm else r.compute
    half = BAR / 2
    return [_rect(LEFT, y, compute * scale, half, COLORS["overlap compute"],
                  f"compute (slowed by the communication SMs): {compute * 1e3:.2f} ms"),
            _rect(LEFT, y + half, r.comm * scale, half, COLORS["overlap comm"],
                  f"communication: {r.comm * 1e3:.2f} ms"),
            _text(LEFT + r.step_overlap * scale + 6, y + BAR - 4,
                  f"{r.step_overlap * 1e3:.1f} ms, comm {r.share(True) * 100:.0f} %")]


def _legend(y: float) -> str:
    rows = [{"attention": "attention", "experts": "experts (busiest rank)",
             "dispatch": "dispatch (fp8)", "combine": "combine",
             "backward": "backward compute", "comm": "backward collectives"},
            {"overlap compute": "overlap: compute, slowed by the collectives' SMs",
             "overlap comm": "overlap: all collectives"}]
    items = []
    for row, labels in enumerate(rows):
        x = LEFT
        for kind, label in labels.items():
            items.append(_rect(x, y + 16 * row, 10, 10, COLORS[kind], label))
            items.append(_text(x + 14, y + 16 * row + 9, label))
            x += 24 + 6.2 * len(label)
    return "".join(items)


def _rect(x, y, w, h, color, tip) -> str:
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.5):.1f}" height="{h:.1f}" '
            f'fill="{color}"><title>{escape(tip)}</title></rect>')


def _text(x, y, text, bold=False, size=11) -> str:
    weight = ' font-weight="bold"' if bold else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}"{weight}>'
            f'{escape(text)}</text>')
