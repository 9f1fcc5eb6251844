"""Where the driver keeps things on disk (files are written with the runtime cache's
`atomic_write`)."""
from __future__ import annotations

import os


def cache_dir() -> str:
    """`TILELANG_CACHE_DIR`, default `~/.cache/tilelang`, as the runtime's
    cache reads it (one definition of the environment variables)."""
    from ..runtime.cache import default_dir
    return os.path.abspath(os.path.expanduser(default_dir()))


def cache_disabled() -> bool:
    """`TILELANG_DISABLE_CACHE=1` (or true / yes / on)."""
    from ..runtime.cache import disabled_by_env
    return disabled_by_env()
