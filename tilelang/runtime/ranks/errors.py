"""Errors of multi-rank runs: every one names the rank that raises it."""
from __future__ import annotations


class RankError(RuntimeError):
    """A multi-rank operation failed (base class). `.rank` is the raising rank."""

    def __init__(self, message: str, rank: int | None = None, code: str | None = None):
        super().__init__(message)
        self.rank = rank
        self.code = code


class RankTimeoutError(RankError, TimeoutError):
    """A wait (a kernel's T.wait_*, a barrier) gave up after the timeout."""


class RankAbortedError(RankError):
    """Another rank failed or died, so this one stopped waiting for it."""


class SymmetricHeapError(RankError, ValueError):
    """A symmetric allocation or argument is wrong (too big, not in a heap, asymmetric)."""


class PeerAccessError(RankError, IndexError):
    """A kernel named a peer rank it cannot reach, or reached past a tensor's end."""


__all__ = ["RankError", "RankTimeoutError", "RankAbortedError", "SymmetricHeapError",
           "PeerAccessError"]
