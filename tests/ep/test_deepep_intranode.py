"""DeepEP's intranode test, ported call for call (intranode_worker.py), on 2 and 4 ranks
sharing memory, as DeepEP writes it and with -1 slots in topk_idx; and on 2
emulated hosts x 2 ranks through MPI, where the handle reads as DeepEP's internode one
and combine adds test_internode's bias pair."""
import os
import subprocess
import sys

import pytest

from ep_support import HERE, TIMEOUT_S, launch, leftovers, mpiexec, report

WORKER = os.path.join(HERE, "intranode_worker.py")


@pytest.mark.parametrize("variant, num_ranks", [([], 2), (["minus_one"], 2), ([], 4)],
                         ids=["deepep-2", "minus_one-2", "deepep-4"])
def test_deepep_intranode_recipe(ep_kernels, variant, num_ranks):
    result = launch([WORKER, *variant], num_ranks)
    assert result.ok, report(result.returncodes, result.outputs)
    assert all(f"RANK {r} OK" in out for r, out in enumerate(result.outputs))


def test_deepep_recipe_two_hosts_of_two(ep_kernels):
    pytest.importorskip("mpi4py")
    exe = mpiexec()
    if exe is None:
        pytest.skip("no mpiexec (pip install mpich)")
    env = dict(os.environ, TILELANG_EP_TIMEOUT=TIMEOUT_S, TILELANG_NUM_THREADS="1",
               TILELANG_EP_RANKS_PER_HOST="2")
    proc = subprocess.run([exe, "-n", "4", sys.executable, WORKER], env=env,
                          capture_output=True, text=True, timeout=300)
    assert leftovers() == []
    assert proc.returncode == 0, report([proc.returncode], [proc.stdout + proc.stderr])
    assert all(f"RANK {r} OK" in proc.stdout for r in range(4))
