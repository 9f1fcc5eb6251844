"""Random well-typed expressions: print -> parse gives the same IR (precedence,
parentheses, literal typing, negative and special constants)."""
import math

from hypothesis import HealthCheck, given, settings, strategies as st

from tilelang.frontend import parse_module
from tilelang.ir.nodes import (Const, Var, Binary, Unary, Call, Cast, Select, Let, Kernel, Seq,
                               PrimFunc, Module)
from tilelang.ir.printer import print_module

BX, N, X, FLAG = Var("bx"), Var("n"), Var("x", "float32"), Var("flag", "bool")
F16 = Var("h", "float16")


def consts(dtype):
    if dtype == "bool":
        return st.booleans().map(lambda v: Const(v, "bool"))
    if dtype in ("float32", "float16"):
        values = st.sampled_from([0.0, 1.0, -0.5, 2.5, 1e-05, 3.0e20, math.inf, -math.inf])
        return values.map(lambda v: Const(v, dtype))
    return st.integers(-100, 100).map(lambda v: Const(v, dtype))


def exprs(dtype, depth=3):
    leaves = {"int32": st.sampled_from([BX, N]), "float32": st.just(X),
              "float16": st.just(F16), "bool": st.just(FLAG)}[dtype]
    base = st.one_of(leaves, consts(dtype))
    if depth == 0:
        return base
    sub = exprs(dtype, depth - 1)
    options = [base]
    if dtype == "bool":
        cmp = st.tuples(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]),
                        st.sampled_from(["int32", "float32", "float16"])).flatmap(
            lambda t: st.tuples(st.just(t[0]), exprs(t[1], depth - 1), exprs(t[1], depth - 1)))
        options += [cmp.map(lambda t: Binary(t[0], t[1], t[2], "bool")),
                    st.tuples(st.sampled_from(["and", "or"]), sub, sub).map(
                        lambda t: Binary(t[0], t[1], t[2], "bool")),
                    sub.map(lambda e: Unary("not", e, "bool"))]
        return st.one_of(options)
    ops = ["+", "-", "*", "min", "max"] + (["//", "%"] if dtype == "int32" else ["/"])
    options += [st.tuples(st.sampled_from(ops), sub, sub).map(
                    lambda t: Binary(t[0], t[1], t[2], dtype)),
                sub.map(lambda e: Unary("-", e, dtype)),
                st.tuples(exprs("bool", depth - 1), sub, sub).map(
                    lambda t: Select(t[0], t[1], t[2], dtype))]
    if dtype == "int32":
        options += [st.tuples(sub, sub).map(lambda t: Call("ceildiv", t, "int32")),
                    exprs("float32", depth - 1).map(lambda e: Cast(e, "int32"))]
    else:
        options += [st.tuples(st.sampled_from(["exp", "sqrt", "tanh", "abs"]), sub).map(
                        lambda t: Call(t[0], (t[1],), dtype)),
                    exprs("int32", depth - 1).map(lambda e: Cast(e, dtype))]
    return st.one_of(options)


def module_of(i, f, h, b):
    body = Seq((Let(Var("ri"), i), Let(Var("rf", "float32"), f), Let(Var("rh", "float16"), h),
                Let(Var("rb", "bool"), b)))
    kernel = Kernel((Const(4, "int32"),), (BX,), 128, body)
    return Module((PrimFunc("exprs", (N, X, F16, FLAG), (), Seq((kernel,))),))


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(exprs("int32"), exprs("float32"), exprs("float16"), exprs("bool"))
def test_random_expressions_round_trip(i, f, h, b):
    mod = module_of(i, f, h, b)
    text = print_module(mod)
    assert parse_module(text, "random.tl") == mod, text
