"""What the driver did, for people (`TILELANG_LOG=1` on stderr) and for tests (`STATS`).

Tests of the cache observe a second process through the log ("cache hit", never
"compiled"), and in-process through the counters.
"""
from __future__ import annotations

import os
import sys

STATS = {"compiled": 0, "cache_hits": 0}


def enabled() -> bool:
    return os.environ.get("TILELANG_LOG", "") not in ("", "0")


def event(kind: str, what: str, detail: str = "") -> None:
    """Count `kind` ("compiled" | "cache_hits") and, if logging is on, say it (also
    "cache_unwritable", which is only said)."""
    if kind in STATS:
        STATS[kind] += 1
    if enabled():
        word = {"cache_hits": "cache hit", "cache_unwritable": "cannot write the cache"}.get(
            kind, kind)
        print(f"tilelang: {word}: {what}{' ' + detail if detail else ''}", file=sys.stderr)
