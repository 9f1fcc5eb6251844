"""The pass manager: dumps, timing, verify-each, reproducers.

A pass is a function `Module -> Module`, named (`Pass`); each target lists its own
pipeline (`Target.pipeline()`, e.g. `tilelang/targets/cpu/pipeline.py`). `PassManager.run`
applies a list of them and
  * times each (`.timings`, a list of (name, seconds));
  * with `verify_each`, runs the IR verifier on the input and after every pass;
  * prints the IR after the passes named in `dump_after` (or "all") to
    `dump_dir/<NN>_<pass>.tl`, or to stderr without a `dump_dir`;
  * when a pass crashes (or leaves ill-formed IR), writes the IR *before* that pass to a
    reproducer file and raises `InternalError` naming it. A `TileLangError` raised by a
    pass is a user error the pass found, and passes through untouched.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from ..diagnostics import InternalError, TileLangError
from ..ir import Module
from ..ir.verifier import verify


@dataclass(frozen=True)
class Pass:
    name: str
    fn: Callable[[Module], Module]
    description: str

    def __call__(self, module: Module) -> Module:
        return self.fn(module)


class PassManager:
    def __init__(self, passes: Iterable[Pass], verify_each: bool = False,
                 dump_after: Iterable[str] | str = (), dump_dir: str | None = None):
        self.passes = list(passes)
        self.verify_each = verify_each
        self.dump_after = _dump_set(dump_after)
        self.dump_dir = dump_dir
        self.timings: list[tuple[str, float]] = []

    def run(self, module: Module) -> Module:
        self.timings = []
        if self.verify_each:
            self._verify(module, None, "the input to the pass pipeline")
        for index, p in enumerate(self.passes):
            before = module
            start = time.perf_counter()
            try:
                module = p.fn(before)
            except TileLangError:
                raise
            except Exception as exc:    # a bug in the pass: keep what reproduces it
                path = self._reproducer(index, p, before, exc)
                raise InternalError(f"pass `{p.name}` failed: {_describe(exc)}",
                                    reproducer=path) from exc
            self.timings.append((p.name, time.perf_counter() - start))
            if not isinstance(module, Module):
                path = self._reproducer(index, p, before, None)
                raise InternalError(f"pass `{p.name}` returned {type(module).__name__}, "
                                    f"not a Module", reproducer=path)
            if self.verify_each:
                self._verify(module, (index, p, before), f"the IR after `{p.name}`")
            if "all" in self.dump_after or p.name in self.dump_after:
                self._dump(index, p, module)
        return module

    def report(self) -> str:
        """The per-pass timings as a small table (for `--stats`)."""
        width = max((len(n) for n, _ in self.timings), default=0)
        return "\n".join(f"{n.ljust(width)}  {s * 1000:8.3f} ms" for n, s in self.timings)

    # ------------------------------------------------------------------ helpers

    def _verify(self, module: Module, failing, what: str) -> None:
        """`failing` is (index, pass, IR before it) for the reproducer; None means the
        input itself is ill-formed (a frontend bug), and the input is what reproduces it."""
        try:
            verify(module)
        except InternalError as exc:
            if failing is None:
                path = self._write("00_input.repro.tl", "# reproducer: the input to the "
                                   "pass pipeline, rejected by the verifier", exc, module)
            else:
                index, p, before = failing
                path = self._reproducer(index, p, before, exc)
            raise InternalError(f"{what} is ill-formed: {exc}", reproducer=path) from exc

    def _dump(self, index: int, p: Pass, module: Module) -> None:
        text = _print(module)
        if self.dump_dir is None:
            sys.stderr.write(f"# IR after pass {p.name}\n{text}\n")
            return
        os.makedirs(self.dump_dir, exist_ok=True)
        path = os.path.join(self.dump_dir, f"{index + 1:02d}_{p.name}.tl")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    def _reproducer(self, index: int, p: Pass, before: Module, exc) -> str | None:
        """Write the IR before pass `p`; return the path (None if even that fails)."""
        return self._write(f"{index + 1:02d}_{p.name}.repro.tl",
                           f"# reproducer: the IR before pass `{p.name}`", exc, before)

    def _write(self, filename: str, header: str, exc, module: Module) -> str | None:
        if exc is not None:
            header += f"\n# which failed with {type(exc).__name__}: " + \
                      " ".join(str(exc).split())
        try:
            directory = self.dump_dir or tempfile.mkdtemp(prefix="tilelang-repro-")
            os.makedirs(directory, exist_ok=True)
            path = os.path.join(directory, filename)
            with open(path, "w", encoding="utf-8") as f:
                f.write(f"{header}\n{_print(module)}\n")
            return path
        except OSError:
            return None


def _describe(exc: Exception) -> str:
    """The exception in one phrase; an InternalError already says it is one."""
    text = str(exc)
    prefix = "internal compiler error: "
    if isinstance(exc, InternalError) and text.startswith(prefix):
        return text[len(prefix):]
    return f"{type(exc).__name__}: {text}"


def _dump_set(dump_after) -> frozenset:
    if isinstance(dump_after, str):
        dump_after = (dump_after,)
    return frozenset(dump_after or ())


def _print(module: Module) -> str:
    """The module as `.tl` text; the printer's own failure must not hide the real error."""
    try:
        from ..ir.printer import print_module
    except ImportError:
        return repr(module)
    try:
        return print_module(module)
    except Exception as exc:   # noqa: BLE001 - a reproducer is still useful as repr
        return f"# (the printer failed: {type(exc).__name__}: {exc})\n{module!r}"
