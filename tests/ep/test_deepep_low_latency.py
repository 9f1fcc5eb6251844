"""DeepEP's low-latency test, ported (low_latency_worker.py): 2 and 4 ranks sharing
memory, and under mpiexec on one host and across 2 emulated hosts (a few seconds
each)."""
import os
import subprocess
import sys

import pytest

from ep_support import HERE, TIMEOUT_S, launch, leftovers, mpiexec, report

WORKER = os.path.join(HERE, "low_latency_worker.py")


@pytest.mark.parametrize("num_ranks", [2, 4])
def test_deepep_low_latency_recipe(ep_kernels, num_ranks):
    result = launch([WORKER], num_ranks)
    assert result.ok, report(result.returncodes, result.outputs)
    assert all(f"RANK {r} OK" in out for r, out in enumerate(result.outputs))


@pytest.mark.parametrize("num_ranks, ranks_per_host", [(2, 2), (2, 1), (4, 2)],
                         ids=["one-host-of-2", "2-hosts-of-1", "2-hosts-of-2"])
def test_deepep_low_latency_recipe_mpi(ep_kernels, num_ranks, ranks_per_host):
    """Under mpiexec: ranks on one host move rows by address; between the (emulated)
    hosts MPI carries them."""
    pytest.importorskip("mpi4py")
    exe = mpiexec()
    if exe is None:
        pytest.skip("no mpiexec (pip install mpich)")
    env = dict(os.environ, TILELANG_EP_TIMEOUT=TIMEOUT_S, TILELANG_NUM_THREADS="1",
               TILELANG_EP_RANKS_PER_HOST=str(ranks_per_host))
    proc = subprocess.run([exe, "-n", str(num_ranks), sys.executable, WORKER], env=env,
                          capture_output=True, text=True, timeout=300)
    assert leftovers() == []
    assert proc.returncode == 0, report([proc.returncode], [proc.stdout + proc.stderr])
    hosts = num_ranks // ranks_per_host
    assert all(f"RANK {r} OK on {hosts} host(s)" in proc.stdout for r in range(num_ranks))
