"""DeepEP's low-latency test, ported (low_latency_worker.py): 2 and 4 ranks sharing
memory, and under mpiexec on one host and across 2 emulated hosts (a few seconds
each)."""
import os

import pytest

from ep_support import HERE, launch, report, run_mpi

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
    out = run_mpi([WORKER], num_ranks, ranks_per_host)
    hosts = num_ranks // ranks_per_host
    assert all(f"RANK {r} OK on {hosts} host(s)" in out for r in range(num_ranks))
