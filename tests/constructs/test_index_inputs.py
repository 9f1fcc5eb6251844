"""`tilec run --index`: realistic inputs for index tensors — a permuted paged block
table, lengths from a declared range, FlashMLA's schedule for them; never all zeros."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tilelang
from tilelang.cli import main
from tilelang.diagnostics import TileLangError
from tilelang.driver.index_inputs import default_input, make_inputs, parse_specs

from .paged import GATHER_SUM

MLA = str(Path(tilelang.__file__).parent / "ops" / "mla" / "mla_decode.tl")


def _make(text, tensors, seed=0):
    return make_inputs(parse_specs([text]), tensors, np.random.default_rng(seed))


def test_paged_table_and_lengths_it_covers():
    out = _make("block_table=paged:64,lens=uniform:1:100000",
                {"block_table": ((4, 16), np.int32), "lens": ((4,), np.int32)})
    table, lens = out["block_table"], out["lens"]
    assert sorted(table.ravel().tolist()) == list(range(64))        # distinct blocks
    assert not np.array_equal(table.ravel(), np.arange(64))          # permuted
    assert lens.min() >= 1 and lens.max() <= 16 * 64                 # clipped to a row


def test_schedule_kinds_follow_the_lengths():
    from tilelang.ops.mla.scheduler import schedule
    out = _make("lens=uniform:0:3000,sched=mla_schedule:lens,splits=mla_splits:lens:sched",
                {"lens": ((6,), np.int32), "sched": ((5, 8), np.int32),
                 "splits": ((7,), np.int32)})
    meta, splits = schedule(out["lens"], 5)
    np.testing.assert_array_equal(out["sched"], meta)
    np.testing.assert_array_equal(out["splits"], splits)


def test_default_integer_input_is_not_all_zeros():
    x = default_input((1000,), np.int32, np.random.default_rng(0))
    assert x.min() >= 0 and x.max() <= 7 and x.any()


@pytest.mark.parametrize("text, words", [
    ("t=bogus:1", "unknown index kind `bogus`"),
    ("t", "expected NAME=KIND"),
    ("t=uniform:5", "`uniform` takes 2 integer arguments"),
    ("nope=perm", "`nope`, which is not an integer tensor parameter"),
    ("t=mla_schedule:lens", "needs the lengths tensor"),
])
def test_bad_specs_are_diagnostics(text, words):
    with pytest.raises(TileLangError) as e:
        _make(text, {"t": ((4, 8), np.int32)})
    assert words in str(e.value) and e.value.diagnostics[0].code == "TL0711"


@pytest.mark.parametrize("target", ["cpu", "tcsim:tiny"])
def test_tilec_run_with_index_inputs(tmp_path, target):
    src = tmp_path / "g.tl"
    src.write_text(GATHER_SUM)
    result = CliRunner().invoke(main, [
        "run", str(src), "--target", target, "--shape", "B=3,NB=24,MAXB=8",
        "--index", "block_table=paged:8,lens=uniform:1:64", "--repeat", "1"])
    assert result.exit_code == 0, result.output
    assert "gather_sum" in result.output


def test_tilec_run_mla_decode_on_a_realistic_schedule():
    result = CliRunner().invoke(main, [
        "run", MLA, "-k", "mla_decode", "--target", "tcsim:tiny", "-D", "BLOCK_H=16",
        "-D", "TILE_DTYPE=bfloat16",
        "--shape", "B=2,HKV=1,SQH=16,ROWS=1024,MAX_BLOCKS=8,NUM_PARTS=3,B1=3",
        "--arg", "s_q=1,heads_per_kv=16,page_stride=64,sm_scale_log2=0.06",
        "--index", "block_table=paged:64,cache_seqlens=uniform:1:512,"
                   "sched=mla_schedule:cache_seqlens,num_splits=mla_splits:cache_seqlens:sched"])
    assert result.exit_code == 0, result.output
    assert "gathered" in result.output
