"""The keywords of `@tilelang.jit(...)`: TileLang's options, this compiler's options, and
nothing else.

    parse(kwargs) -> JitOptions(compile=..., defines=..., verbose=..., debug_root_path=...)

TileLang's `out_idx`, `target`, `target_host`, `execution_backend`, `verbose`,
`pass_configs`, `debug_root_path` and `compile_flags` are options (the GPU-only ones are
accepted and change nothing); so are this compiler's `opt`, `cpu`, `features`,
`verify_each`, `dump_after`, `dump_dir`, `memory_reuse`, `raster` and `strict_dtypes`. Constants are
changed through the factory's arguments, or `defines={...}`; any other keyword is an
error (TL0780) — it used to become a constant silently and could replace a variable of
the kernel.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from .diagnostics import Diagnostic, TileLangError
from .diagnostics.codes_compat import JIT_KEYWORD

COMPILE_OPTIONS = ("target", "opt", "cpu", "features", "verify_each", "dump_after",
                   "dump_dir", "memory_reuse", "raster", "strict_dtypes")
# TileLang's own: accepted; the GPU-only ones change nothing here
TILELANG_OPTIONS = ("target_host", "execution_backend", "verbose", "pass_configs",
                    "debug_root_path", "compile_flags")
KNOWN = ("out_idx", "defines") + COMPILE_OPTIONS + TILELANG_OPTIONS


@dataclass
class JitOptions:
    compile: dict = field(default_factory=dict)   # make_options() keywords
    defines: dict = field(default_factory=dict)
    verbose: bool = False
    debug_root_path: str | None = None


def parse(kwargs: dict, where: str = "@tilelang.jit") -> JitOptions:
    """Split `kwargs` (without out_idx) into options; TL0780 for an unknown keyword."""
    from .passconfig import options_for
    unknown = [k for k in kwargs if k not in KNOWN]
    if unknown:
        close = difflib.get_close_matches(unknown[0], KNOWN, n=1)
        raise TileLangError(Diagnostic(
            JIT_KEYWORD, f"{where} got an unknown keyword `{unknown[0]}`",
            notes=[f"options: {', '.join(KNOWN)}"],
            help=(f"did you mean `{close[0]}`?" if close else
                  f"to set a constant, pass it to the factory as an argument, or "
                  f"defines={{{unknown[0]!r}: ...}}")))
    out = JitOptions()
    out.compile.update(options_for(kwargs.get("pass_configs")))
    out.compile.update({k: kwargs[k] for k in COMPILE_OPTIONS if kwargs.get(k) is not None})
    out.defines = dict(kwargs.get("defines") or {})
    out.verbose = bool(kwargs.get("verbose"))
    out.debug_root_path = kwargs.get("debug_root_path")
    return out


def check_defines(defines: dict, parameters, factory_name: str) -> None:
    """A define may not name a parameter of the factory: the argument sets it."""
    clash = [n for n in defines if n in (parameters or ())]
    if clash:
        raise TileLangError(Diagnostic(
            JIT_KEYWORD, f"defines= names `{clash[0]}`, a parameter of `{factory_name}`",
            help=f"pass it as an argument instead: `{factory_name}(..., {clash[0]}=...)`"))


__all__ = ["JitOptions", "parse", "check_defines", "KNOWN", "COMPILE_OPTIONS",
           "TILELANG_OPTIONS"]
