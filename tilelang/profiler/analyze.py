"""`kernel.profile()` and `tilec profile`: where the time goes, and what to change.

    report = profile(kernel, sizes={"M": 1024, "N": 1024, "K": 1024})
    print(report.text())         # or report.to_json(), report.html()

For every grid of the kernel: the time, useful FLOPs and bytes (counts.py), the
arithmetic intensity, the target's roofline (the host's measured peaks on the CPU, the
machine config's on tcsim) and the fraction of it reached, the named bound (compute,
memory, latency/launch, imbalance), a breakdown of the time (CPU: phases of a timers
build, with the build's overhead; tcsim: each engine busy / waiting), and advice from
the rules (rules.py), each citing its evidence. On a target whose time is the same on
every call (tcsim's simulation), advice that names defines is checked by measuring the
kernel with them: kept, with the time it saves, only if it saves `MIN_GAIN` of it
(else a note says what was tried).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from . import counts as counting
from . import knobs as knob_reader
from .evidence import GridEvidence
from .roofline import Roofline
from .rules import MIN_GAIN, Context, advise, name_bound
from .runners import runner_for
from .supply import InputSupply, TensorSupplyType


@dataclass
class ProfileReport:
    kernel: str
    target: str
    sizes: dict
    threads: int
    time_s: float
    calls: int
    grids: list                       # [GridEvidence]
    advice: list                      # [Advice], best first
    overhead: float | None = None     # the CPU timers build's extra time (share)
    notes: list = field(default_factory=list)
    median_s: float | None = None     # timed targets: the calls' median (time_s: least)

    @property
    def bound(self) -> str:
        """The bound of the grid that takes the most time."""
        return max(self.grids, key=lambda g: g.time_s).bound if self.grids else ""

    def to_dict(self) -> dict:
        return {"kernel": self.kernel, "target": self.target, "sizes": self.sizes,
                "threads": self.threads, "time_s": self.time_s,
                "median_s": self.median_s, "calls": self.calls,
                "bound": self.bound, "grids": [g.to_dict() for g in self.grids],
                "advice": [a.to_dict() for a in self.advice],
                "timers_overhead": self.overhead, "notes": self.notes}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, default=_jsonable)

    def text(self) -> str:
        from .render import text
        return text(self)

    def html(self) -> str:
        from .html import page
        return page(self)

    def __str__(self) -> str:
        return self.text()


def _jsonable(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return str(x)


def profile(kernel_function, sizes: dict | None = None, scalars: dict | None = None,
            num_threads: int | None = None, warmup: float = 25, rep: float = 100,
            timers: bool = True, supply_type=TensorSupplyType.Auto,
            seed: int = 0, index=None) -> ProfileReport:
    """Profile one launch of `kernel_function` on generated inputs (see the module
    docstring). `sizes` binds the symbolic sizes, `scalars` scalar parameters (default
    1), `index` how integer tensors are made ({"block_table": "paged:64"}: the kinds of
    `tilec run --index`); `timers=False` skips the CPU timers build (no phase
    breakdown)."""
    func = kernel_function._func()
    runner = runner_for(kernel_function.options)
    sizes = dict(sizes or {})
    supply = InputSupply(func, supply_type, seed, target=kernel_function.options.target,
                         index=index)
    args = supply.make(sizes, scalars=scalars)
    env = dict(sizes)
    env.update((p.name, a) for p, a in zip(func.params, args) if not hasattr(a, "shape"))
    grid_counts = counting.count(func, env)
    threads = runner.threads(num_threads)
    measured = runner.measure(kernel_function, func, args, grid_counts, threads=threads,
                              warmup=warmup, rep=rep, timers=timers)
    ctx = Context(knob_reader.of_kernel(kernel_function), _pipelines(func), threads,
                  str(kernel_function.options.target), _blocks_with(kernel_function, env),
                  runner.block_steps(grid_counts[0].compute_dtype) if grid_counts else {})
    grids, advice = [], []
    for c, nbytes, time_s, facts, bars in measured.grids:
        peaks = runner.roofline_peaks(c.compute_dtype, threads, nbytes)
        ev = GridEvidence(c.index, time_s, c, Roofline(peaks, c.flops, nbytes, time_s),
                          facts, bars)
        ev.bound = name_bound(ev)
        grids.append(ev)
        for a in advise(ev, ctx):
            if len(measured.grids) > 1:
                # a problem of one grid costs its share of that grid's time
                a.evidence = f"grid {c.index}: {a.evidence}"
                a.score *= time_s / measured.time_s if measured.time_s else 1.0
            advice.append(a)
    advice.sort(key=lambda a: -a.score)
    notes = list(measured.notes)
    if runner.deterministic:
        kept = []
        for a in advice:
            saved = _saving(a, kernel_function, runner, args, env, threads,
                            measured.time_s)
            if saved is None or saved >= MIN_GAIN:
                if saved is not None:
                    a.action += f" (measured: {saved * 100:.0f}% less time)"
                kept.append(a)
            else:
                notes.append(f"not advised: {a.line} (measured with "
                             + " ".join(f"-D {k}={v}" for k, v in a.defines.items())
                             + f": {_change(saved)})")
        advice = kept
    for g in grids:
        if g.roofline.fraction > 1.0:
            notes.append(f"grid {g.index} ran above its roofline: its {g.roofline.bytes / 1e6:.3g}"
                         f" MB came from the caches faster than the {g.roofline.peaks.memory_label}"
                         f" ceiling allows (or the peaks were measured on a busier host)")
    shown = {s.name: sizes[s.name] for s in func.symbols if s.name in sizes}
    return ProfileReport(func.name, str(kernel_function.options.target), shown, threads,
                         measured.time_s, measured.calls, grids, advice, measured.overhead,
                         notes, measured.median_s)


def _saving(advice, kernel_function, runner, args, env, threads, time_s) -> float | None:
    """The share of the launch's time following `advice` (its defines) saves, measured
    on the same inputs, or None for advice without defines or whose variant does not
    build."""
    from ..diagnostics import TileLangError
    if not advice.defines or not time_s:
        return None
    try:
        variant = _variant(kernel_function, advice.defines)
        func = variant._func()
        after = runner.measure(variant, func, args, counting.count(func, env),
                               threads=threads).time_s
    except (TileLangError, ValueError):
        return None
    return 1 - after / time_s


def _change(saved: float) -> str:
    pct = round(abs(saved) * 100)
    return f"{pct}% more time" if saved < 0 and pct else f"{pct}% less time"


def _variant(kernel_function, defines: dict):
    """The kernel with `defines` applied over its own."""
    from ..decorators import KernelFunction
    from ..driver.options import normalize_defines
    variant = KernelFunction(pyfunc=kernel_function._pyfunc, text=kernel_function._text,
                             filename=kernel_function._filename)
    base = kernel_function.options
    variant.options = replace(base, defines=normalize_defines({**base.defines_dict(),
                                                               **defines}))
    return variant


def _blocks_with(kernel_function, env: dict):
    """defines -> the block count of each grid of the kernel elaborated with them (for
    the same sizes), None when it does not elaborate: what a rule's resize would
    launch, known without compiling."""
    from ..diagnostics import TileLangError
    from ..ir.evaluate import NotConstant
    seen: dict = {}

    def blocks(defines: dict):
        key = tuple(sorted(defines.items()))
        if key not in seen:
            try:
                variant = _variant(kernel_function, defines)
                seen[key] = [c.blocks for c in counting.count(variant._func(), env)]
            except (TileLangError, NotConstant, ValueError, TypeError):
                seen[key] = None
        return seen[key]
    return blocks


def _pipelines(func) -> list:
    from ..ir import nodes as ir
    from ..ir.visitor import walk
    return [(n.var.name, int(n.annotation("num_stages", 0) or 0)) for n in walk(func.body)
            if isinstance(n, ir.For) and n.kind == "pipelined"]
