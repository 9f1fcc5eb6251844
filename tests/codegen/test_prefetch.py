"""T.prefetch: parses and prints back, emits L2 prefetches per cache line of its part,
and never changes a value or faults, wherever its region lies."""
from __future__ import annotations

import os
import platform
import re
import tempfile

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang
from tilelang.frontend import parse_module
from tilelang.ir.nodes import Prefetch
from tilelang.ir.printer import print_module
from tilelang.ir.verifier import verify
from tilelang.ir.visitor import walk

KERNEL = """import tilelang.language as T

M = T.dynamic("M")
N = 24


@T.prim_func
def f(A: T.Tensor((M, N), "{dt}"), B: T.Tensor((M, N), "{dt}")):
    with T.Kernel(T.ceildiv(M, 8), threads=1) as bx:
        for p in range({parts}):
            T.prefetch(A[(bx + {ahead}) * 8:(bx + {ahead}) * 8 + {rows}, {col}:{col} + {cols}], part=p, parts={parts})
        for i, j in T.Parallel(8, N):
            B[bx * 8 + i, j] = A[bx * 8 + i, j]
"""


def source(dt="float32", rows=8, cols=24, col=0, ahead=1, parts=2) -> str:
    return KERNEL.format(dt=dt, rows=rows, cols=cols, col=col, ahead=ahead, parts=parts)


def compiled(src: str):
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "k.tl")
    with open(path, "w") as f:
        f.write(src)
    return tilelang.compile(path)


def test_prefetch_round_trips_through_the_printer():
    mod = parse_module(source(), "k.tl")
    verify(mod)
    (p,) = [n for n in walk(mod) if isinstance(n, Prefetch)]
    assert p.region.extents == (8, 24) and p.parts == 2
    assert "T.prefetch(A[(bx + 1) * 8:(bx + 1) * 8 + 8, 0:24], part=p, parts=2)" \
        in print_module(mod)
    assert parse_module(print_module(mod), "<printed>") == mod


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="reads x86 asm")
def test_prefetch_emits_one_l2_prefetch_per_line_of_a_row():
    # a row of 24 float32 is 96 bytes: requests at +0, +64 and the last byte, +95
    # (the block loop may be emitted more than once; each copy has the same three)
    asm = compiled(source(rows=1, parts=1)).asm()
    offsets = sorted({int(d) for d in re.findall(r"prefetcht1\s+(-?\d+)\(", asm)})
    assert len(offsets) == 3 and [o - offsets[0] for o in offsets] == [0, 64, 95]


@settings(max_examples=12, deadline=None)
@given(m=st.integers(1, 40), rows=st.integers(1, 20), cols=st.integers(1, 200),
       col=st.integers(-50, 50), ahead=st.integers(-3, 1000), parts=st.integers(1, 7),
       dt=st.sampled_from(["float32", "float16", "int8", "float64"]))
def test_prefetch_of_any_region_changes_nothing(m, rows, cols, col, ahead, parts, dt):
    # regions partly or wholly outside the tensor, more parts than rows: a prefetch is a
    # hint and must never fault or change a value
    k = compiled(source(dt, rows, cols, col, ahead, parts))
    a = (np.arange(m * 24) % 100).reshape(m, 24).astype(dt)
    b = np.zeros_like(a)
    k(a, b)
    np.testing.assert_array_equal(b, a)
