"""The `tilec compile --emit` kinds: IR text, LLVM IR, assembly, object, shared library.

Each output is written to a temporary file beside its destination and renamed into place,
so a compile that fails leaves no half-written artifact.
"""
from __future__ import annotations

import os

from . import paths, stages
from .host import resolve_target

TEXT_KINDS = ("ir", "llvm", "asm")
BINARY_KINDS = ("obj", "so")
KINDS = TEXT_KINDS + BINARY_KINDS
SUFFIX = {"ir": ".tl", "llvm": ".ll", "asm": ".s", "obj": ".o", "so": ".so"}


def ir_text(module, options, after: str | None = None) -> str:
    """The IR printed as `.tl` text after pass `after` (the whole pipeline if None)."""
    return stages.canonical_text(stages.lower(module, options, until=after))


def text_output(module, options, kind: str) -> str:
    """The text of a text kind (ir, llvm, asm)."""
    if kind == "ir":
        return ir_text(module, options)
    compiled = stages.codegen(stages.lower(module, options), options, resolve_target(options))
    return compiled.llvm_ir if kind == "llvm" else compiled.asm


def write_output(module, options, kind: str, out: str) -> list[str]:
    """Compile `module` to `kind` at `out`; returns the files written (`so` adds OUT's
    `.h` header)."""
    if kind in TEXT_KINDS:
        paths.atomic_write(out, text_output(module, options, kind).encode(), make_dirs=False)
        return [out]
    compiled = stages.codegen(stages.lower(module, options), options, resolve_target(options))
    if kind == "obj":
        paths.atomic_write(out, compiled.object, make_dirs=False)
        return [out]
    header_path = os.path.splitext(out)[0] + ".h"
    header = stages.header(compiled)
    stages.link(compiled, out)             # the linker's output is renamed into place
    paths.atomic_write(header_path, header.encode(), make_dirs=False)
    return [out, header_path]


def default_output(source_path: str, kind: str) -> str:
    stem = os.path.splitext(os.path.basename(source_path))[0] or "out"
    return stem + SUFFIX[kind]
