"""Errors of the EP API; each carries a TL09xx code and names the rank."""
from __future__ import annotations

from ..diagnostics import codes_ranks as codes
from ..runtime.ranks.errors import RankError


class RoutingError(RankError, ValueError):
    """Bad routing input (an expert id out of range, layout tensors that disagree),
    raised on every rank before any data moves."""

    def __init__(self, message: str, rank: int):
        super().__init__(message, rank, codes.BAD_ROUTING)


class BufferTooSmallError(RankError, ValueError):
    def __init__(self, message: str, rank: int):
        super().__init__(message, rank, codes.BUFFER_TOO_SMALL)


__all__ = ["RoutingError", "BufferTooSmallError"]
