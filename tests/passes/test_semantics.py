"""Semantic tests: tile kernels lowered by the CPU pipeline (verify-each on) and run by the
reference interpreter give exactly numpy's results, for hypothesis-drawn ragged sizes.

Values are small integers (stored as floats where the kernel is float), so every sum is
exact and the comparison can be exact too. The interpreter raises on any out-of-bounds
access, so a missing guard fails the test rather than wrapping around.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tilelang import dtypes
from tilelang.ir import (Alloc, Copy, Gemm, Fill, Reduce, TileAtomic, For, Const, Seq, Var,
                         walk)
from tilelang import targets
from tilelang.passes import PassManager

from . import interp
from .irb import c, mul, ceildiv, tensor, whole, window, kernel_func, module

SETTINGS = settings(max_examples=20, deadline=None)
dims = st.integers(1, 13)
blocks = st.sampled_from([1, 2, 4, 8])


def lower(mod):
    out = PassManager(targets.get("cpu").pipeline(), verify_each=True).run(mod)
    leftover = [n for n in walk(out) if isinstance(n, (Copy, Gemm, Fill, Reduce, TileAtomic))]
    assert not leftover, f"tile ops survived lowering: {leftover}"
    return out


def rand(shape, dtype="float32", rng=None, lo=-4, hi=5):
    rng = rng or np.random.default_rng(0)
    return rng.integers(lo, hi, size=shape).astype(dtypes.numpy_dtype(dtype))


def shape_entry(n, name, symbolic):
    return name if symbolic else n


# ----------------------------------------------------------------------------- gemm

def gemm_module(M, N, K, bm, bn, bk, ta, tb, symbolic, in_dtype="float32"):
    sym = lambda n, name: shape_entry(n, name, symbolic)  # noqa: E731
    a_shape = (sym(K, "K"), sym(M, "M")) if ta else (sym(M, "M"), sym(K, "K"))
    b_shape = (sym(N, "N"), sym(K, "K")) if tb else (sym(K, "K"), sym(N, "N"))
    A, B = tensor("A", a_shape, in_dtype), tensor("B", b_shape, in_dtype)
    C = tensor("C", (sym(M, "M"), sym(N, "N")), "float32")
    A_s = tensor("A_s", (bk, bm) if ta else (bm, bk), in_dtype, "shared")
    B_s = tensor("B_s", (bn, bk) if tb else (bk, bn), in_dtype, "shared")
    C_f = tensor("C_f", (bm, bn), "float32", "fragment")
    bx, by, k = Var("bx"), Var("by"), Var("k")
    row, col, kk = mul(by, c(bm)), mul(bx, c(bn)), mul(k, c(bk))
    a_src = window(A, (kk, row) if ta else (row, kk), (bk, bm) if ta else (bm, bk))
    b_src = window(B, (col, kk) if tb else (kk, col), (bn, bk) if tb else (bk, bn))
    body = For(k, c(0), ceildiv(A.shape[0 if ta else 1], c(bk)),
               "pipelined",
               _seq(Copy(a_src, whole(A_s)), Copy(b_src, whole(B_s)),
                    Gemm(whole(A_s), whole(B_s), whole(C_f), ta, tb)),
               annotations=(("num_stages", 2),))
    grid = (ceildiv(C.shape[1], c(bn)), ceildiv(C.shape[0], c(bm)))
    stmts = [Alloc(A_s), Alloc(B_s), Alloc(C_f), Fill(whole(C_f), Const(0.0, "float32")),
             body, Copy(whole(C_f), window(C, (row, col), (bm, bn)))]
    func, _ = kernel_func("gemm", (A, B, C), grid, stmts)
    return module(func)


def _seq(*stmts):
    return Seq(tuple(stmts))


@SETTINGS
@given(M=dims, N=dims, K=dims, bm=blocks, bn=blocks, bk=blocks, ta=st.booleans(),
       tb=st.booleans(), symbolic=st.booleans())
def test_gemm_matches_numpy(M, N, K, bm, bn, bk, ta, tb, symbolic):
    mod = lower(gemm_module(M, N, K, bm, bn, bk, ta, tb, symbolic))
    rng = np.random.default_rng(M * 100 + N * 10 + K)
    a = rand((K, M) if ta else (M, K), rng=rng)
    b = rand((N, K) if tb else (K, N), rng=rng)
    out = np.full((M, N), 99.0, np.float32)
    interp.run(mod, "gemm", {"A": a, "B": b, "C": out}, {"M": M, "N": N, "K": K})
    want = (a.T if ta else a) @ (b.T if tb else b)
    np.testing.assert_array_equal(out, want)


def test_gemm_fp16_inputs_accumulate_in_fp32():
    mod = lower(gemm_module(5, 7, 9, 4, 4, 4, False, True, False, in_dtype="float16"))
    rng = np.random.default_rng(1)
    a, b = rand((5, 9), "float16", rng), rand((7, 9), "float16", rng)
    out = np.zeros((5, 7), np.float32)
    interp.run(mod, "gemm", {"A": a, "B": b, "C": out})
    np.testing.assert_array_equal(out, a.astype(np.float32) @ b.astype(np.float32).T)


# ----------------------------------------------------------------------------- reduce

REF = {
    "sum": lambda x, ax: x.sum(axis=ax), "max": lambda x, ax: x.max(axis=ax),
    "min": lambda x, ax: x.min(axis=ax), "abssum": lambda x, ax: np.abs(x).sum(axis=ax),
    "absmax": lambda x, ax: np.abs(x).max(axis=ax),
}
COMBINE = {"sum": np.add, "abssum": np.add, "max": np.maximum, "absmax": np.maximum,
           "min": np.minimum}


def reduce_module(M, N, bm, bn, dim, kind, clear, dtype):
    """Each block reduces one (bm, bn) tile of X (zero-padded past the edges) along `dim`
    into row `by` / column block of Y; with clear=False Y's tile is the starting value."""
    X = tensor("X", (M, N), dtype)
    gm, gn = -(-M // bm), -(-N // bn)
    out_shape = (M, gn) if dim == 1 else (gm, N)
    Y = tensor("Y", out_shape, dtype)
    X_s = tensor("X_s", (bm, bn), dtype, "shared")
    R = tensor("R", (bm,) if dim == 1 else (bn,), dtype, "fragment")
    bx, by = Var("bx"), Var("by")
    row, col = mul(by, c(bm)), mul(bx, c(bn))
    y_win = window(Y, (row, bx), (bm, 1)) if dim == 1 else window(Y, (by, col), (1, bn))
    stmts = [Alloc(X_s), Alloc(R), Copy(window(X, (row, col), (bm, bn)), whole(X_s))]
    if not clear:
        stmts.append(Copy(y_win, whole(R)))
    stmts += [Reduce(kind, X_s, R, dim, clear), Copy(whole(R), y_win)]
    func, _ = kernel_func("red", (X, Y), (c(gn), c(gm)), stmts)
    return module(func)


@SETTINGS
@given(M=dims, N=dims, bm=blocks, bn=blocks, dim=st.sampled_from([0, 1]),
       kind=st.sampled_from(sorted(REF)), clear=st.booleans(),
       dtype=st.sampled_from(["float32", "int32"]))
def test_reduce_matches_numpy(M, N, bm, bn, dim, kind, clear, dtype):
    mod = lower(reduce_module(M, N, bm, bn, dim, kind, clear, dtype))
    rng = np.random.default_rng(M * 31 + N)
    x = rand((M, N), dtype, rng)
    gm, gn = -(-M // bm), -(-N // bn)
    y0 = rand((M, gn) if dim == 1 else (gm, N), dtype, rng)
    y = y0.copy()
    interp.run(mod, "red", {"X": x, "Y": y})
    # The reference: reduce each zero-padded tile, combine with y0 unless clear.
    xp = np.zeros((gm * bm, gn * bn), x.dtype)
    xp[:M, :N] = x
    tiles = xp.reshape(gm, bm, gn, bn)
    if dim == 1:
        want = REF[kind](tiles, 3).transpose(0, 1, 2).reshape(gm * bm, gn)[:M]
    else:
        want = REF[kind](tiles, 1).reshape(gm, gn * bn)[:, :N]
    if not clear:
        want = COMBINE[kind](want, y0)
    np.testing.assert_array_equal(y, want.astype(y.dtype))


# ----------------------------------------------------------------------------- fill, copy, atomics

@SETTINGS
@given(M=dims, N=dims, bm=blocks, bn=blocks, symbolic=st.booleans())
def test_fill_global_tile_is_clipped(M, N, bm, bn, symbolic):
    C = tensor("C", (shape_entry(M, "M", symbolic), shape_entry(N, "N", symbolic)), "int32")
    bx, by = Var("bx"), Var("by")
    stmts = [Fill(window(C, (mul(by, c(bm)), mul(bx, c(bn))), (bm, bn)), c(7))]
    func, _ = kernel_func("fill", (C,), (ceildiv(C.shape[1], c(bn)),
                                         ceildiv(C.shape[0], c(bm))), stmts)
    mod = lower(module(func))
    out = np.zeros((M, N), np.int32)
    interp.run(mod, "fill", {"C": out}, {"M": M, "N": N})
    np.testing.assert_array_equal(out, np.full((M, N), 7, np.int32))


@SETTINGS
@given(M=dims, N=dims, bm=blocks, bn=blocks)
def test_copy_casts_and_pairs_dims_across_unit_dims(M, N, bm, bn):
    """X (M, N) int32 -> a (1, bm, bn) float32 shared tile -> Y (1, M, N): unit dims on
    either side are dropped when pairing dims, and the int32 -> float32 cast is exact."""
    X = tensor("X", (M, N), "int32")
    Y = tensor("Y", (1, M, N), "float32")
    S = tensor("S", (1, bm, bn), "float32", "shared")
    bx, by = Var("bx"), Var("by")
    row, col = mul(by, c(bm)), mul(bx, c(bn))
    stmts = [Alloc(S), Copy(window(X, (row, col), (bm, bn)), whole(S)),
             Copy(whole(S), window(Y, (c(0), row, col), (1, bm, bn)))]
    func, _ = kernel_func("cp", (X, Y), (c(-(-N // bn)), c(-(-M // bm))), stmts)
    mod = lower(module(func))
    x = rand((M, N), "int32")
    y = np.full((1, M, N), -1.0, np.float32)
    interp.run(mod, "cp", {"X": x, "Y": y})
    np.testing.assert_array_equal(y[0], x.astype(np.float32))


@SETTINGS
@given(M=dims, N=dims, K=dims, bm=blocks, bn=blocks, splits=st.integers(1, 3))
def test_split_k_tile_atomic_add(M, N, K, bm, bn, splits):
    """Each of `splits` K-slices computes a partial product and atomically adds it."""
    A, B, C = tensor("A", (M, K)), tensor("B", (K, N)), tensor("C", (M, N))
    ks = -(-K // splits)
    A_s = tensor("A_s", (bm, ks), "float32", "shared")
    B_s = tensor("B_s", (ks, bn), "float32", "shared")
    C_f = tensor("C_f", (bm, bn), "float32", "fragment")
    bx, by, bz = Var("bx"), Var("by"), Var("bz")
    row, col, kk = mul(by, c(bm)), mul(bx, c(bn)), mul(bz, c(ks))
    stmts = [Alloc(A_s), Alloc(B_s), Alloc(C_f),
             Copy(window(A, (row, kk), (bm, ks)), whole(A_s)),
             Copy(window(B, (kk, col), (ks, bn)), whole(B_s)),
             Gemm(whole(A_s), whole(B_s), whole(C_f), clear_accum=True),
             TileAtomic("add", window(C, (row, col), (bm, bn)), whole(C_f))]
    grid = (c(-(-N // bn)), c(-(-M // bm)), c(splits))
    func, _ = kernel_func("splitk", (A, B, C), grid, stmts)
    mod = lower(module(func))
    rng = np.random.default_rng(K)
    a, b = rand((M, K), rng=rng), rand((K, N), rng=rng)
    c0 = rand((M, N), rng=rng)
    out = c0.copy()
    interp.run(mod, "splitk", {"A": a, "B": b, "C": out})
    np.testing.assert_array_equal(out, c0 + a @ b)


def test_interpreter_catches_unguarded_access():
    """Without the predicate pass the ragged copy reads outside X: the oracle notices."""
    from tilelang.passes.lower_tile_ops import lower_tile_ops
    X, Y = tensor("X", (5,), "int32"), tensor("Y", (5,), "int32")
    S = tensor("S", (4,), "int32", "shared")
    bx = Var("bx")
    stmts = [Alloc(S), Copy(window(X, (mul(bx, c(4)),), (4,)), whole(S)),
             Copy(whole(S), window(Y, (mul(bx, c(4)),), (4,)))]
    func, _ = kernel_func("cp", (X, Y), (c(2),), stmts)
    mod = lower_tile_ops(module(func))
    with pytest.raises(interp.OutOfBounds):
        interp.run(mod, "cp", {"X": np.arange(5, dtype=np.int32),
                               "Y": np.zeros(5, np.int32)})



def test_gemm_on_windows_of_higher_rank_buffers():
    """Operands with leading unit dims (a head of a 3-d tensor, a 1 x N row of C)."""
    A = tensor("A", (2, 3, 5))
    B = tensor("B", (5, 4))
    C = tensor("C", (3, 1, 4))
    F = tensor("F", (1, 4), "float32", "fragment")
    bx = Var("bx")
    stmts = [Alloc(F),
             Gemm(window(A, (c(1), bx, c(0)), (1, 1, 5)), whole(B), whole(F),
                  clear_accum=True),
             Copy(whole(F), window(C, (bx, c(0), c(0)), (1, 1, 4)))]
    func, _ = kernel_func("g", (A, B, C), (c(3),), stmts)
    mod = lower(module(func))
    rng = np.random.default_rng(3)
    a, b = rand((2, 3, 5), rng=rng), rand((5, 4), rng=rng)
    out = np.zeros((3, 1, 4), np.float32)
    interp.run(mod, "g", {"A": a, "B": b, "C": out})
    np.testing.assert_array_equal(out[:, 0, :], a[1] @ b)
