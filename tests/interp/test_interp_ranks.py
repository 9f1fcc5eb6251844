"""Multi-rank kernels in the reference interpreter: the TileScale-spelled primitives on
one rank (`run`) and on several at once (`run_ranks`, a thread per rank)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tilelang.frontend import parse_module
from tilelang.ir import interp

ROOT = Path(__file__).resolve().parents[2]

RING = """
import tilelang.language as T
W = T.dynamic("W")
R = T.dynamic("R")

@T.prim_func
def ring(row: T.Tensor((W,), "float32"), got: T.Tensor((W,), "float32"),
         flag: T.Tensor((1,), "int32"), bar: T.Tensor((R,), "int32"),
         count: T.Tensor((1,), "int32")):
    with T.Kernel(1) as bx:
        me = T.get_rank()
        n = T.get_num_ranks()
        T.put_block(T.address_of(row[0]), T.address_of(got[0]), W, dst_pe=(me + 1) % n)
        T.signal_op(T.address_of(flag[0]), 1, "add", (me + 1) % n)
        T.wait_ge(flag[0], 1)
        old = T.atomic_add(count[0], 5, return_prev=True)
        T.barrier_blocks(bar)
        count[0] = old + 100
"""


def _args(rank, ranks, width=6):
    return [np.full(width, rank + 1, np.float32), np.zeros(width, np.float32),
            np.zeros(1, np.int32), np.zeros(ranks, np.int32), np.zeros(1, np.int32)]


@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_a_ring_exchange_on_every_rank(ranks):
    module = parse_module(RING, "ring.tl")
    args = [_args(r, ranks) for r in range(ranks)]
    if ranks == 1:
        interp.run(module, "ring", args[0])
    else:
        interp.run_ranks(module, "ring", args, timeout=20)
    for r, (row, got, flag, bar, count) in enumerate(args):
        np.testing.assert_array_equal(got, np.full(6, (r - 1) % ranks + 1))
        assert flag[0] == 1 and count[0] == 100 and (bar == 1).all()


def test_a_wait_nothing_satisfies_is_reported():
    text = RING.replace("T.wait_ge(flag[0], 1)", "T.wait_ge(flag[0], 2)")
    with pytest.raises(interp.UndefinedBehavior) as info:
        interp.run_ranks(parse_module(text, "ring.tl"), "ring",
                         [_args(r, 2) for r in range(2)], timeout=1)
    assert info.value.kind == "deadlock"


def test_a_peer_outside_the_ranks_is_undefined():
    text = RING.replace("dst_pe=(me + 1) % n", "dst_pe=me + 1")
    with pytest.raises(interp.UndefinedBehavior) as info:
        interp.run(parse_module(text, "ring.tl"), "ring", _args(0, 1))
    assert info.value.kind == "bad-rank"


def test_the_ep_notify_kernel_fills_every_rank_s_matrix():
    """tilelang/ops/ep/dispatch.tl's notify: each rank puts its counts row into row
    `rank` of every peer on its host, then a barrier."""
    module = parse_module((ROOT / "tilelang/ops/ep/dispatch.tl").read_text(), "dispatch.tl")
    ranks, width = 3, 5
    rows = [np.arange(width, dtype=np.int32) + 10 * r for r in range(ranks)]
    args = [[rows[r], np.zeros((ranks, width), np.int32), np.ones(ranks, np.int32),
             np.zeros(ranks, np.int32)] for r in range(ranks)]
    interp.run_ranks(module, "notify", args, timeout=20)
    for r in range(ranks):
        np.testing.assert_array_equal(args[r][1], np.stack(rows))
