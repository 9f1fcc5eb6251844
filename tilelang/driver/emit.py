"""The `tilec compile --emit` kinds: `ir` (every target's), and what the target offers
(`Target.kinds`: LLVM IR, assembly, objects and libraries on cpu; `.tcasm` and artifacts
on tcsim).

Each output is written to a temporary file beside its destination and renamed into place,
so a compile that fails leaves no half-written artifact.
"""
from __future__ import annotations

import os

from .. import targets
from ..diagnostics import Diagnostic, TileLangError
from ..diagnostics.codes_driver import WRONG_TARGET
from ..runtime.cache import atomic_write
from . import stages


def default_kind(options) -> str:
    """What `tilec compile` writes without `--emit`: the target's loadable artifact."""
    return options.target.default_kind


def kinds_for(target) -> tuple[str, ...]:
    """The `--emit` kinds a target can write (`ir` is every target's)."""
    return tuple(k.name for k in target.all_kinds())


def check_kind(options, kind: str) -> None:
    """A kind of another target is a user error naming the targets that have it."""
    if kind not in kinds_for(options.target):
        need = " or ".join(f"`--target {s}`" for s in targets.offering(kind))
        raise TileLangError(Diagnostic(
            WRONG_TARGET, f"`--emit {kind}` is not available for target `{options.target}`",
            help=f"use {need}, or one of --emit {', '.join(kinds_for(options.target))}"
            if need else f"use one of --emit {', '.join(kinds_for(options.target))}"))


def is_text(options, kind: str) -> bool:
    """Whether `kind` is text (printed on stdout when no `-o` is given)."""
    check_kind(options, kind)
    return options.target.kind(kind).text


def ir_text(module, options, after: str | None = None) -> str:
    """The IR printed as `.tl` text after pass `after` (the whole pipeline if None)."""
    return stages.canonical_text(stages.lower(module, options, until=after))


def text_output(module, options, kind: str, timings: list | None = None) -> str:
    """The text of a text kind. `timings` collects (stage, seconds)."""
    check_kind(options, kind)
    if kind == "ir":
        return stages.canonical_text(stages.lower(module, options, timings=timings))
    compiled = stages.compile_module(module, options, timings)
    return options.target.emit_text(compiled, kind, timings)


def write_output(module, options, kind: str, out: str, timings: list | None = None) -> list[str]:
    """Compile `module` to `kind` at `out`; returns the files written (a kind may add
    files beside OUT, as `so` adds OUT's `.h` header). `timings` collects (stage, seconds)."""
    if is_text(options, kind):
        text = text_output(module, options, kind, timings)
        atomic_write(out, text.encode(), make_dirs=False)
        return [out]
    compiled = stages.compile_module(module, options, timings)
    files = options.target.emit_binary(compiled, kind, timings)
    written = []
    for suffix, data in files.items():
        path = os.path.splitext(out)[0] + suffix if suffix else out
        atomic_write(path, data, make_dirs=False)
        written.append(path)
    return written


def format_timings(timings) -> str:
    """The `--stats` table: one line a stage, then the total."""
    width = max([len(n) for n, _ in timings] + [len("total")])
    lines = [f"{n.ljust(width)}  {s * 1e3:9.3f} ms" for n, s in timings]
    lines.append(f"{'total'.ljust(width)}  {sum(s for _, s in timings) * 1e3:9.3f} ms")
    return "\n".join(lines)


def default_output(source_path: str, options, kind: str) -> str:
    """`k.tl` -> `k.so` (in the current directory); standard input -> `out.so`."""
    stem = os.path.splitext(os.path.basename(source_path))[0]
    if not stem or source_path == "<stdin>":
        stem = "out"
    return stem + options.target.kind(kind).suffix
