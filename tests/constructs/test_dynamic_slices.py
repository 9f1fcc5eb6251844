"""Slices whose bounds are loop-carried values (`KV[0:rows, :]`, `Out[r0:r1, :]`): the
extent comes from the other operand, elements past the stop are masked — read as 0,
never written — on both targets; in `.tl` text before and after lowering."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang
from tilelang.diagnostics import TileLangError
from tilelang.frontend import parse_module
from tilelang.ir.printer import print_module

# Copies rows [r0, r1) of each 16-row tile of X to Y through a 16-row shared tile: the
# load masks the rows past r1 (they read as 0), the store writes only rows below r1.
TAIL_COPY = '''import tilelang.language as T

N = T.dynamic("N")
TILE = 16


@T.prim_func
def tail_copy(X: T.Tensor((N, 8), "float32"), ends: T.Tensor((N,), "int32"),
              Y: T.Tensor((N, 8), "float32"), Z: T.Tensor((N, 8), "float32")):
    with T.Kernel(T.ceildiv(N, TILE), threads=32) as bx:
        X_s = T.alloc_shared((TILE, 8), "float32")
        r0 = bx * TILE
        r1 = T.min(r0 + ends[bx], N)
        T.copy(X[r0:r1, 0:8], X_s)
        T.copy(X_s, Z[r0:r0 + TILE, 0:8])
        T.copy(X_s, Y[r0:r1, 0:8])
'''


def _run(target, n, ends, seed=0):
    k = tilelang.compile(TAIL_COPY, target=target)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    tiles = -(-n // 16)
    e = np.zeros(n, np.int32)
    e[:tiles] = ends[:tiles]
    y = np.full((n, 8), -7.0, np.float32)
    z = np.full((n, 8), -7.0, np.float32)
    k(x, e, y, z)
    want_y, want_z = np.full_like(y, -7.0), np.zeros_like(z)
    for t in range(tiles):
        r0 = t * 16
        r1 = min(r0 + int(e[t]), n, r0 + 16)
        want_y[r0:r1] = x[r0:r1]
        want_z[r0:r1] = x[r0:r1]
    return y, z, want_y, want_z


@pytest.mark.parametrize("target", ["cpu", "tcsim:tiny"])
def test_masked_tails_on_both_targets(target):
    y, z, want_y, want_z = _run(target, 45, [16, 3, 0])
    np.testing.assert_array_equal(y, want_y)        # rows past the stop: never written
    np.testing.assert_array_equal(z, want_z)        # ... and read as 0


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 70), ends=st.lists(st.integers(0, 20), min_size=5, max_size=5),
       seed=st.integers(0, 9))
def test_masked_tails_property(n, ends, seed):
    y, z, want_y, want_z = _run("cpu", n, ends, seed)
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(z, want_z)


def test_dynamic_slice_prints_and_parses_back():
    module = parse_module(TAIL_COPY, "t.tl")
    text = print_module(module)
    assert "T.copy(X[r0:r1, 0:8], X_s)" in text and "T.copy(X_s, Y[r0:r1, 0:8])" in text
    assert parse_module(text, "printed.tl") == module
    from tilelang.ir import Copy, walk
    copy = next(n for n in walk(module) if isinstance(n, Copy) and n.src.buffer.name == "X")
    assert copy.src.extents == (16, 8) and copy.src.limits[0].name == "r1"


BEFORE = '''import tilelang.language as T

N = T.dynamic("N")


@T.prim_func
def k(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"), n: T.int32):
    with T.Kernel(1, threads=32) as bx:
        X_s = T.alloc_shared((4,), "float32")
        T.copy(X[0:n], X_s)
        T.copy(X_s, Y[0:n])
'''

AFTER = '''    with T.Kernel(1, threads=32) as bx:
        X_s = T.alloc_shared((4,), "float32")
        for i in T.Parallel(4):
            X_s[i] = T.if_then_else(i < n, X[i], 0.0)
        for i_0 in T.Parallel(4):
            if i_0 < n:
                Y[i_0] = X_s[i_0]
'''


def test_lower_tile_ops_masks_past_the_stop():
    from tilelang.driver.options import make_options
    from tilelang.driver.stages import lower
    lowered = lower(parse_module(BEFORE, "k.tl"), make_options(), until="lower_tile_ops")
    assert AFTER in print_module(lowered)


def test_dynamic_slices_are_for_copies_only():
    src = BEFORE.replace("T.copy(X_s, Y[0:n])", "T.fill(Y[0:n], 0.0)")
    with pytest.raises(TileLangError) as e:
        parse_module(src, "k.tl")
    assert e.value.diagnostics[0].code == "TL0218"


def test_both_sides_dynamic_is_an_error():
    src = BEFORE.replace("T.copy(X_s, Y[0:n])", "T.copy(X[0:n], Y[0:n])")
    with pytest.raises(TileLangError) as e:
        parse_module(src, "k.tl")
    d = e.value.diagnostics[0]
    assert d.code == "TL0314" and "dynamic slices" in d.message
