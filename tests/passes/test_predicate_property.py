"""Soundness of the predicate pass's interval analysis: for random index expressions
(affine terms, floor div / mod by constants, min / max) over loop and block variables,
with constant or symbolic tensor sizes, the predicated kernel never touches memory
outside a tensor (the interpreter would raise) and gives T.copy's semantics: reads out
of bounds give 0, writes out of bounds are dropped."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from tilelang.ir import Var, Binary, Load, Store, For, Module
from tilelang.ir.verifier import verify
from tilelang.passes.predicate import predicate

from . import interp
from .irb import c, tensor, kernel_func, module

i, bx = Var("i"), Var("bx")


def _py(e, env):
    """Python value of an index expression (floor semantics, like the IR)."""
    if isinstance(e, Var):
        return env[e.name]
    if not isinstance(e, Binary):
        return e.value
    a, b = _py(e.lhs, env), _py(e.rhs, env)
    return {"+": a + b, "-": a - b, "*": a * b, "min": min(a, b), "max": max(a, b),
            "//": a // b if b else 0, "%": a % b if b else 0}[e.op]


def index_exprs():
    leaves = st.one_of(st.sampled_from([i, bx]), st.integers(-2, 4).map(c))

    def extend(inner):
        const = st.integers(1, 3).map(c)
        return st.one_of(
            st.tuples(st.sampled_from(["+", "-", "min", "max"]), inner, inner)
              .map(lambda t: Binary(t[0], t[1], t[2], "int32")),
            st.tuples(st.sampled_from(["*", "//", "%"]), inner, const)
              .map(lambda t: Binary(t[0], t[1], t[2], "int32")))
    return st.recursive(leaves, extend, max_leaves=5)


def build(store_idx, load_idx, n_a, n_b, extent, grid, symbolic) -> Module:
    A = tensor("A", ("NA" if symbolic else n_a,), "int32")
    B = tensor("B", ("NB" if symbolic else n_b,), "int32")
    body = For(i, c(0), c(extent), "parallel",
               Store(B, (store_idx,), Load(A, (load_idx,), "int32")))
    func, _ = kernel_func("k", (A, B), (c(grid),), [body])
    return module(func)


@settings(max_examples=100, deadline=None)
@given(store_idx=index_exprs(), load_idx=index_exprs(), n_a=st.integers(1, 8),
       n_b=st.integers(1, 8), extent=st.integers(1, 6), grid=st.integers(1, 4),
       symbolic=st.booleans())
def test_predicated_accesses_stay_inside_and_follow_copy_semantics(
        store_idx, load_idx, n_a, n_b, extent, grid, symbolic):
    mod = build(store_idx, load_idx, n_a, n_b, extent, grid, symbolic)
    guarded = predicate(mod)
    verify(guarded)
    a = np.arange(1, n_a + 1, dtype=np.int32) * 10
    got = np.full(n_b, -1, np.int32)
    interp.run(guarded, "k", {"A": a, "B": got}, {"NA": n_a, "NB": n_b})
    want = np.full(n_b, -1, np.int32)
    for b in range(grid):
        for v in range(extent):
            env = {"i": v, "bx": b}
            s, l = _py(store_idx, env), _py(load_idx, env)
            if 0 <= s < n_b:
                want[s] = a[l] if 0 <= l < n_a else 0
    np.testing.assert_array_equal(got, want)
