"""Diagnostic records and their rustc-style rendering.

    error[TL0203]: shape mismatch in T.gemm: A_s is (128, 32) but B_s is (64, 128)
      --> kernels/gemm.tl:17:13
       |
    17 |             T.gemm(A_s, B_s, C_f)
       |                    ^^^  ^^^ K = 64 here
       |                    K = 32 here
       = help: the K extents of A and B must agree
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Label:
    """A span of source with an optional message. Lines and columns are 1-based;
    `end_col` is exclusive and on the same line as `line` for underlining."""
    file: str
    line: int
    col: int
    end_line: int
    end_col: int
    message: str = ""

    @classmethod
    def from_span(cls, span, message: str = "") -> "Label":
        return cls(span.file, span.line, span.col, span.end_line, span.end_col, message)


@dataclass
class Diagnostic:
    code: str                      # "TL0203"
    message: str
    primary: Label | None = None
    secondary: list[Label] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    help: str | None = None
    level: str = "error"           # "error" | "warning" | "note"

    def render(self, sources: "SourceMap | None" = None) -> str:
        return render(self, sources)


class TileLangError(Exception):
    """A user error: carries one or more diagnostics. Never shown as a traceback."""

    def __init__(self, diagnostics, sources: "SourceMap | None" = None):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = list(diagnostics)
        self.sources = sources
        super().__init__(self.render())

    @property
    def code(self) -> str:
        return self.diagnostics[0].code

    def render(self) -> str:
        return "\n\n".join(render(d, self.sources) for d in self.diagnostics)

    def __str__(self) -> str:
        return self.render()


class InternalError(Exception):
    """A compiler bug (not the user's fault). `reproducer` is the path of the IR saved
    before the failing pass, when there is one."""

    def __init__(self, message: str, reproducer: str | None = None):
        self.reproducer = reproducer
        text = f"internal compiler error: {message}"
        if reproducer:
            text += f"\n  the IR before the failing pass was written to {reproducer}"
        super().__init__(text)


class ArtifactError(ValueError):
    """A compiled artifact that cannot be loaded or run: a library without a manifest or
    with a malformed one, a missing symbol (TL0612, the default), a tcsim program that is
    malformed (TL0802) or does not fit its machine (TL0801). One type for every target;
    `.code` says which."""

    def __init__(self, message: str, code: str | None = None):
        from .codes_runtime import BAD_ARTIFACT
        super().__init__(message)
        self.code = code or BAD_ARTIFACT


class SourceMap:
    """File name -> source text, for quoting lines in diagnostics. Files not registered
    are read from disk on demand."""

    def __init__(self):
        self._texts: dict[str, list[str]] = {}

    def add(self, file: str, text: str) -> None:
        self._texts[file] = text.splitlines()

    def line(self, file: str, line: int) -> str | None:
        if file not in self._texts:
            try:
                with open(file, encoding="utf-8") as f:
                    self._texts[file] = f.read().splitlines()
            except OSError:
                self._texts[file] = []
        lines = self._texts[file]
        return lines[line - 1] if 0 < line <= len(lines) else None


def render(diag: Diagnostic, sources: SourceMap | None = None) -> str:
    sources = sources or SourceMap()
    out = [f"{diag.level}[{diag.code}]: {diag.message}"]
    labels = [l for l in [diag.primary, *diag.secondary] if l is not None]
    if diag.primary is not None:
        p = diag.primary
        out.append(f"  --> {p.file}:{p.line}:{p.col}")
    if labels:
        width = len(str(max(l.line for l in labels)))
        pad = " " * width
        out.append(f"{pad} |")
        by_line: dict[tuple[str, int], list[tuple[Label, bool]]] = {}
        for l in labels:
            by_line.setdefault((l.file, l.line), []).append((l, l is diag.primary))
        for (file, line), group in sorted(by_line.items(), key=lambda kv: kv[0][1]):
            text = sources.line(file, line)
            if text is None:
                continue
            out.append(f"{str(line).rjust(width)} | {text}")
            out.extend(f"{pad} | {row}" for row in _underlines(group, len(text)))
    indent = " " * (len(str(max(l.line for l in labels))) if labels else 0)
    out.extend(f"{indent} = note: {note}" for note in diag.notes)
    if diag.help:
        out.append(f"{indent} = help: {diag.help}")
    return "\n".join(out)


def _underlines(group, line_len: int) -> list[str]:
    """Carets (primary) / dashes (secondary) under one source line; the message of the
    right-most label goes on the caret row, the others on rows below it (rustc style)."""
    group = sorted(group, key=lambda g: g[0].col)
    row = []
    for label, is_primary in group:
        start = max(label.col - 1, 0)
        end = label.end_col - 1 if label.end_line == label.line else line_len
        end = max(end, start + 1)
        if len(row) < end:
            row.extend(" " * (end - len(row)))
        for i in range(start, end):
            row[i] = "^" if is_primary else "-"
    first = "".join(row).rstrip()
    rows = []
    last_label = group[-1][0]
    rows.append(first + (f" {last_label.message}" if last_label.message else ""))
    for label, _ in reversed(group[:-1]):
        if label.message:
            rows.append(" " * (label.col - 1) + label.message)
    return rows


def render_json(diag: Diagnostic) -> str:
    def lab(l):
        return None if l is None else {"file": l.file, "line": l.line, "col": l.col,
                                       "end_line": l.end_line, "end_col": l.end_col,
                                       "message": l.message}
    return json.dumps({"level": diag.level, "code": diag.code, "message": diag.message,
                       "primary": lab(diag.primary),
                       "secondary": [lab(l) for l in diag.secondary],
                       "notes": diag.notes, "help": diag.help})
