"""Compile options as the driver sees them: target (a `targets` Target), defines,
optimisation level.

Validation here turns a bad option into a TL07xx diagnostic (a user error), so the CLI and
the Python API report it the same way.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from .. import targets
from ..diagnostics import Diagnostic, TileLangError
from ..diagnostics.codes_driver import BAD_DEFINE
from ..targets.base import Target

DEFINE_TYPES = (bool, int, float, str)


@dataclass(frozen=True)
class Options:
    """Everything besides the source that decides what gets compiled."""
    target: Target = field(default_factory=targets.get)    # `targets.get(spec)`
    opt: int = 3
    kernel: str | None = None
    defines: tuple[tuple[str, object], ...] = ()
    dump_after: tuple[str, ...] = ()
    dump_dir: str | None = None
    verify_each: bool = False
    memory_reuse: bool = True       # the memory_reuse pass (off: every buffer on its own)
    raster: int = 0                 # tcsim: launch blocks in panels of this many grid rows
    fast_math: bool = False         # float reassociation / approximate functions allowed
    strict_dtypes: bool = False     # mixed dtypes are errors instead of TVM's promotion

    def defines_dict(self) -> dict:
        return dict(self.defines)


def make_options(*, defines=None, target=None, opt=3, kernel=None, cpu=None, features=None,
                 dump_after=(), dump_dir=None, verify_each=False,
                 memory_reuse=None, raster=0, fast_math=False,
                 strict_dtypes=False) -> Options:
    """`target`: a spec (`targets.get`; None: the default target) or a Target; `cpu` /
    `features` are the cpu spec's aliases. `memory_reuse=None` follows
    TILELANG_DISABLE_MEMORY_REUSE (on unless it is 1)."""
    target = targets.get(target, cpu=cpu, features=features)
    if not isinstance(raster, int) or raster < 0:
        raise TileLangError(Diagnostic("TL0706", f"raster must be an int >= 0, not {raster!r}"))
    if opt not in (0, 1, 2, 3):
        raise TileLangError(Diagnostic("TL0706", f"optimisation level must be 0..3, not {opt!r}"))
    if isinstance(dump_after, str):
        dump_after = (dump_after,)
    return Options(target=target, opt=int(opt), kernel=kernel,
                   defines=normalize_defines(defines), dump_after=tuple(dump_after),
                   dump_dir=None if dump_dir is None else str(dump_dir),
                   verify_each=bool(verify_each),
                   memory_reuse=memory_reuse_default() if memory_reuse is None
                   else bool(memory_reuse), raster=raster, fast_math=bool(fast_math),
                   strict_dtypes=bool(strict_dtypes))


def memory_reuse_default() -> bool:
    return os.environ.get("TILELANG_DISABLE_MEMORY_REUSE", "") not in ("1", "true", "yes")


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
