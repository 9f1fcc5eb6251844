"""DeepEP's intranode test, ported call for call (intranode_worker.py), on 2 ranks
sharing memory; once as DeepEP writes it and once with -1 slots in topk_idx."""
import os

import pytest

from ep_support import HERE, launch, report

WORKER = os.path.join(HERE, "intranode_worker.py")


@pytest.mark.parametrize("variant", [[], ["minus_one"]], ids=["deepep", "minus_one"])
def test_deepep_intranode_recipe(ep_kernels, variant):
    result = launch([WORKER, *variant], 2)
    assert result.ok, report(result.returncodes, result.outputs)
    assert all(f"RANK {r} OK" in out for r, out in enumerate(result.outputs))
