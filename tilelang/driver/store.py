"""The driver's view of the disk cache: artifact key -> the loadable artifact file.

The runtime's `Cache` owns the on-disk format (checksums, atomic stores, concurrent
writers); this adds the source index, small files mapping the key of an exact `.tl` text
to the artifact key, so a warm start need not parse.
"""
from __future__ import annotations

import os


INDEX_DIR = "index"


class ArtifactStore:
    def __init__(self, directory: str, target):
        from ..runtime.cache import Cache
        self.dir = directory
        self.cache = Cache(directory, enabled=True)     # the driver decided to use it
        # `kernel.so`: the loader sees the suffix it expects
        self.name = "kernel" + target.kind(target.default_kind).suffix

    def lookup(self, akey: str) -> str | None:
        """The path of the cached artifact, or None (a corrupt entry counts as missing)."""
        entry = self.cache.lookup(akey)
        return None if entry is None else os.path.join(entry, self.name)

    def store(self, akey: str, artifact: bytes) -> str:
        """Store the artifact; the path of the stored copy (another process's, if it
        stored the same key first)."""
        return os.path.join(self.cache.store(akey, {self.name: artifact}), self.name)

    def lookup_source(self, skey: str) -> str | None:
        try:
            with open(self._index_path(skey), encoding="ascii") as f:
                akey = f.read().strip()
        except (OSError, UnicodeDecodeError):
            return None
        return self.lookup(akey) if akey else None

    def link_source(self, skey: str, akey: str) -> None:
        try:
            from ..runtime.cache import atomic_write
            atomic_write(self._index_path(skey), akey.encode())
        except OSError:
            pass                    # the index only saves a parse; losing it is harmless

    def _index_path(self, skey: str) -> str:
        return os.path.join(self.dir, INDEX_DIR, skey)
