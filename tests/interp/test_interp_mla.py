"""The reference interpreter agrees with the MLA decode kernel (tilelang/ops/mla/) on both
targets: gathered cache blocks (a T.copy region starting at a block-table entry), dynamic
slices (the ragged last block: rows past the stop read as 0 — the cache holds NaN there —
and are not written) and two grids in sequence (split, then combine); on tcsim also the
overlapped schedule it runs (`mla_decode_ws`).

The inputs are FlashMLA's test data (tests/mla/cases.py) and a real schedule, given to
the differential check as they are: drawn integers would not be a consistent block table.
"""
from __future__ import annotations

import numpy as np
import pytest

from tilelang.fuzz.differential import check
from tilelang.ops.mla import interface, kernels
from tilelang.ops.mla.scheduler import schedule

from mla.cases import make_case      # tests/mla (tests/ is on sys.path)

TEXT = kernels.SOURCE
DEFINES = {"cpu": {"dtype": "bfloat16", "BLOCK_H": 16, "CAUSAL": False},
           "tcsim:tiny": {"dtype": "bfloat16", "BLOCK_H": 16, "CAUSAL": False,
                          "TILE_DTYPE": "bfloat16"}}


def _arguments(q, kv, table, lens, parts):
    b, s_q, h_q, _ = q.shape
    h_kv = kv.shape[2]
    rows = s_q * h_q // h_kv
    meta, splits = schedule(lens, parts)
    views, stride = kernels.cache_rows(kv, False)
    qv = np.ascontiguousarray(q.reshape(b, s_q, h_kv, rows // s_q, 576)
                              .transpose(0, 2, 1, 3, 4).reshape(b, h_kv, rows, 576))
    out = np.zeros((b, h_kv, rows, 512), q.dtype)
    lse = np.zeros((b, h_kv, rows), np.float32)
    return [qv, *[np.ascontiguousarray(v) for v in views], table, lens, meta, splits, out,
            lse, 576 ** -0.5 * interface.LOG2E, s_q, rows // s_q, stride]


@pytest.mark.parametrize("target, kernel", [("cpu", "mla_decode"),
                                            ("tcsim:tiny", "mla_decode"),
                                            ("tcsim:tiny", "mla_decode_ws")])
def test_mla_decode_on_both_targets(target, kernel):
    """Three requests, some empty, split over three parts (a request cut in two is
    merged by the combine grid); NaN in every cache slot past a request's length."""
    q, kv, table, lens = make_case(3, 1, 16, 1, 100, zero=True, seed=21)
    with open(TEXT, encoding="utf-8") as f:
        text = f.read()
    verdict = check(text, {}, kernel=kernel, defines=DEFINES[target],
                    targets=(target,), stages="bisect", filename="mla_decode.tl",
                    inputs=_arguments(q, kv, table, lens, parts=3))
    assert verdict.kind == "ok", str(verdict)
