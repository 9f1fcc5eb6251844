"""Text tables of the cluster model's results (`tilec simulate-ep`, the benchmark)."""
from __future__ import annotations

from .projection import StepRow
from .scenario import Scenario


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms" if seconds < 1e-2 else f"{seconds * 1e3:.2f} ms"


def pct(x: float) -> str:
    return f"{x * 100:.1f} %"


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def collectives_table(scenarios: list[Scenario]) -> str:
    rows = []
    for sc in scenarios:
        kind, rank, util = sc.dispatch.bottleneck()
        ckind, crank, cutil = sc.combine.bottleneck()
        rows.append([sc.name, ms(sc.dispatch.time), ms(sc.combine.time),
                     f"{kind} (rank {rank}) {pct(util)}", f"{ckind} (rank {crank}) {pct(cutil)}",
                     f"{sc.skew_loss:.3f}"])
    return table(["placement, routing", "dispatch", "combine", "bottleneck (dispatch)",
                  "bottleneck (combine)", "skew loss"], rows)


def links_table(scenarios: list[Scenario]) -> str:
    rows = []
    for sc in scenarios:
        for name, result in (("dispatch", sc.dispatch), ("combine", sc.combine)):
            for kind, peak, mean, util in result.link_rows():
                rows.append([f"{sc.name}: {name}", kind, f"{peak / 1e6:.1f} MB",
                             f"{mean / 1e6:.1f} MB", pct(util)])
    return table(["collective", "link", "max / rank", "mean / rank", "max util"], rows)


def projection_table(rows: list[StepRow]) -> str:
    out = []
    for r in rows:
        out.append([r.name, ms(r.attention), f"{ms(r.experts_max)} / {ms(r.experts_mean)}",
                    ms(r.comm), ms(r.step_serial), pct(r.share(False)), ms(r.step_overlap),
                    pct(r.share(True)), f"{pct(r.efficiency(False))} / "
                                        f"{pct(r.efficiency(True))}"])
    return table(["placement, routing", "attention", "experts max / mean", "collectives",
                  "step", "comm share", "step (overlap)", "comm share", "efficiency"], out)
