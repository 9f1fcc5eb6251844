"""Errors the simulator raises; each carries its TL08xx diagnostic code. (Bad launch
arguments are the runtime binder's TL06xx errors, as on every target.)"""
from __future__ import annotations

from ...diagnostics.codes_tcsim import BAD_LAUNCH, DEADLOCK, RACE


class SimError(RuntimeError):
    code = "TL0800"


class RaceError(SimError):
    """A read or write of an on-chip buffer not ordered after a conflicting access."""
    code = RACE

    def __init__(self, message: str, races: list | None = None):
        self.races = races or [message]
        super().__init__(message)


class DeadlockError(SimError):
    """Every unit of a core waits and no event is pending; `.waits` lists who waits on
    what, `.cycle` the circular wait when there is one."""
    code = DEADLOCK

    def __init__(self, message: str, waits: list[str], cycle: list[str] | None = None):
        self.waits = waits
        self.cycle = cycle
        super().__init__(message)


class LaunchError(ValueError):
    """A launch the machine cannot run as the program asks (a grid that is not whole
    clusters, a cluster larger than the machine)."""
    code = BAD_LAUNCH
