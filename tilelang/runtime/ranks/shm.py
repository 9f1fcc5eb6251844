"""Shared-memory segments in /dev/shm, named `tilelang-<owner pid>-<tag>-...`.

Every segment carries the pid of the process that owns the run (the launcher, or the
first rank of a host under MPI), so that `clean_stale()` can remove what a crashed run
left behind: a segment whose owner is gone. Ranks also unlink their segments as soon
as every peer has mapped them, so a run killed later leaves nothing behind.
"""
from __future__ import annotations

import mmap
import os

import numpy as np

PREFIX = "tilelang-"
SHM_DIR = "/dev/shm"


class Segment:
    """One mapped segment: `.array` (uint8 numpy view), `.address`, `.nbytes`."""

    def __init__(self, name: str, nbytes: int, create: bool):
        self.name = name
        self.path = os.path.join(SHM_DIR, name)
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        self.fd = os.open(self.path, flags, 0o600)
        try:
            if create:
                os.ftruncate(self.fd, nbytes)
            else:
                nbytes = os.fstat(self.fd).st_size
            self.nbytes = nbytes
            self._map = mmap.mmap(self.fd, max(nbytes, 1))
        except BaseException:
            os.close(self.fd)
            if create:
                _unlink(self.path)
            raise
        self.array = np.frombuffer(self._map, np.uint8, count=nbytes)
        self.address = self.array.ctypes.data if nbytes else 0

    def commit(self, nbytes: int) -> None:
        """Back the first `nbytes` with memory now, so that running out of /dev/shm is
        an OSError here rather than a SIGBUS in a kernel writing the page."""
        if nbytes > 0:
            os.posix_fallocate(self.fd, 0, min(nbytes, self.nbytes))

    def unlink(self) -> None:
        _unlink(self.path)

    def close(self) -> None:
        """Drop the mapping (views of it must be gone) and the descriptor."""
        self.array = None
        try:
            self._map.close()
        except BufferError:
            pass        # a numpy view still exists: the mapping dies with it
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def segment_name(session: str, *parts) -> str:
    return PREFIX + "-".join([session, *map(str, parts)])


def owner_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def list_segments(session: str | None = None) -> list[str]:
    """Names of tilelang segments in /dev/shm (of one session when given)."""
    try:
        names = os.listdir(SHM_DIR)
    except FileNotFoundError:
        return []
    want = PREFIX + (session + "-" if session else "")
    return sorted(n for n in names if n.startswith(want))


def clean_stale() -> list[str]:
    """Remove segments whose owning process is gone (left by a crashed run)."""
    removed = []
    for name in list_segments():
        owner = name[len(PREFIX):].split("-", 1)[0]
        if owner.isdigit() and not owner_alive(int(owner)):
            _unlink(os.path.join(SHM_DIR, name))
            removed.append(name)
    return removed


def remove_session(session: str) -> None:
    for name in list_segments(session):
        _unlink(os.path.join(SHM_DIR, name))


__all__ = ["Segment", "segment_name", "list_segments", "clean_stale", "remove_session",
           "owner_alive", "PREFIX", "SHM_DIR"]
