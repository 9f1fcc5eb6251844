"""The memory figures of a module: per kernel and scope, the buffers with their live
ranges and offsets, and the arena's bytes before -> after reuse; plus the module's global
workspaces (`T.alloc_global`), planned across its kernels.

Read from an IR that `memory_reuse` has placed (the offsets are in its Allocs): this is a
report of the plan, not a second planner. Without the pass (`--no-memory-reuse`) every
buffer keeps memory of its own and `after == before`.

Workspaces: a kernel's workspaces live for one launch, and the kernels of a module run
one after another, so the module needs one region as large as its largest kernel's
workspaces (laid out side by side), not the sum over all kernels. Within a kernel they
are laid out widest element first: every size is a multiple of its element size, and
element sizes are powers of two, so each offset is aligned for its dtype.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes
from ..ir.nodes import Alloc, Const, Kernel, Module
from ..ir.visitor import walk
from .liveness import PLANNED_SCOPES, block_liveness, plannable

UNPLANNED_ALIGN = 64      # what codegen gives a buffer of its own (an alloca)


@dataclass(frozen=True)
class Row:
    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int                 # every copy: a pipeline stage buffer's ring counts all
    start: int
    end: int
    offset: int | None
    stages: int = 1             # copies (pipeline stages on targets that keep them apart)


@dataclass(frozen=True)
class ScopeFigures:
    scope: str
    rows: tuple[Row, ...]
    before: int
    after: int

    @property
    def saving(self) -> float:
        """The fraction of `before` that reuse saves (0.0 .. 1.0)."""
        return 0.0 if self.before == 0 else 1.0 - self.after / self.before


@dataclass(frozen=True)
class KernelFigures:
    name: str
    scopes: tuple[ScopeFigures, ...]
    workspaces: tuple[tuple[str, str, str], ...]   # (name, bytes, offset): expressions

    def scope(self, scope: str) -> ScopeFigures | None:
        return next((s for s in self.scopes if s.scope == scope), None)

    @property
    def before(self) -> int:
        return sum(s.before for s in self.scopes)

    @property
    def after(self) -> int:
        return sum(s.after for s in self.scopes)


@dataclass(frozen=True)
class MemoryReport:
    kernels: tuple[KernelFigures, ...]

    def kernel(self, name: str) -> KernelFigures:
        return next(k for k in self.kernels if k.name == name)

    @property
    def workspace_before(self) -> str:
        """Every kernel's workspaces side by side (bytes, an expression over sizes)."""
        return _sum([_sum([b for _, b, _ in k.workspaces]) for k in self.kernels])

    @property
    def workspace_peak(self) -> str:
        """The one region the module needs: its largest kernel's workspaces."""
        return _max([_sum([b for _, b, _ in k.workspaces]) for k in self.kernels
                     if k.workspaces])

    def text(self) -> str:
        return format_report(self)

    def __str__(self) -> str:
        return self.text()


def memory_report(module: Module, rings: bool = False) -> MemoryReport:
    """The figures of `module` (lowered at least through `memory_reuse`). `rings`: the
    target keeps a pipeline's stages apart (tcsim), so a stage buffer is `num_stages`
    copies, as the planner placed it (memory_reuse's `Rules.rings`)."""
    return MemoryReport(tuple(_kernel_figures(f, rings) for f in module.funcs))


def _kernel_figures(func, rings: bool = False) -> KernelFigures:
    scopes = _grid_figures([_scope_figures(k, rings) for k in func.grids()])
    bufs = [n.buffer for n in walk(func.body)
            if isinstance(n, Alloc) and n.buffer.scope == "global" and n.source is None]
    ws, offset = [], []
    for buf in sorted(bufs, key=lambda b: -dtypes.nbytes(b.dtype)):   # stable: source order
        ws.append((buf.name, _bytes_expr(buf), _sum(offset) if offset else "0"))
        offset.append(_bytes_expr(buf))
    return KernelFigures(func.name, scopes, tuple(ws))


def _grid_figures(per_grid: list) -> tuple[ScopeFigures, ...]:
    """One figure per scope for a kernel of several grids: every grid's rows; the grids
    run one after another, so the memory a scope needs is its largest grid's."""
    if len(per_grid) == 1:
        return per_grid[0]
    out = []
    for scope in PLANNED_SCOPES:
        figs = [f for grid in per_grid for f in grid if f.scope == scope]
        if figs:
            out.append(ScopeFigures(scope, tuple(r for f in figs for r in f.rows),
                                    max(f.before for f in figs), max(f.after for f in figs)))
    return tuple(out)


def _scope_figures(kernel: Kernel, rings: bool = False) -> tuple[ScopeFigures, ...]:
    allocs = {n.buffer.name: n for n in walk(kernel.body)
              if isinstance(n, Alloc) and plannable(n.buffer)}
    lives = {lv.name: lv for lv in block_liveness(kernel, rings=rings)}
    out = []
    for scope in PLANNED_SCOPES:
        group = [a for a in allocs.values() if a.buffer.scope == scope]
        if not group:
            continue
        rows = tuple(_row(a, lives[a.buffer.name]) for a in group)
        before = sum(_round_up(lives[a.buffer.name].nbytes, a.align or UNPLANNED_ALIGN)
                     * r.stages for r, a in zip(rows, group))
        # the arena holds the placed buffers; any other has an allocation of its own
        arena = max((r.offset + r.nbytes for r in rows if r.offset is not None), default=0)
        after = arena + sum(_round_up(r.nbytes, UNPLANNED_ALIGN) for r in rows
                            if r.offset is None)
        out.append(ScopeFigures(scope, rows, before, after))
    return tuple(out)


def _row(alloc: Alloc, live) -> Row:
    b = alloc.buffer
    return Row(b.name, b.dtype, tuple(int(d.value) for d in b.shape),
               _ring_bytes(live, alloc.align or UNPLANNED_ALIGN), live.start, live.end,
               alloc.offset, live.stages)


def _ring_bytes(live, align: int) -> int:
    """A buffer's bytes with all its copies, laid out as the planner packs a ring
    (memory_reuse.pack: copies an aligned stride apart)."""
    if live.stages == 1:
        return live.nbytes
    return _round_up(live.nbytes, align) * (live.stages - 1) + live.nbytes


def _bytes_expr(buf) -> str:
    """A workspace's bytes: a number, or an expression over the symbolic sizes."""
    const, names = dtypes.nbytes(buf.dtype), []
    for d in buf.shape:
        if isinstance(d, Const):
            const *= int(d.value)
        else:
            from ..ir.printer import print_node
            names.append(print_node(d))
    return " * ".join([str(const)] + names) if names else str(const)


def _sum(terms: list[str]) -> str:
    terms = [t for t in terms if t != "0"]
    consts = sum(int(t) for t in terms if t.isdigit())
    rest = [t for t in terms if not t.isdigit()]
    if not rest:
        return str(consts)
    return " + ".join(rest + ([str(consts)] if consts else []))


def _max(terms: list[str]) -> str:
    if not terms:
        return "0"
    if all(t.isdigit() for t in terms):
        return str(max(int(t) for t in terms))
    unique = list(dict.fromkeys(terms))
    return unique[0] if len(unique) == 1 else f"max({', '.join(unique)})"


def _round_up(n: int, align: int) -> int:
    return -(-n // align) * align


# ----------------------------------------------------------------------------- text

def format_report(report: MemoryReport) -> str:
    """The `--stats` memory section: a table per kernel and scope, then the totals."""
    lines = []
    for k in report.kernels:
        for s in k.scopes:
            lines.append(f"{k.name}: {s.scope} arena")
            lines += _table(s.rows)
            lines.append(f"  {s.scope}: {_kib(s.before)} -> {_kib(s.after)} "
                         f"({s.saving * 100:.1f}% saved)")
        if not k.scopes:
            lines.append(f"{k.name}: no block-local buffers")
    if any(k.workspaces for k in report.kernels):
        lines.append("global workspaces (one region for the module: its kernels run "
                     "one after another)")
        for k in report.kernels:
            for name, nbytes, offset in k.workspaces:
                lines.append(f"  {k.name}.{name}: {nbytes} bytes at offset {offset}")
        lines.append(f"  workspace: {report.workspace_before} -> "
                     f"{report.workspace_peak} bytes (peak)")
    return "\n".join(lines)


def _table(rows) -> list[str]:
    head = ("buffer", "dtype", "shape", "bytes", "live", "offset")
    body = [(r.name, r.dtype, ("x".join(map(str, r.shape)) or "1")
             + (f" x{r.stages} stages" if r.stages > 1 else ""), str(r.nbytes),
             f"{r.start}..{r.end}", "-" if r.offset is None else str(r.offset)) for r in rows]
    widths = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
    right = (False, False, False, True, True, True)
    fmt = lambda cells: "  " + "  ".join(c.rjust(w) if r else c.ljust(w)
                                         for c, w, r in zip(cells, widths, right)).rstrip()
    return [fmt(head)] + [fmt(b) for b in body]


def _kib(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"
