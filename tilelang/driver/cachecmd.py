"""`tilec cache info|clear`: the runtime's cache plus the driver's source index."""
from __future__ import annotations

import os
import shutil

from . import paths
from .store import INDEX_DIR


def _cache():
    from ..runtime.cache import Cache
    return Cache(paths.cache_dir(), enabled=True)


def info() -> dict:
    data = _cache().info()
    index = os.path.join(paths.cache_dir(), INDEX_DIR)
    try:
        indexed = len(os.listdir(index))
    except OSError:
        indexed = 0
    return {"directory": data["dir"], "artifacts": data["entries"],
            "indexed sources": indexed, "size": _human_bytes(data["bytes"]),
            "enabled": "no (TILELANG_DISABLE_CACHE)" if paths.cache_disabled() else "yes"}


def clear() -> int:
    """Remove every artifact and the source index; returns the artifacts removed."""
    removed = _cache().clear()
    shutil.rmtree(os.path.join(paths.cache_dir(), INDEX_DIR), ignore_errors=True)
    return removed


def _human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
