"""The `tilec compile --emit` kinds: IR text, LLVM IR, assembly, object, shared library
(cpu target); `.tcasm` text and artifact files (tcsim target).

Each output is written to a temporary file beside its destination and renamed into place,
so a compile that fails leaves no half-written artifact.
"""
from __future__ import annotations

import os
import time

from ..diagnostics import Diagnostic, TileLangError
from ..diagnostics.codes_driver import WRONG_TARGET
from . import paths, stages
from .host import resolve_target
from .options import is_tcsim

TEXT_KINDS = ("ir", "llvm", "asm", "tcasm")
BINARY_KINDS = ("obj", "so", "tcsim")
KINDS = TEXT_KINDS + BINARY_KINDS
SUFFIX = {"ir": ".tl", "llvm": ".ll", "asm": ".s", "obj": ".o", "so": ".so",
          "tcasm": ".tcasm", "tcsim": ".tcsim"}
TCSIM_KINDS = ("ir", "tcasm", "tcsim")          # the others are native code


def default_kind(options) -> str:
    """What `tilec compile` writes without `--emit`: a loadable artifact."""
    return "tcsim" if is_tcsim(options.target) else "so"


def kinds_for(target: str) -> tuple[str, ...]:
    """The `--emit` kinds a target can write (`ir` is every target's)."""
    tcsim = is_tcsim(target)
    return tuple(k for k in KINDS if k == "ir" or (k in TCSIM_KINDS) == tcsim)


def check_kind(options, kind: str) -> None:
    """A kind of the other target is a user error naming the target it needs."""
    if kind not in kinds_for(options.target):
        need = "cpu" if is_tcsim(options.target) else "tcsim[:CONFIG]"
        raise TileLangError(Diagnostic(
            WRONG_TARGET, f"`--emit {kind}` is not available for target `{options.target}`",
            help=f"use `--target {need}`, or one of --emit "
                 f"{', '.join(kinds_for(options.target))}"))


def ir_text(module, options, after: str | None = None) -> str:
    """The IR printed as `.tl` text after pass `after` (the whole pipeline if None)."""
    return stages.canonical_text(stages.lower(module, options, until=after))


def text_output(module, options, kind: str, timings: list | None = None) -> str:
    """The text of a text kind (ir, llvm, asm, tcasm). `timings` collects (stage, seconds)."""
    check_kind(options, kind)
    if kind == "tcasm":
        from .tcsim import tcasm_text
        return tcasm_text(module, options, timings)
    if kind == "ir":
        return stages.canonical_text(stages.lower(module, options, timings=timings))
    compiled = _codegen(module, options, timings)
    return compiled.llvm_ir if kind == "llvm" else _timed(timings, "asm", lambda: compiled.asm)


def write_output(module, options, kind: str, out: str, timings: list | None = None) -> list[str]:
    """Compile `module` to `kind` at `out`; returns the files written (`so` adds OUT's
    `.h` header). `timings` collects (stage, seconds)."""
    if kind in TEXT_KINDS:
        text = text_output(module, options, kind, timings)
        paths.atomic_write(out, text.encode(), make_dirs=False)
        return [out]
    check_kind(options, kind)
    if kind == "tcsim":
        from .tcsim import artifact_bytes
        paths.atomic_write(out, artifact_bytes(module, options, timings), make_dirs=False)
        return [out]
    compiled = _codegen(module, options, timings)
    if kind == "obj":
        paths.atomic_write(out, compiled.object, make_dirs=False)
        return [out]
    header_path = os.path.splitext(out)[0] + ".h"
    header = stages.header(compiled)
    # the linker's output is renamed into place, so a failed link leaves nothing behind
    _timed(timings, "link", lambda: stages.link(compiled, out))
    paths.atomic_write(header_path, header.encode(), make_dirs=False)
    return [out, header_path]


def _codegen(module, options, timings):
    return stages.compile_object(module, options, resolve_target(options), timings)


def _timed(timings, name: str, fn):
    start = time.perf_counter()
    result = fn()
    if timings is not None:
        timings.append((name, time.perf_counter() - start))
    return result


def format_timings(timings) -> str:
    """The `--stats` table: one line a stage, then the total."""
    width = max([len(n) for n, _ in timings] + [len("total")])
    lines = [f"{n.ljust(width)}  {s * 1e3:9.3f} ms" for n, s in timings]
    lines.append(f"{'total'.ljust(width)}  {sum(s for _, s in timings) * 1e3:9.3f} ms")
    return "\n".join(lines)


def default_output(source_path: str, kind: str) -> str:
    """`k.tl` -> `k.so` (in the current directory); standard input -> `out.so`."""
    stem = os.path.splitext(os.path.basename(source_path))[0]
    if not stem or source_path == "<stdin>":
        stem = "out"
    return stem + SUFFIX[kind]
