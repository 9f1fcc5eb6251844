"""Dispatch with a placement: logical experts routed to EPLB's replicas through the shm
collectives (2 and 4 ranks), and ExpertPlacement's mapping on its own."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tilelang.ep.errors_eplb import EPError
from tilelang.ep.placement import ExpertPlacement

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "placement_worker.py")


def launch(ranks: int, seed: int) -> list:
    from tilelang.runtime.ranks import launch as run
    result = run([WORKER, str(seed)], ranks, capture=True,
                 env={"TILELANG_EP_TIMEOUT": "30", "TILELANG_NUM_THREADS": "1"})
    assert result.ok, "\n".join(f"rank {r}: {o[-2000:]}" for r, o in enumerate(result.outputs))
    return json.loads(result.outputs[0].strip().splitlines()[-1])


@pytest.mark.parametrize("ranks", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_a_trace_runs_with_and_without_eplb_placement(ranks):
    seen = launch(ranks, seed=ranks)
    for rank in seen:
        for name in ("contiguous", "eplb"):
            assert rank[name] == {**rank[name], "ok": True, "counts_ok": True,
                                  "logical_ok": True}, (name, rank)
    # the same routed pairs either way; EPLB spreads them more evenly over the ranks
    work = {n: [r[n]["expert_rows"] for r in seen] for n in ("contiguous", "eplb")}
    assert sum(work["contiguous"]) == sum(work["eplb"])
    assert max(work["eplb"]) < max(work["contiguous"])


def test_physical_topk_takes_replicas_of_the_same_expert():
    load = np.array([100.0, 1, 1, 1, 50, 1, 1, 1])
    pl = ExpertPlacement.balanced(load, num_ranks=4, num_redundant=4)
    assert pl.num_physical == 12 and pl.logcnt.sum() == 12
    logical = np.random.default_rng(0).integers(0, 8, (500, 2))
    phys = pl.physical_topk(logical, rank=3)
    assert (pl.phy2log[phys] == logical).all()
    hot = np.bincount(phys[logical == 0], minlength=12)[pl.log2phy[0, :pl.logcnt[0]]]
    assert hot.max() - hot.min() <= 1                      # spread over the replicas
    per_rank = pl.num_physical // 4
    local = phys - pl.expert_rank[phys] * per_rank
    for r in range(4):
        mask = pl.expert_rank[phys] == r
        assert (pl.logical_of(r, local[mask]) == logical[mask]).all()
    assert (pl.logical_of(0, np.array([-1])) == -1).all()


def test_contiguous_and_install():
    pl = ExpertPlacement.contiguous(8, 4)
    assert pl.expert_rank.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert (pl.physical_topk(np.array([[0, 7]]), 2) == [[0, 7]]).all()

    class FakeBuffer:
        def set_expert_placement(self, expert_rank):
            self.placement = list(expert_rank)
    buf = FakeBuffer()
    pl.install(buf)
    assert buf.placement == [0, 0, 1, 1, 2, 2, 3, 3]


def test_bad_input():
    pl = ExpertPlacement.contiguous(8, 4)
    with pytest.raises(EPError, match="outside 0..7"):
        pl.physical_topk(np.array([[8]]), 0)
    with pytest.raises(EPError, match="one layer"):
        ExpertPlacement.balanced(np.ones((2, 8)), 4, 4)
