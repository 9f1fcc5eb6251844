"""The control block of one host: a small shared segment every rank of the host maps.

Words (int64): ABORT (0, or 1 + the rank that failed), ABORT_KIND, ABORT_STATUS; the
pid of each local rank; one barrier epoch per local rank (a cache line each); then an
exchange area per local rank for small host-side all-gathers. Each word has a single
writer (a rank writes only its own slots; the launcher and a failing rank write ABORT),
so plain stores suffice on the host side; kernels read ABORT with atomic loads.
"""
from __future__ import annotations

import os
import pickle

import numpy as np

from .errors import RankError
from .shm import Segment, segment_name

MAX_LOCAL_RANKS = 64
ABORT, ABORT_KIND, ABORT_STATUS = 0, 1, 2
KIND_EXITED, KIND_RAISED, KIND_KILLED = 1, 2, 3
_PIDS = 64
_EPOCHS = _PIDS + MAX_LOCAL_RANKS
_EPOCH_STRIDE = 8                                   # words: one cache line per rank
_EXCHANGE = (_EPOCHS + MAX_LOCAL_RANKS * _EPOCH_STRIDE) * 8
SLOT_BYTES = 1 << 16
NBYTES = _EXCHANGE + MAX_LOCAL_RANKS * SLOT_BYTES


def control_name(session: str, host: int) -> str:
    return segment_name(session, f"h{host}", "ctl")


class ControlBlock:
    def __init__(self, segment: Segment):
        self.segment = segment
        self.words = segment.array[:_EXCHANGE].view(np.int64)

    @classmethod
    def create(cls, session: str, host: int = 0) -> "ControlBlock":
        return cls(Segment(control_name(session, host), NBYTES, create=True))

    @classmethod
    def attach(cls, session: str, host: int = 0) -> "ControlBlock":
        return cls(Segment(control_name(session, host), 0, create=False))

    @property
    def abort_address(self) -> int:
        return self.segment.address + ABORT * 8

    # -- abort ---------------------------------------------------------------------------

    def abort(self, rank: int, kind: int, status: int = 0) -> None:
        if self.words[ABORT] == 0:
            self.words[ABORT_KIND] = kind
            self.words[ABORT_STATUS] = status
            self.words[ABORT] = rank + 1

    def abort_reason(self) -> str | None:
        who = int(self.words[ABORT])
        if who == 0:
            return None
        kind, status = int(self.words[ABORT_KIND]), int(self.words[ABORT_STATUS])
        if kind == KIND_EXITED:
            return f"rank {who - 1} exited with status {status}"
        if kind == KIND_KILLED:
            return f"rank {who - 1} was killed by signal {status}"
        return f"rank {who - 1} failed with an error"

    # -- pids and epochs -----------------------------------------------------------------

    def set_pid(self, local_rank: int) -> None:
        self.words[_PIDS + local_rank] = os.getpid()

    def pid(self, local_rank: int) -> int:
        return int(self.words[_PIDS + local_rank])

    def epochs(self, n: int) -> np.ndarray:
        return self.words[_EPOCHS:_EPOCHS + n * _EPOCH_STRIDE:_EPOCH_STRIDE]

    def arrive(self, local_rank: int, epoch: int) -> None:
        self.words[_EPOCHS + local_rank * _EPOCH_STRIDE] = epoch

    # -- exchange ------------------------------------------------------------------------

    def put(self, local_rank: int, obj) -> None:
        data = pickle.dumps(obj)
        if len(data) + 8 > SLOT_BYTES:
            raise RankError(f"host exchange of {len(data)} bytes exceeds {SLOT_BYTES - 8}")
        start = _EXCHANGE + local_rank * SLOT_BYTES
        arr = self.segment.array
        arr[start:start + 8] = np.frombuffer(len(data).to_bytes(8, "little"), np.uint8)
        arr[start + 8:start + 8 + len(data)] = np.frombuffer(data, np.uint8)

    def get(self, local_rank: int):
        start = _EXCHANGE + local_rank * SLOT_BYTES
        arr = self.segment.array
        n = int.from_bytes(arr[start:start + 8].tobytes(), "little")
        return pickle.loads(arr[start + 8:start + 8 + n].tobytes())

    def close(self) -> None:
        self.words = None
        self.segment.close()


__all__ = ["ControlBlock", "control_name", "MAX_LOCAL_RANKS", "KIND_EXITED", "KIND_RAISED",
           "KIND_KILLED"]
