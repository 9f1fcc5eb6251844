"""DeepEP's intranode test, ported call for call (intranode_worker.py), on 2 and 4 ranks
sharing memory, as DeepEP writes it and with -1 slots in topk_idx; and on 2
emulated hosts x 2 ranks through MPI, where the handle reads as DeepEP's internode one
and combine adds test_internode's bias pair."""
import os

import pytest

from ep_support import HERE, launch, report, run_mpi

WORKER = os.path.join(HERE, "intranode_worker.py")


@pytest.mark.parametrize("variant, num_ranks", [([], 2), (["minus_one"], 2), ([], 4)],
                         ids=["deepep-2", "minus_one-2", "deepep-4"])
def test_deepep_intranode_recipe(ep_kernels, variant, num_ranks):
    result = launch([WORKER, *variant], num_ranks)
    assert result.ok, report(result.returncodes, result.outputs)
    assert all(f"RANK {r} OK" in out for r, out in enumerate(result.outputs))


def test_deepep_recipe_two_hosts_of_two(ep_kernels):
    out = run_mpi([WORKER], 4, ranks_per_host=2)
    assert all(f"RANK {r} OK" in out for r in range(4))
