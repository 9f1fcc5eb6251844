"""The `tilec compile --emit` kinds: IR text, LLVM IR, assembly, object, shared library.

Each output is written to a temporary file beside its destination and renamed into place,
so a compile that fails leaves no half-written artifact.
"""
from __future__ import annotations

import os
import tempfile

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
        paths.atomic_write(out, text_output(module, options, kind).encode())
        return [out]
    compiled = stages.codegen(stages.lower(module, options), options, resolve_target(options))
    if kind == "obj":
        paths.atomic_write(out, compiled.object)
        return [out]
    header_path = os.path.splitext(out)[0] + ".h"
    header = stages.header(compiled)
    _link_atomically(compiled, out)
    paths.atomic_write(header_path, header.encode())
    return [out, header_path]


def default_output(source_path: str, kind: str) -> str:
    stem = os.path.splitext(os.path.basename(source_path))[0] or "out"
    return stem + SUFFIX[kind]


def _link_atomically(compiled, out: str) -> None:
    directory = os.path.dirname(os.path.abspath(out))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".so")
    os.close(fd)
    try:
        stages.link(compiled, tmp)
        os.chmod(tmp, 0o755)
        os.replace(tmp, out)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
