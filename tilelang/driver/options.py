"""Compile options as the driver sees them: target, defines, optimisation level.

Validation here turns a bad option into a TL07xx diagnostic (a user error), so the CLI and
the Python API report it the same way.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..diagnostics import Diagnostic, TileLangError
from ..diagnostics.codes_driver import BAD_DEFINE, UNKNOWN_TARGET

DEFINE_TYPES = (bool, int, float, str)


@dataclass(frozen=True)
class Options:
    """Everything besides the source that decides what gets compiled."""
    target: str = "cpu"
    opt: int = 3
    kernel: str | None = None
    cpu: str | None = None          # None: the host CPU
    features: str | None = None     # None: the host's features (or none for a named cpu)
    defines: tuple[tuple[str, object], ...] = ()
    dump_after: tuple[str, ...] = ()
    dump_dir: str | None = None
    verify_each: bool = False
    memory_reuse: bool = True       # the memory_reuse pass (off: every buffer on its own)
    raster: int = 0                 # tcsim: launch blocks in panels of this many grid rows

    def defines_dict(self) -> dict:
        return dict(self.defines)


def make_options(*, defines=None, target="cpu", opt=3, kernel=None, cpu=None, features=None,
                 dump_after=(), dump_dir=None, verify_each=False,
                 memory_reuse=None, raster=0) -> Options:
    """`memory_reuse=None` follows TILELANG_DISABLE_MEMORY_REUSE (on unless it is 1)."""
    if target == "auto":            # TileLang's spelling for "the machine we are on"
        target = "cpu"
    check_target(target)
    if not isinstance(raster, int) or raster < 0:
        raise TileLangError(Diagnostic("TL0706", f"raster must be an int >= 0, not {raster!r}"))
    if opt not in (0, 1, 2, 3):
        raise TileLangError(Diagnostic("TL0706", f"optimisation level must be 0..3, not {opt!r}"))
    if isinstance(dump_after, str):
        dump_after = (dump_after,)
    return Options(target=target, opt=int(opt), kernel=kernel, cpu=cpu, features=features,
                   defines=normalize_defines(defines), dump_after=tuple(dump_after),
                   dump_dir=None if dump_dir is None else str(dump_dir),
                   verify_each=bool(verify_each),
                   memory_reuse=memory_reuse_default() if memory_reuse is None
                   else bool(memory_reuse), raster=raster)


def memory_reuse_default() -> bool:
    return os.environ.get("TILELANG_DISABLE_MEMORY_REUSE", "") not in ("1", "true", "yes")


def check_target(target: str) -> None:
    """`cpu`, or `tcsim[:CONFIG]` naming a known machine config (TL0805 otherwise)."""
    if target == "cpu":
        return
    if is_tcsim(target):
        # only a tcsim target pays for importing its config table
        from ..codegen.tcsim.target import parse_target
        parse_target(target)
        return
    raise TileLangError(Diagnostic(
        UNKNOWN_TARGET, f"unknown target `{target}`",
        notes=["known targets: cpu, tcsim[:CONFIG] (the simulated accelerator; "
               "`tilec explain TL0805` lists the configs)"]))


def is_tcsim(target: str) -> bool:
    """The simulated accelerator: `tcsim` (its default config) or `tcsim:CONFIG`."""
    return target == "tcsim" or target.startswith("tcsim:")


def normalize_defines(defines) -> tuple[tuple[str, object], ...]:
    """A sorted tuple of (name, value), so equal defines give equal cache keys."""
    if not defines:
        return ()
    items = defines.items() if isinstance(defines, dict) else defines
    out = {}
    for name, value in items:
        if not isinstance(name, str) or not name.isidentifier():
            raise TileLangError(Diagnostic(BAD_DEFINE, f"`{name}` is not a valid constant name"))
        if not isinstance(value, DEFINE_TYPES):
            raise TileLangError(Diagnostic(
                BAD_DEFINE, f"constant `{name}` must be an int, float, bool or dtype string, "
                            f"not {type(value).__name__}"))
        out[name] = value
    return tuple(sorted(out.items()))


def parse_define(text: str) -> tuple[str, object]:
    """`NAME=VALUE` from the command line; the value is read as bool, int, float, else a
    string (quotes stripped), which is how a dtype is given: `-D dtype=float16`."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise ValueError(f"expected NAME=VALUE, got {text!r}")
    return name, parse_scalar(raw.strip())


def parse_scalar(raw: str):
    if raw in ("True", "true"):
        return True
    if raw in ("False", "false"):
        return False
    for conv in (int, float):
        try:
            return conv(raw)
        except ValueError:
            pass
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    return raw
