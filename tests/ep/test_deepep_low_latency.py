"""DeepEP's low-latency test, ported (low_latency_worker.py): 2 and 4 ranks sharing
memory, and 2 ranks under mpiexec (a few seconds each)."""
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


def test_deepep_low_latency_recipe_mpi(ep_kernels):
    pytest.importorskip("mpi4py")
    exe = mpiexec()
    if exe is None:
        pytest.skip("no mpiexec (pip install mpich)")
    env = dict(os.environ, TILELANG_EP_TIMEOUT=TIMEOUT_S, TILELANG_NUM_THREADS="1")
    proc = subprocess.run([exe, "-n", "2", sys.executable, WORKER], env=env,
                          capture_output=True, text=True, timeout=300)
    assert leftovers() == []
    assert proc.returncode == 0, report([proc.returncode], [proc.stdout + proc.stderr])
    assert all(f"RANK {r} OK" in proc.stdout for r in range(2))
