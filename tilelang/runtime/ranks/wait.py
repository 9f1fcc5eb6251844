"""Host-side waiting: spin, then back off, give up after the timeout, and stop early when
the run has been aborted (another rank failed) or a peer process has died."""
from __future__ import annotations

import os
import time

from .errors import RankAbortedError, RankTimeoutError

DEFAULT_TIMEOUT_S = 60.0
TIMEOUT_ENV = "TILELANG_EP_TIMEOUT"


def timeout_s() -> float:
    """Seconds a wait may take: TILELANG_EP_TIMEOUT (default 60)."""
    raw = os.environ.get(TIMEOUT_ENV)
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{TIMEOUT_ENV}={raw!r} is not a number of seconds") from None
    if value <= 0:
        raise ValueError(f"{TIMEOUT_ENV}={raw!r} must be positive")
    return value


def wait_until(ready, what: str, rank: int, aborted=None, dead_peer=None,
               timeout: float | None = None) -> None:
    """Return once `ready()` holds. `aborted()` gives a reason (str) when the run was
    aborted, `dead_peer()` the description of a peer that is gone; either stops the
    wait with RankAbortedError, the timeout with RankTimeoutError."""
    if ready():
        return
    limit = timeout_s() if timeout is None else timeout
    start = time.monotonic()
    spins, sleep, next_check = 0, 1e-6, start + 0.05
    while not ready():
        spins += 1
        if spins > 200:
            time.sleep(sleep)
            sleep = min(sleep * 2, 1e-3)
        now = time.monotonic()
        if now >= next_check:
            next_check = now + 0.05
            reason = aborted() if aborted else None
            if not reason and dead_peer:
                reason = dead_peer()
            if reason:
                raise RankAbortedError(f"rank {rank}: stopped waiting for {what}: {reason}",
                                       rank)
            if now - start > limit:
                raise RankTimeoutError(
                    f"rank {rank}: timed out after {limit:g} s waiting for {what} "
                    f"(set {TIMEOUT_ENV} to change the limit)", rank)


__all__ = ["wait_until", "timeout_s", "DEFAULT_TIMEOUT_S", "TIMEOUT_ENV"]
