"""DeepEP's intranode test recipe (tests/legacy/test_intranode.py) on 2 and 4 ranks
sharing memory, and on 2 emulated hosts x 2 ranks through MPI; the faults (a rank dying
in the middle of a dispatch, a bad expert id on one rank)."""
import pytest

from ep_support import ROOT, WORKERS, launch, run_mpi, run_shm


@pytest.mark.parametrize("num_ranks", [2, 4])
def test_recipe_shm(ep_kernels, num_ranks):
    outputs = run_shm("recipe", num_ranks)
    assert all(f"RANK {r} OK" in out for r, out in enumerate(outputs))


def test_recipe_shm_wide_ragged_rows(ep_kernels):
    outputs = run_shm("recipe_wide", 2)
    assert all(f"RANK {r} OK" in out for r, out in enumerate(outputs))


def test_recipe_mpi_two_hosts_of_two(ep_kernels):
    out = run_mpi([WORKERS, "recipe"], 4, ranks_per_host=2)
    assert all(f"RANK {r} OK" in out for r in range(4))


def test_bad_expert_id_fails_every_rank_before_data_moves(ep_kernels):
    outputs = run_shm("bad_expert", 2)
    for out in outputs:
        assert "topk_idx of rank 1 holds 1 expert id(s) outside -1..7 (first at token 5)" \
            in out


def test_buffer_too_small_fails_every_rank_in_step(ep_kernels):
    outputs = run_shm("small_heap", 2)
    for out in outputs:
        assert out.count("RAISED") == 6 and out.count("TL0910") == 6, out


def test_rank_dying_mid_dispatch_stops_the_others(ep_kernels):
    result = launch([WORKERS, "dies"], 3)
    assert result.returncodes[1] == 17
    assert result.returncodes[0] == 0 and result.returncodes[2] == 0, result.outputs
    for r in (0, 2):
        out = result.outputs[r]
        assert "RankAbortedError TL0906" in out and "rank 1 exited with status 17" in out
        seconds = float(out.split("RAISED after ")[1].split(" s")[0])
        assert seconds < 20                   # well within the timeout: no hang


def test_primitives_ring_three_ranks(ep_kernels):
    outputs = run_shm("ring", 3)
    assert all(f"RANK {r} OK" in out for r, out in enumerate(outputs))


@pytest.mark.parametrize("num_ranks", [2, 4])
def test_moe_layer_example(ep_kernels, num_ranks):
    """examples/moe_layer.py: dispatch -> grouped T.gemm experts -> combine == numpy."""
    import os
    result = launch([os.path.join(ROOT, "examples", "moe_layer.py")], num_ranks)
    assert result.ok, result.outputs
    assert all(f"rank {r}/{num_ranks}:" in out and "PASS" in out
               for r, out in enumerate(result.outputs))
