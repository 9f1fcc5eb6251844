"""Where the driver keeps things on disk, and how it writes them (atomically)."""
from __future__ import annotations

import os


def cache_dir() -> str:
    """`TILELANG_CACHE_DIR`, default `~/.cache/tilelang` (DESIGN §7), as the runtime's
    cache reads it (one definition of the environment variables)."""
    from ..runtime.cache import default_dir
    return os.path.abspath(os.path.expanduser(default_dir()))


def cache_disabled() -> bool:
    """`TILELANG_DISABLE_CACHE=1` (or true / yes / on)."""
    from ..runtime.cache import disabled_by_env
    return disabled_by_env()


def atomic_write(path: str, data: bytes, mode: int = 0o644, make_dirs: bool = True) -> None:
    """Write `data` to `path` so that readers see the old file or the whole new one, never
    a torn write: a temp file in the same directory, then rename. User outputs pass
    `make_dirs=False`: like any compiler, `-o missing/dir/x.o` is an error."""
    import tempfile                # not at module level: the warm path never writes
    directory = os.path.dirname(os.path.abspath(path))
    if make_dirs:
        os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix="-" + os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)        # mkstemp makes 0600; outputs should look like any file
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
