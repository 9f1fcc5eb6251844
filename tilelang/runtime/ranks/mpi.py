"""The `mpi` transport: ranks started by `mpiexec -n N python script.py` (mpi4py with any
MPI, e.g. the `mpich` wheel). Ranks of one host share memory as under the launcher;
traffic between hosts goes through MPI.

Hosts are the machines MPI reports, unless TILELANG_EP_RANKS_PER_HOST=k assigns ranks
to emulated hosts of k consecutive ranks each — so "2 hosts x 2 ranks" runs on one
machine, with the shared-memory path inside each emulated host and MPI between them.
mpi4py is imported only here, when this transport is used.
"""
from __future__ import annotations

import os
import secrets

from .control import ControlBlock
from .errors import RankError
from .group import ProcessGroup
from .shm import clean_stale

RANKS_PER_HOST_ENV = "TILELANG_EP_RANKS_PER_HOST"


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError:
        raise RankError("the mpi transport needs mpi4py and an MPI library: pip install "
                        "mpi4py mpich (the project's test extras)") from None
    return MPI


def _hosts(comm, MPI) -> list:
    size = comm.Get_size()
    raw = os.environ.get(RANKS_PER_HOST_ENV)
    if raw:
        try:
            per = int(raw)
        except ValueError:
            per = 0
        if per < 1 or size % per:
            raise RankError(f"{RANKS_PER_HOST_ENV}={raw!r} must be a positive divisor of the "
                            f"{size} ranks")
        return [r // per for r in range(size)]
    names = comm.allgather(MPI.Get_processor_name())
    order = list(dict.fromkeys(names))
    return [order.index(n) for n in names]


def mpi_group(comm=None) -> ProcessGroup:
    """The process group of `comm` (default MPI.COMM_WORLD)."""
    from . import group as _group
    current = _group.current()
    if current is not None and current.transport == "mpi" and \
            (comm is None or current.comm is comm):
        return current
    MPI = _mpi()
    comm = MPI.COMM_WORLD if comm is None else comm
    rank, size = comm.Get_rank(), comm.Get_size()
    hosts = _hosts(comm, MPI)
    first = {h: hosts.index(h) for h in set(hosts)}
    if rank == 0:
        clean_stale()
    session = comm.bcast(f"{os.getpid()}-{secrets.token_hex(4)}" if rank == 0 else None)
    control = ControlBlock.create(session, hosts[rank]) if first[hosts[rank]] == rank else None
    comm.Barrier()
    if control is None:
        control = ControlBlock.attach(session, hosts[rank])
    comm.Barrier()
    if first[hosts[rank]] == rank:
        control.segment.unlink()          # mapped by the whole host: leave nothing behind
    group = ProcessGroup(rank, size, hosts, session, "mpi", control, comm)
    group.barrier("the start of the mpi transport")
    return group


__all__ = ["mpi_group", "RANKS_PER_HOST_ENV"]
