"""`--target tcsim[:CONFIG]` strings, for the driver and the CLI."""
from __future__ import annotations

from ...diagnostics import Diagnostic, TileLangError
from ...diagnostics.codes_tcsim import UNKNOWN_CONFIG
from ...targets.tcsim.config import CONFIGS, MachineConfig

DEFAULT_CONFIG = "h100_like"


def is_tcsim(target: str) -> bool:
    return target == "tcsim" or target.startswith("tcsim:")


def parse_target(target: str) -> MachineConfig:
    """The machine config a `tcsim` / `tcsim:NAME` target names (TL0805 if none)."""
    _, _, name = target.partition(":")
    name = name or DEFAULT_CONFIG
    if name not in CONFIGS:
        raise TileLangError(Diagnostic(
            UNKNOWN_CONFIG, f"unknown tcsim machine config `{name}`",
            help=f"known configs: {', '.join(CONFIGS)}"))
    return CONFIGS[name]
