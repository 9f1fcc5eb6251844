"""Random well-typed expressions: print -> parse gives the same IR (precedence,
parentheses, literal typing, negative and special constants)."""
import math

from hypothesis import HealthCheck, assume, given, settings, strategies as st

from tilelang.diagnostics import TileLangError
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
        big = 3.0e20 if dtype == "float32" else 6.0e4    # a literal past the dtype is TL0216
        values = st.sampled_from([0.0, 1.0, -0.5, 2.5, 1e-05, big, math.inf, -math.inf])
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


# ----------------------------------------------------------------------------- statements
import itertools  # noqa: E402

from tilelang.ir.nodes import Alloc, Atomic, Buffer, For, If, Load, Store  # noqa: E402

S = Buffer("S", (Const(64, "int32"),), "float32", "shared")
MSYM = Var("m")
G = Buffer("G", (MSYM,), "float32")
ACC = Buffer("acc", (), "float32", "var")


_names = itertools.count()


@st.composite
def bodies(draw, depth=2, scope=()):
    """A block of statements; loop variables and lets get fresh names (names are unique
    within a function, as the IR requires)."""
    count = draw(st.integers(1, 3))
    stmts = []
    for _ in range(count):
        kind = draw(st.sampled_from(["store", "var", "atomic", "let"] +
                                    (["for", "if"] if depth > 0 else [])))
        index = draw(st.sampled_from((BX,) + scope))
        value = draw(exprs("float32", 1))
        if kind == "store":
            stmts.append(Store(S, (Binary("%", index, Const(64, "int32"), "int32"),), value))
        elif kind == "var":
            stmts.append(Store(ACC, (), Binary("+", Load(ACC, (), "float32"), value, "float32")))
        elif kind == "atomic":
            stmts.append(Atomic(draw(st.sampled_from(["add", "max", "min"])), G, (index,), value))
        elif kind == "let":
            stmts.append(Let(Var(f"v{next(_names)}", "float32"), value))
        elif kind == "for":
            var = Var(f"i{next(_names)}")
            loop_kind = draw(st.sampled_from(["serial", "parallel", "pipelined", "unroll",
                                              "vectorized"]))
            lo = draw(st.sampled_from([Const(0, "int32"), Const(2, "int32"), BX]))
            ann = (("num_stages", draw(st.integers(0, 4))),) if loop_kind == "pipelined" else ()
            body = draw(bodies(depth - 1, scope + (var,)))
            stmts.append(For(var, lo, draw(st.sampled_from([Const(8, "int32"), N])), loop_kind,
                             body, ann))
        else:
            then = draw(bodies(depth - 1, scope))
            other = draw(st.one_of(st.none(), bodies(depth - 1, scope)))
            stmts.append(If(draw(exprs("bool", 1)), then, other))
    return stmts[0] if len(stmts) == 1 else Seq(tuple(stmts))


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(bodies())
def test_random_statements_round_trip(body):
    inner = body.stmts if isinstance(body, Seq) else (body,)
    kernel = Kernel((Const(4, "int32"),), (BX,), 64,
                    Seq((Alloc(S), Alloc(ACC, Const(0.0, "float32"))) + inner))
    mod = Module((PrimFunc("stmts", (G, N, X, F16, FLAG), (MSYM,), Seq((kernel,))),))
    text = print_module(mod)
    try:
        parsed = parse_module(text, "random.tl")
    except TileLangError as e:
        # a store inside a T.Parallel that every iteration makes to one element is TL0391
        # (tests/reliability/test_parallel_deps.py); the bodies here do not avoid it
        assume(e.diagnostics[0].code != "TL0391")
        raise
    assert parsed == mod, text
