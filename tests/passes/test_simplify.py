"""`simplify`: folding, identities and trivial control flow, on hand-built IR (the `.tl`
before/after tests are in test_passes_text.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tilelang.diagnostics import TileLangError
from tilelang.ir import (Const, Var, Binary, Unary, Call, Cast, Select, Seq, For, If, Store,
                         Let, Span)
from tilelang.passes.simplify import simplify, simplify_lowered, simplify_node

from . import interp
from .irb import c, tensor, kernel_func, module

x, y = Var("x"), Var("y")
fx = Var("fx", "float32")


def b(op, lhs, rhs, dtype=None):
    if dtype is None:
        dtype = "bool" if op in ("<", "<=", ">", ">=", "==", "!=", "and", "or") else lhs.dtype
    return Binary(op, lhs, rhs, dtype)


def f32(v):
    return Const(v, "float32")


@pytest.mark.parametrize("op,lhs,rhs,want", [
    ("+", 7, -3, 4), ("-", 7, 10, -3), ("*", -4, 6, -24),
    ("//", 7, 2, 3), ("//", -7, 2, -4), ("//", 7, -2, -4),
    ("%", -7, 3, 2), ("%", 7, -3, -2), ("min", 3, -1, -1), ("max", 3, -1, 3),
])
def test_int_binary_folding_uses_floor_semantics(op, lhs, rhs, want):
    assert simplify_node(b(op, c(lhs), c(rhs))) == c(want)


@pytest.mark.parametrize("op,want", [("<", True), ("<=", True), (">", False), (">=", False),
                                     ("==", False), ("!=", True)])
def test_comparisons_fold_to_bool(op, want):
    assert simplify_node(b(op, c(2), c(5))) == Const(want, "bool")
    assert simplify_node(b(op, f32(2.0), f32(5.0))) == Const(want, "bool")


def test_float_folding_rounds_to_the_node_dtype():
    half = simplify_node(b("+", Const(0.1, "float16"), Const(0.2, "float16")))
    assert half.dtype == "float16"
    assert half.value == float(np.float16(0.1 + 0.2))
    assert simplify_node(b("/", f32(1.0), f32(3.0))) == f32(float(np.float32(1 / 3)))
    assert simplify_node(b("//", f32(-7.0), f32(2.0))) == f32(-4.0)
    inf = simplify_node(b("/", f32(1.0), f32(0.0)))
    assert inf.value == math.inf and inf.dtype == "float32"


@pytest.mark.parametrize("name,arg", [("exp", 1.5), ("exp2", 3.0), ("log", 2.0), ("log2", 8.0),
                                      ("sqrt", 2.0), ("rsqrt", 4.0), ("tanh", 0.5),
                                      ("sigmoid", 0.0), ("abs", -2.5), ("floor", -1.5),
                                      ("ceil", -1.5), ("erf", 0.3)])
def test_intrinsics_on_constants(name, arg):
    ref = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
           "rsqrt": lambda v: 1 / np.sqrt(v), "tanh": np.tanh,
           "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "abs": np.abs, "floor": np.floor,
           "ceil": np.ceil, "erf": math.erf}[name]
    got = simplify_node(Call(name, (f32(arg),), "float32"))
    assert got.dtype == "float32"
    assert got.value == float(np.float32(ref(np.float64(arg))))


def test_ceildiv_and_int_abs_fold():
    assert simplify_node(Call("ceildiv", (c(1017), c(128)), "int32")) == c(8)
    assert simplify_node(Call("ceildiv", (c(-5), c(2)), "int32")) == c(-2)
    assert simplify_node(Call("abs", (c(-5),), "int32")) == c(5)


def test_unary_and_cast_folding():
    assert simplify_node(Unary("-", c(4), "int32")) == c(-4)
    assert simplify_node(Unary("not", Const(True, "bool"), "bool")) == Const(False, "bool")
    assert simplify_node(Cast(f32(-2.7), "int32")) == c(-2)
    assert simplify_node(Cast(c(3), "float16")) == Const(3.0, "float16")
    assert simplify_node(Cast(c(0), "bool")) == Const(False, "bool")
    assert simplify_node(Cast(x, "int32")) == x
    nan_to_int = Cast(f32(math.nan), "int32")
    assert simplify_node(nan_to_int) == nan_to_int      # left to the target


@pytest.mark.parametrize("expr,want", [
    (b("+", x, c(0)), x), (b("+", c(0), x), x), (b("-", x, c(0)), x),
    (b("*", x, c(1)), x), (b("*", c(1), x), x), (b("*", x, c(0)), c(0)),
    (b("-", x, x), c(0)), (b("//", x, c(1)), x), (b("%", x, c(1)), c(0)),
    (b("min", x, x), x), (b("max", y, y), y),
    (b("+", b("+", x, c(3)), c(4)), b("+", x, c(7))),
    (b("+", b("-", x, c(3)), c(3)), x),
    (b("-", b("+", x, c(3)), c(5)), b("-", x, c(2))),
    (b("+", c(2), b("+", x, c(3))), b("+", x, c(5))),
    (b("*", fx, f32(1.0)), fx), (b("-", fx, f32(0.0)), fx),
    (b("and", Const(True, "bool"), b("<", x, y)), b("<", x, y)),
    (b("or", b("<", x, y), Const(True, "bool")), Const(True, "bool")),
    (b("and", b("<", x, y), Const(False, "bool")), Const(False, "bool")),
    (Select(Const(True, "bool"), x, y, "int32"), x),
    (Select(Const(False, "bool"), x, y, "int32"), y),
    (Select(b("<", x, y), x, x, "int32"), x),
])
def test_algebraic_identities(expr, want):
    assert simplify_node(expr) == want


def test_float_identities_that_are_not_exact_are_kept():
    for e in (b("+", fx, f32(0.0)), b("*", fx, f32(0.0)), b("-", fx, fx)):
        assert simplify_node(e) == e


def test_division_by_constant_zero_is_a_user_error():
    span = Span("k.tl", 3, 14, 3, 15)
    with pytest.raises(TileLangError) as info:
        simplify_node(b("//", x, Const(0, "int32", span=span)))
    assert info.value.code == "TL0401"
    assert info.value.diagnostics[0].primary.line == 3
    assert info.value.diagnostics[0].primary.col == 14
    with pytest.raises(TileLangError):
        simplify_node(Call("ceildiv", (x, c(0)), "int32"))


def test_a_divisor_made_zero_by_substitution_is_left_to_run_time():
    # the source's `x // i` in a one-iteration loop: i := 0 divides by zero when it runs
    # (0), which is no constant the user wrote
    i = Var("i")
    loop = For(i, c(0), c(1), "serial", store(b("//", x, i)))
    assert simplify_node(loop) == store(b("//", x, c(0)))
    # after lowering, a constant zero divisor is the lowering's, not the source's
    B = tensor("B", (8,), "int32")
    func, _ = kernel_func("k", (x, B), (c(1),), [Store(B, (c(0),), b("//", x, c(0)))])
    with pytest.raises(TileLangError):
        simplify(module(func))
    out = simplify_lowered(module(func)).funcs[0]
    assert out.body.stmts[0].body == Store(B, (c(0),), b("//", x, c(0)))


# ----------------------------------------------------------------------------- statements

def store(idx, v=1.0):
    return Store(tensor("B", (8,)), (idx,), f32(v))


def test_if_with_constant_condition():
    s_then, s_else = store(c(0)), store(c(1))
    assert simplify_node(If(Const(True, "bool"), s_then, s_else)) == s_then
    assert simplify_node(If(b("<", c(3), c(2)), s_then, s_else)) == s_else
    assert simplify_node(If(Const(False, "bool"), s_then)) == Seq(())


def test_loops_of_extent_zero_and_one():
    i = Var("i")
    assert simplify_node(For(i, c(0), c(0), "serial", store(i))) == Seq(())
    # extent 1: the body with i := min, simplified again after substitution.
    one = For(i, c(3), b("-", c(5), c(4)), "serial", store(b("+", i, c(1))))
    assert simplify_node(one) == store(c(4))
    # a unit T.Parallel loop stays (an element-wise nest to the code generators)
    par = For(i, c(0), b("-", c(5), c(4)), "parallel", store(b("+", i, c(1))))
    assert simplify_node(par) == For(i, c(0), c(1), "parallel", store(b("+", i, c(1))))
    keep = For(i, c(0), c(2), "serial", store(i))
    assert simplify_node(keep) is keep


def test_nested_seqs_flatten():
    s1, s2, s3 = store(c(0)), store(c(1)), store(c(2))
    nested = Seq((s1, Seq((s2, Seq((s3,)))), Seq(())))
    assert simplify_node(nested) == Seq((s1, s2, s3))


def test_module_level_folding_keeps_dtypes_and_grid():
    B = tensor("B", (8,), "float16")
    val = b("*", Const(1.5, "float16"), Const(2.0, "float16"))
    func, _ = kernel_func("k", (B,), (Call("ceildiv", (c(1017), c(128)), "int32"),),
                          [Store(B, (b("+", c(1), c(2)),), val)])
    out = simplify(module(func)).funcs[0]
    kern = out.body.stmts[0]
    assert kern.grid == (c(8),)
    assert kern.body == Store(B, (c(3),), Const(3.0, "float16"))


# ----------------------------------------------------------------------------- property

def exprs():
    leaves = st.one_of(st.sampled_from([x, y]), st.integers(-6, 6).map(c))
    ops = st.sampled_from(["+", "-", "*", "//", "%", "min", "max"])

    def extend(inner):
        return st.tuples(ops, inner, inner).map(lambda t: b(t[0], t[1], t[2]))
    return st.recursive(leaves, extend, max_leaves=8)


def _eval(e, xv, yv):
    B = tensor("B", (1,), "int32")
    func, _ = kernel_func("k", (Var("x"), Var("y"), B), (c(1),), [Store(B, (c(0),), e)])
    out = np.zeros(1, np.int32)
    try:
        interp.run(module(func), "k", {"x": xv, "y": yv, "B": out})
    except ZeroDivisionError:
        return "div0"
    return int(out[0])


@settings(max_examples=50, deadline=None)
@given(e=exprs(), xv=st.integers(-5, 5), yv=st.integers(-5, 5))
def test_simplify_preserves_integer_semantics(e, xv, yv):
    try:
        simpler = simplify_node(e)
    except TileLangError:
        return                              # a constant zero divisor: rejected up front
    assert simpler.dtype == e.dtype
    before = _eval(e, xv, yv)
    if before != "div0":                     # x // (y - y): undefined at run time anyway
        assert _eval(simpler, xv, yv) == before


def test_let_is_kept():
    let = Let(Var("t"), b("+", c(1), c(2)))
    assert simplify_node(let) == Let(Var("t"), c(3))


def test_folding_overflows_to_infinity_instead_of_crashing():
    huge = Cast(Const(10 ** 400, "int64"), "float32")
    assert simplify_node(huge) == Const(math.inf, "float32")
    assert simplify_node(b("*", f32(1e38), f32(10.0))) == f32(math.inf)
    half = simplify_node(b("+", Const(65504.0, "float16"), Const(100.0, "float16")))
    assert half == Const(math.inf, "float16")
