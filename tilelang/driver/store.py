"""The driver's view of the disk cache: artifact key -> loadable `.so`.

The runtime's `Cache` owns the on-disk format (checksums, atomic stores, concurrent
writers); this adds the source index, small files mapping the key of an exact `.tl` text
to the artifact key, so a warm start need not parse.
"""
from __future__ import annotations

import os

from . import paths

SO_NAME = "kernel.so"
INDEX_DIR = "index"


class ArtifactStore:
    def __init__(self, directory: str):
        from ..runtime.cache import Cache
        self.dir = directory
        self.cache = Cache(directory, enabled=True)     # the driver decided to use it

    def lookup(self, akey: str) -> str | None:
        """The path of the cached `.so`, or None (a corrupt entry counts as missing)."""
        entry = self.cache.lookup(akey)
        return None if entry is None else os.path.join(entry, SO_NAME)

    def store(self, akey: str, so_path: str) -> str:
        """Store the `.so` at `so_path`; the path of the stored copy (another process's,
        if it stored the same key first)."""
        return os.path.join(self.cache.store(akey, {SO_NAME: so_path}), SO_NAME)

    def lookup_source(self, skey: str) -> str | None:
        try:
            with open(self._index_path(skey), encoding="ascii") as f:
                akey = f.read().strip()
        except (OSError, UnicodeDecodeError):
            return None
        return self.lookup(akey) if akey else None

    def link_source(self, skey: str, akey: str) -> None:
        try:
            paths.atomic_write(self._index_path(skey), akey.encode())
        except OSError:
            pass                    # the index only saves a parse; losing it is harmless

    def _index_path(self, skey: str) -> str:
        return os.path.join(self.dir, INDEX_DIR, skey)
