"""Random T.Parallel expressions compiled for tcsim and simulated, against numpy
evaluating the same expression tree (float64): the VEC lowering's temporaries, operand
maps (broadcast rows / columns, transposes), IOTA and scalar operands."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from tilelang.codegen.tcsim import compile_module
from tilelang.frontend import parse_module
from tilelang.driver import make_options
from tilelang.driver.stages import lower
from tilelang.runtime.tcsim import run

R, C = 8, 8          # the tile; the kernel's grid has 3 blocks of R rows

LEAVES = [("X[i, j]", lambda e: e["X"]), ("Y[i, j]", lambda e: e["Y"]),
          ("Y[j, i]", lambda e: e["Y"].T), ("r[i]", lambda e: e["r"][:, None]),
          ("c[j]", lambda e: e["c"][None, :]),
          ("T.cast(i, \"float32\")", lambda e: e["I"]),
          ("T.cast(j, \"float32\")", lambda e: e["J"]), ("s", lambda e: e["s"]),
          ("1.5", lambda e: 1.5)]
BINARY = [("+", np.add), ("-", np.subtract), ("*", np.multiply)]
CALLS = [("T.max", np.maximum), ("T.min", np.minimum)]


@st.composite
def exprs(draw, depth=3):
    kind = draw(st.sampled_from(["leaf"] * 2 + ["bin", "call", "select", "exp"]
                                if depth else ["leaf"]))
    if kind == "leaf":
        return draw(st.sampled_from(LEAVES))
    a = draw(exprs(depth=depth - 1))
    b = draw(exprs(depth=depth - 1))
    if kind == "bin":
        op, fn = draw(st.sampled_from(BINARY))
        return f"({a[0]} {op} {b[0]})", lambda e, a=a, b=b, fn=fn: fn(a[1](e), b[1](e))
    if kind == "call":
        name, fn = draw(st.sampled_from(CALLS))
        return f"{name}({a[0]}, {b[0]})", lambda e, a=a, b=b, fn=fn: fn(a[1](e), b[1](e))
    if kind == "exp":
        return (f"T.exp2(T.min({a[0]}, 4.0))",
                lambda e, a=a: np.exp2(np.minimum(a[1](e), 4.0)))
    return (f"T.if_then_else({a[0]} < {b[0]}, {a[0]}, {b[0]} * 0.5)",
            lambda e, a=a, b=b: np.where(a[1](e) < b[1](e), a[1](e), b[1](e) * 0.5))


KERNEL = '''
import tilelang.language as T
N = T.dynamic("N")

@T.prim_func
def k(A: T.Tensor((N, {C}), "float32"), B: T.Tensor((N, {C}), "float32"),
      V: T.Tensor((N,), "float32"), W: T.Tensor(({C},), "float32"),
      s: T.float32, Z: T.Tensor((N, {C}), "float32")):
    with T.Kernel(T.ceildiv(N, {R}), threads=128) as bx:
        X = T.alloc_fragment(({R}, {C}), "float32")
        Y = T.alloc_fragment(({R}, {C}), "float32")
        r = T.alloc_fragment(({R},), "float32")
        c = T.alloc_fragment(({C},), "float32")
        O = T.alloc_fragment(({R}, {C}), "float32")
        T.copy(A[bx * {R}, 0], X)
        T.copy(B[bx * {R}, 0], Y)
        T.copy(V[bx * {R}], r)
        T.copy(W, c)
        for i, j in T.Parallel({R}, {C}):
            O[i, j] = {EXPR}
        T.copy(O, Z[bx * {R}, 0])
'''


@settings(max_examples=25, deadline=None)
@given(exprs())
def test_random_parallel_expressions(expr):
    text, fn = expr
    src = KERNEL.replace("{R}", str(R)).replace("{C}", str(C)).replace("{EXPR}", text)
    module = lower(parse_module(src, "random.tl"), make_options(target="tcsim"), until="simplify")
    art = compile_module(module, "tiny")["k"]
    rng = np.random.default_rng(0)
    n = 3 * R
    a = rng.standard_normal((n, C)).astype(np.float32)
    b = rng.standard_normal((n, C)).astype(np.float32)
    v = rng.standard_normal(n).astype(np.float32)
    w = rng.standard_normal(C).astype(np.float32)
    z = np.zeros((n, C), np.float32)
    run(art, a, b, v, w, 0.75, z)
    for blk in range(3):
        rows = slice(blk * R, (blk + 1) * R)
        env = {"X": a[rows].astype(np.float64), "Y": b[rows].astype(np.float64),
               "r": v[rows].astype(np.float64), "c": w.astype(np.float64), "s": 0.75,
               "I": np.arange(R, dtype=np.float64)[:, None] + np.zeros((R, C)),
               "J": np.arange(C, dtype=np.float64)[None, :] + np.zeros((R, C))}
        want = np.broadcast_to(fn(env), (R, C))
        np.testing.assert_allclose(z[rows], want, rtol=2e-5, atol=1e-5, err_msg=text)
