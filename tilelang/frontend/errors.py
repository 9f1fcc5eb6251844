"""Raising diagnostics from the frontend, and turning parse-tree positions into spans."""
from __future__ import annotations

import difflib

from ..diagnostics import Diagnostic, Label
from ..ir.nodes import Span, NO_SPAN


class Fail(Exception):
    """A user error found by the frontend; `parse_module` wraps it in a TileLangError
    together with the source text (so rendering can quote the line)."""

    def __init__(self, diag: Diagnostic):
        super().__init__(diag.message)
        self.diag = diag


def fail(code: str, message: str, span: Span | None, label: str = "", *,
         secondary=(), help: str | None = None, notes=()) -> "Fail":
    """Build the exception for one diagnostic; `secondary` holds (span, message) pairs.
    Callers write `raise fail(...)` so control flow stays visible."""
    primary = Label.from_span(span, label) if span is not None and span is not NO_SPAN else None
    sec = [Label.from_span(s, m) for s, m in secondary if s is not None and s is not NO_SPAN]
    return Fail(Diagnostic(code, message, primary, sec, list(notes), help))


def suggest(name: str, candidates) -> str | None:
    """The closest candidate to a misspelt name, for "did you mean" help."""
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(name: str, candidates, fmt: str = "`{}`") -> str | None:
    best = suggest(name, candidates)
    return f"did you mean {fmt.format(best)}?" if best else None


class Spans:
    """Turns lark positions into Spans of the user's file. For a function taken from a
    .py file the parsed text is a dedented slice: `line_offset`/`col_offset` map it
    back to the real line and column."""

    def __init__(self, file: str, line_offset: int = 0, col_offset: int = 0):
        self.file = file
        self.line_offset = line_offset
        self.col_offset = col_offset

    def of(self, item) -> Span:
        """Span of a lark Tree (its meta) or Token; NO_SPAN when it has no position."""
        meta = getattr(item, "meta", None)
        if meta is not None:
            if getattr(meta, "empty", True):
                return NO_SPAN
            line, col, eline, ecol = meta.line, meta.column, meta.end_line, meta.end_column
        else:
            line = getattr(item, "line", None)
            if line is None:
                return NO_SPAN
            col, eline, ecol = item.column, item.end_line, item.end_column
        return self.at(line, col, eline, ecol)

    def at(self, line, col, end_line=None, end_col=None) -> Span:
        end_line = line if end_line is None else end_line
        end_col = col + 1 if end_col is None else end_col
        return Span(self.file, line + self.line_offset, col + self.col_offset,
                    end_line + self.line_offset, end_col + self.col_offset)
