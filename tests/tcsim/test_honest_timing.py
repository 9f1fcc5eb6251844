"""Timing honesty: scalar loads overlap unless a later instruction needs their value; a
tensor whose values steer the program cannot be passed as a bare shape; padding is not
counted as achieved work."""
from __future__ import annotations

import numpy as np
import pytest

from tilelang.runtime.tcsim import run as simulate
from tilelang.targets.tcsim.config import TINY

from .progs import program


def run(program, *args, **kwargs):
    """The figures below are the small test machine's."""
    kwargs.setdefault("config", "tiny")
    return simulate(program, *args, **kwargs)

LAT = TINY.dma_latency          # 20 on tiny
C = TINY.scalar_cycles          # 1


def _loads(body: str):
    return program(body + "\nHALT", params=["S tensor int32 [4]"])


def test_independent_scalar_loads_overlap():
    # two loads issue back to back; the ADD waits for the later one only
    r = run(_loads("LDG r5, S[0]\nLDG r6, S[1]\nADD r7, r5, r6"),
            np.arange(4, dtype=np.int32), mode="timing")
    assert r.cycles == (C + LAT) + C


def test_a_dependent_scalar_load_waits_for_the_first():
    # the second load's index is the first one's value: a chain of two latencies
    r = run(_loads("LDG r5, S[0]\nLDG r6, S[r5]\nADD r7, r5, r6"),
            np.arange(4, dtype=np.int32), mode="timing")
    assert r.cycles == 2 * LAT + C


def test_loads_no_one_reads_cost_one_issue_slot_each():
    r = run(_loads("LDG r5, S[0]\nLDG r6, S[1]\nLDG r7, S[2]"),
            np.arange(4, dtype=np.int32), mode="timing")
    assert r.cycles == 3 * C


def test_a_shape_only_tensor_read_by_value_is_an_error():
    with pytest.raises(TypeError, match=r"argument 'S': the program reads its values") as e:
        run(_loads("LDG r5, S[0]"), ((4,), "int32"), mode="timing")
    assert e.value.code == "TL0602" and e.value.argument == "S"      # the binder's


def test_shape_only_tensors_the_program_only_streams_are_fine():
    p = program("DMA.LD X, A[0] box=8\nHALT", params=["A tensor float32 [8]"],
                bufs=["X SMEM float32 [8]"])
    assert run(p, ((8,), "float32"), mode="timing").cycles > 0


# ----------------------------------------------------------------------------- useful work

def _padded_mma(rows: int):
    """A 64x64 A tile of which a DMA fills `rows` rows from a tensor of that many rows
    (the rest is padding), times a full B tile."""
    return program(f"""
        DMA.LD A_s, A[0, 0] box=64x64 signal=s[0]
        DMA.LD B_s, B[0, 0] box=64x64 signal=s[0]
        SEM.INIT s[0], 2
        ACC.ZERO C
        MMA C, A_s, B_s wait=s[0]@0 signal=t[0]
        DMA.ST O[0, 0], C box=64x64 wait=t[0]@0
        HALT""", params=[f"A tensor bfloat16 [{rows}, 64]", "B tensor bfloat16 [64, 64]",
                         f"O tensor float32 [{rows}, 64]"],
        bufs=["A_s SMEM bfloat16 [64, 64]", "B_s SMEM bfloat16 [64, 64]",
              "C RF float32 [64, 64]"], sems=["s 1", "t 1"])


@pytest.mark.parametrize("rows", [1, 5, 64])
def test_padding_rows_are_not_useful_flops(rows):
    r = run(_padded_mma(rows), ((rows, 64), "bfloat16"), ((64, 64), "bfloat16"),
            ((rows, 64), "float32"), mode="timing")
    assert r.issued_flops == 2 * 64 * 64 * 64
    assert r.flops == 2 * rows * 64 * 64
    assert r.tflops == pytest.approx(r.flops / r.time_s / 1e12)
    issued_util = r.issued_flops / (TINY.flops_per_clk("bfloat16") * TINY.cores) / r.cycles
    assert r.mma_utilization == pytest.approx(issued_util * rows / 64)
    assert ("padding" in r.summary()) == (rows < 64)


def test_decode_attention_counts_its_one_query_row():
    """examples/flash_attention.tl at SEQ_Q=1: a 64-row query tile holds one query, and
    the valid rows follow S, the softmax and P into the second MMA."""
    from .examples_tcsim import artifact
    art = artifact("flash_attention", BLOCK_N=32)
    shapes = [((1, 2, 1, 64), "float32"), ((1, 2, 96, 64), "float32"),
              ((1, 2, 96, 64), "float32"), ((1, 2, 1, 64), "float32")]
    r = run(art, *shapes, mode="timing")
    useful = 2 * (2 * 1 * 96 * 64) * 2                  # QK^T and PV, one row, 2 heads
    assert r.flops == useful
    assert r.issued_flops == 64 * useful
