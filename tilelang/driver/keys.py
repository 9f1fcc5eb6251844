"""Cache keys: what decides that two compiles give the same artifact.

The key of an artifact is the canonical printed IR (after parsing, so comments and
whitespace do not matter) + defines + options + what the target says decides its code
(`Target.key_parts`: for cpu the triple, CPU, features, machine description and llvmlite)
+ the compiler's identity. A second, cheaper key maps the exact source text to that
canonical key, so that a warm start of a `.tl` file needs neither the parser nor llvmlite.

The compiler's identity is its version plus a fingerprint of its own source files (size
and mtime), so editing the compiler invalidates what it compiled before.
"""
from __future__ import annotations

import hashlib
import json
import os

from ..version import __version__

# The packages whose code decides what an artifact contains (not the runtime: it reads
# artifacts, it does not make them).
_COMPILER_PARTS = ("frontend", "ir", "passes", "codegen", "language", "driver", "targets")
_COMPILER_FILES = ("dtypes.py",)

_fingerprint: str | None = None


def compiler_identity() -> str:
    global _fingerprint
    if _fingerprint is None:
        _fingerprint = f"{__version__}+{_source_fingerprint()}"
    return _fingerprint


def _source_fingerprint() -> str:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256()
    entries = []
    for name in _COMPILER_FILES:
        try:
            entries.append((name, os.stat(os.path.join(root, name))))
        except OSError:
            pass
    for part in _COMPILER_PARTS:
        _collect(os.path.join(root, part), part, entries)
    for rel, st in sorted(entries):
        h.update(f"{rel}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _collect(directory: str, rel: str, out: list) -> None:
    """(relative path, stat) of the .py/.lark files under `directory` (scandir: no
    extra stat call to tell files from directories)."""
    try:
        with os.scandir(directory) as it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        _collect(entry.path, f"{rel}/{entry.name}", out)
                elif entry.name.endswith((".py", ".lark")):
                    out.append((f"{rel}/{entry.name}", entry.stat()))
    except OSError:
        pass


def _digest(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=repr).encode()).hexdigest()


def _option_parts(options) -> dict:
    return {"defines": [list(d) for d in options.defines], "opt": options.opt,
            "memory_reuse": options.memory_reuse, "raster": options.raster,
            "fast_math": options.fast_math, "strict_dtypes": options.strict_dtypes,
            "target": options.target.key_parts(), "compiler": compiler_identity()}


def artifact_key(canonical_ir: str, options) -> str:
    """The key of the compiled artifact of an IR module (already kernel-selected)."""
    return _digest({"ir": canonical_ir, **_option_parts(options)})


def source_key(text: str, options) -> str:
    """The key of a `.tl` text as written: maps to its artifact key without parsing."""
    return _digest({"source": text, "kernel": options.kernel, **_option_parts(options)})
