"""Running the EP scenarios as ranks: under the shm launcher or mpiexec; every run must
leave nothing behind in /dev/shm."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKERS = os.path.join(HERE, "ep_workers.py")
TIMEOUT_S = "20"              # a wait gives up after this (the default is 60 s)


def leftovers() -> list:
    """Segments of runs started here, or of any run whose owner is gone."""
    from tilelang.runtime.ranks.shm import list_segments, owner_alive
    own = str(os.getpid())
    return [n for n in list_segments() if n.split("-")[1] == own or
            (n.split("-")[1].isdigit() and not owner_alive(int(n.split("-")[1])))]


def mpiexec() -> str | None:
    exe = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(exe):
        return exe
    return shutil.which("mpiexec")


def launch(argv: list, num_ranks: int, **env):
    from tilelang.runtime.ranks import launch as run
    result = run(argv, num_ranks, capture=True, env={"TILELANG_EP_TIMEOUT": TIMEOUT_S, **env})
    assert leftovers() == []
    return result


def run_shm(scenario: str, num_ranks: int, **env) -> list:
    """Each rank's output; fails the test unless every rank exited 0."""
    result = launch([WORKERS, scenario], num_ranks, **env)
    assert result.ok, report(result.returncodes, result.outputs)
    return result.outputs


# hydra's own limit on a run (MPIEXEC_TIMEOUT): past it mpiexec reports "APPLICATION TIMED
# OUT" and takes its proxy and ranks down with it. The test's limit on mpiexec comes later:
# killing mpiexec alone leaves the ranks running (they outlive a dead mpiexec or proxy).
MPI_RUN_LIMIT_S = 240


def run_mpi(argv: list, num_ranks: int, ranks_per_host: int) -> str:
    """`mpiexec -n num_ranks python *argv` on emulated hosts of `ranks_per_host` ranks;
    its output. Fails the test unless mpiexec exited 0 and left no segment behind.
    Its stdin is /dev/null whatever the test runner's is (mpiexec forwards its stdin to
    rank 0, and our ranks read none)."""
    pytest.importorskip("mpi4py")
    exe = mpiexec()
    if exe is None:
        pytest.skip("no mpiexec (pip install mpich)")
    env = dict(os.environ, TILELANG_EP_TIMEOUT=TIMEOUT_S, TILELANG_NUM_THREADS="1",
               TILELANG_EP_RANKS_PER_HOST=str(ranks_per_host),
               MPIEXEC_TIMEOUT=str(MPI_RUN_LIMIT_S))
    # restore_signals=False: mpiexec inherits this process's SIGPIPE disposition
    # (ignored), so a write of hydra's to a closed pipe or socket fails with an error
    # naming the write in its stderr instead of killing mpiexec silently (-13)
    proc = subprocess.run([exe, "-n", str(num_ranks), sys.executable, *argv], env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=MPI_RUN_LIMIT_S + 60, restore_signals=False)
    left = leftovers()
    assert proc.returncode == 0, mpiexec_report(proc) + f"\nleft in /dev/shm: {left}"
    assert left == []
    return proc.stdout


def mpiexec_report(proc) -> str:
    """What a failed mpiexec run says: its exit status, told apart from the ranks' (a
    rank killed by signal s makes mpiexec exit with s; mpiexec killed itself is < 0)."""
    rc = proc.returncode
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = "an unknown signal"
        head = f"mpiexec itself was killed by signal {-rc} ({name}), not a rank"
    else:
        head = f"mpiexec exited with {rc}"
    return f"{head}\n--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n" \
           f"{proc.stderr[-3000:]}"


def report(codes, outputs) -> str:
    lines = [f"exit codes {codes}"]
    for rank, out in enumerate(outputs):
        lines.append(f"--- rank {rank} ---\n{out[-3000:]}")
    return "\n".join(lines)
