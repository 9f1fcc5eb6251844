"""The process group of a multi-rank run: who I am, who shares my host, and the host-side
collectives (barrier, all-gather) the runtime needs around kernel launches.

`ProcessGroup.rank()` / `.size()` follow torch.distributed's spelling, so DeepEP-style
code that asks its group for them runs unchanged. Ranks on one host share memory through
their symmetric heaps (`heap()`); ranks on different hosts (MPI only) exchange through
the group's `comm`.
"""
from __future__ import annotations

import os
import sys

from .control import KIND_RAISED, ControlBlock
from .errors import RankError
from .wait import wait_until

_current: "ProcessGroup | None" = None


class ProcessGroup:
    """`hosts[r]` is the host of rank r; ranks of one host are numbered consecutively
    in `local_ranks`. `transport` is "shm" (one host, the launcher's) or "mpi"."""

    def __init__(self, rank: int, size: int, hosts: list, session: str, transport: str,
                 control: ControlBlock | None, comm=None):
        self._rank, self._size = rank, size
        self.hosts = list(hosts)
        self.session = session
        self.transport = transport
        self.comm = comm
        self.control = control
        self.host = self.hosts[rank]
        self.local_ranks = [r for r in range(size) if self.hosts[r] == self.host]
        self.local_rank = self.local_ranks.index(rank)
        self._epoch = 0
        self._heaps = 0
        if control is not None:
            control.set_pid(self.local_rank)

    # -- torch.distributed-style queries ------------------------------------------------

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._size

    @property
    def num_hosts(self) -> int:
        return len(set(self.hosts))

    def is_local(self, peer: int) -> bool:
        """Whether `peer` shares this host (its heap is mapped here)."""
        return self.hosts[peer] == self.host

    def __repr__(self) -> str:
        return (f"<tilelang ProcessGroup rank {self._rank} of {self._size}, {self.transport}, "
                f"host {self.host} of {self.num_hosts}>")

    # -- failure ------------------------------------------------------------------------

    def abort_reason(self) -> str | None:
        return self.control.abort_reason() if self.control is not None else None

    def abort(self) -> None:
        """Tell the other ranks of this host that this rank failed (their waits stop)."""
        if self.control is not None:
            self.control.abort(self._rank, KIND_RAISED)

    def _dead_peer(self) -> str | None:
        from .shm import owner_alive
        for i, r in enumerate(self.local_ranks):
            pid = self.control.pid(i)
            if pid and not owner_alive(pid):
                return f"rank {r} (pid {pid}) is gone"
        return None

    # -- host-side collectives ----------------------------------------------------------

    def local_barrier(self, what: str = "a barrier") -> None:
        """Every rank of this host has arrived."""
        if self.control is None or len(self.local_ranks) == 1:
            return
        self._epoch += 1
        epoch, n = self._epoch, len(self.local_ranks)
        self.control.arrive(self.local_rank, epoch)
        epochs = self.control.epochs(n)
        wait_until(lambda: bool((epochs >= epoch).all()),
                   f"the other ranks of the host at {what}", self._rank,
                   self.abort_reason, self._dead_peer)

    def barrier(self, what: str = "a barrier") -> None:
        self.local_barrier(what)
        if self.comm is not None and self.num_hosts > 1:
            self.comm.Barrier()
            self.local_barrier(what)

    def allgather(self, obj) -> list:
        """Every rank's `obj` (small, picklable), in rank order."""
        if self.comm is not None:
            return self.comm.allgather(obj)
        if self._size == 1:
            return [obj]
        self.control.put(self.local_rank, obj)
        self.local_barrier("an all-gather")
        out = [self.control.get(i) for i in range(len(self.local_ranks))]
        self.local_barrier("an all-gather")
        return out

    # -- symmetric memory ---------------------------------------------------------------

    def heap(self, nbytes: int):
        """A new symmetric heap of `nbytes` per rank (collective: every rank calls it,
        in the same order)."""
        from .heap import SymmetricHeap
        self._heaps += 1
        return SymmetricHeap(self, nbytes, f"heap{self._heaps}")

    def close(self) -> None:
        global _current
        if self.control is not None:
            self.control.close()
            self.control = None
        if _current is self:
            _current = None


def single_process_group() -> ProcessGroup:
    """Rank 0 of 1: a plain `python script.py`, nothing to share."""
    return ProcessGroup(0, 1, [0], f"{os.getpid()}-solo", "shm", None)


def from_launcher_env() -> ProcessGroup | None:
    """The group `tilec launch` / `launch()` started this process in, if any."""
    env = os.environ
    if "TILELANG_RANK" not in env:
        return None
    try:
        rank, size = int(env["TILELANG_RANK"]), int(env["TILELANG_WORLD_SIZE"])
        session = env["TILELANG_SESSION"]
    except (KeyError, ValueError) as e:
        raise RankError(f"the launcher's environment is incomplete or malformed ({e}); "
                        f"start ranks with `tilec launch -n N script.py`") from None
    control = ControlBlock.attach(session, 0)
    return ProcessGroup(rank, size, [0] * size, session, "shm", control)


def init(transport: str | None = None) -> ProcessGroup:
    """The process group of this launch (once per process; later calls return it).
    `transport`: None picks "shm" under `tilec launch`, "mpi" under mpiexec, else a
    single-rank group; "shm" or "mpi" insists."""
    global _current
    if _current is not None:
        return _current
    if transport not in (None, "shm", "mpi"):
        raise ValueError(f"transport must be 'shm' or 'mpi', not {transport!r}")
    group = None
    if transport in (None, "shm"):
        group = from_launcher_env()
        if group is None and transport == "shm":
            raise RankError("transport 'shm' needs ranks started by `tilec launch -n N "
                            "script.py` (or tilelang.runtime.ranks.launch)")
    if group is None and (transport == "mpi" or _under_mpiexec()):
        from .mpi import mpi_group
        group = mpi_group()
    if group is None:
        group = single_process_group()
    _current = group
    _install_abort_hook(group)
    return group


def current() -> ProcessGroup | None:
    return _current


def _under_mpiexec() -> bool:
    return any(k in os.environ for k in ("PMI_RANK", "PMI_SIZE", "PMIX_RANK",
                                         "OMPI_COMM_WORLD_RANK", "HYDRA_CONTROL_FD"))


def _install_abort_hook(group: ProcessGroup) -> None:
    """An uncaught exception in a rank aborts the run for its host's other ranks, whose
    waits then stop at once instead of running into the timeout."""
    previous = sys.excepthook

    def hook(kind, value, tb):
        try:
            group.abort()
        finally:
            previous(kind, value, tb)

    sys.excepthook = hook


__all__ = ["ProcessGroup", "init", "current", "single_process_group", "from_launcher_env"]
