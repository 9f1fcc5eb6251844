"""Multi-rank runs: the process group, the shared-memory symmetric heap, the launcher,
and the rank table through which kernels reach their peers (MPI between hosts).

Like the rest of the runtime it imports nothing of the compiler; mpi4py loads only when
the `mpi` transport is used.
"""
from .errors import RankAbortedError, RankError, RankTimeoutError, SymmetricHeapError
from .group import ProcessGroup, current, init

__all__ = ["ProcessGroup", "init", "current", "RankError", "RankTimeoutError",
           "RankAbortedError", "SymmetricHeapError", "launch", "LaunchResult",
           "SymmetricHeap"]


def __getattr__(name):
    if name in ("launch", "LaunchResult"):
        from . import launcher
        return getattr(launcher, name)
    if name == "SymmetricHeap":
        from .heap import SymmetricHeap
        return SymmetricHeap
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
