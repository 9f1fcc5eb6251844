"""`tilec cache info|clear`: the runtime's cache plus the driver's source index."""
from __future__ import annotations

import os
import re
import shutil

from ..diagnostics import Diagnostic, TileLangError
from ..diagnostics.codes_driver import CACHE_NOT_CLEARED
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
    """Remove every artifact, the source index and the targets' memos; returns
    the artifacts removed. What cannot be removed (a read-only cache) is a user error
    saying how much is left and why."""
    from ..runtime.cache import CacheClearError
    try:
        removed = _cache().clear()
    except CacheClearError as e:
        raise TileLangError(Diagnostic(
            CACHE_NOT_CLEARED, f"cannot clear the cache {paths.cache_dir()}: "
                               f"{e.remaining} artifact{'s' if e.remaining != 1 else ''} "
                               f"could not be removed ({e.reason}); {e.removed} removed",
            help="check the directory's permissions, or point TILELANG_CACHE_DIR "
                 "elsewhere")) from None
    shutil.rmtree(os.path.join(paths.cache_dir(), INDEX_DIR), ignore_errors=True)
    _remove_memos(paths.cache_dir())
    return removed


_MEMO = re.compile(r"^[a-z]+-[0-9a-f]{16}\.json$")


def _remove_memos(directory: str) -> None:
    """The memos targets keep beside the artifacts (`host-<machine>.json`: the host's
    LLVM facts; `peaks-<machine>.json`: measured ceilings): recomputed on demand."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if _MEMO.match(name):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


def _human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
