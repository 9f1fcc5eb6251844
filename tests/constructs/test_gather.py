"""Indirect (gather) regions: a T.copy whose start is loaded from another tensor
(`KV[block_table[b, i], 0:rows, 0:D]`), on the CPU and on tcsim, where it is a DMA
marked `gather=1` whose bytes the report counts."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang
from tilelang.frontend import parse_module
from tilelang.ir import Copy, Load, walk
from tilelang.ir.printer import print_module

from .paged import BLK, D, GATHER_SUM, paged_inputs, reference_sums


def test_the_start_is_a_load_of_the_block_table():
    module = parse_module(GATHER_SUM, "g.tl")
    (copy,) = [n for n in walk(module) if isinstance(n, Copy) and n.src.buffer.name == "KV"]
    start = copy.src.starts[0]
    assert isinstance(start, Load) and start.buffer.name == "block_table"
    assert "T.copy(KV[block_table[bx, i], 0:rows, 0:32], KV_s)" in print_module(module)
    assert parse_module(print_module(module), "printed.tl") == module


@pytest.mark.parametrize("target", ["cpu", "tcsim:tiny"])
def test_gather_sum_matches_numpy(target):
    k = tilelang.compile(GATHER_SUM, target=target)
    kv, table, lens = paged_inputs([1, 8, 9, 30, 0, 17])
    out = np.full((len(lens), D), np.nan, np.float32)
    k(kv, table, lens, out)
    np.testing.assert_allclose(out, reference_sums(kv, table, lens), rtol=1e-5, atol=1e-5)


@settings(max_examples=20, deadline=None)
@given(lens=st.lists(st.integers(0, 5 * BLK), min_size=1, max_size=6),
       dtype=st.sampled_from(["float32", "float16", "bfloat16"]), seed=st.integers(0, 99))
def test_gather_sum_property(lens, dtype, seed):
    from tilelang import dtypes
    k = tilelang.compile(GATHER_SUM, defines={"dtype": dtype})
    kv, table, lens = paged_inputs(lens, seed, dtypes.numpy_dtype(dtype))
    out = np.zeros((len(lens), D), np.float32)
    k(kv, table, lens, out)
    want = reference_sums(kv.astype(np.float32), table, lens)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


def test_tcsim_counts_the_gathered_bytes():
    k = tilelang.compile(GATHER_SUM, target="tcsim:tiny")
    lens = [5, 16, 20]
    kv, table, lens = paged_inputs(lens)
    k(kv, table, lens, np.zeros((3, D), np.float32))
    # each block read is one gather; rows past a length are masked, not moved
    moved = sum(int(n) for n in lens) * D * 4
    assert k.last_report.bytes["gather"] == moved
    assert "gathered" in k.last_report.summary()


def test_tcsim_program_marks_the_gather_dma():
    from tilelang.driver import compile_source
    from tilelang.targets.tcsim.asm import assemble, disassemble
    from tilelang.targets.tcsim.encoding import decode, encode
    lib = compile_source(GATHER_SUM, "g.tl", target="tcsim:tiny")
    prog = lib["gather_sum"].artifact.program
    text = disassemble(prog)
    (line,) = [x for x in text.splitlines() if "DMA.LD KV_s" in x]
    assert "gather=1" in line and "stop=-," in line
    assert assemble(text) == prog and decode(encode(prog)) == prog
