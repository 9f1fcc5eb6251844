"""print -> parse gives a structurally equal module: for every test kernel, and for
hand-built lowered IR (what the passes produce after tile-op lowering)."""
import ast
import math
from pathlib import Path

import pytest

from tilelang.frontend import parse_module
from tilelang.ir.nodes import (Const, Var, Binary, Unary, Call, Cast, Select, Buffer, Load,
                               Seq, Let, Alloc, Store, Atomic, For, If, Kernel, PrimFunc,
                               Module, Region, Copy, Fill, TileAtomic)
from tilelang.ir.printer import print_module, print_node

KERNELS = sorted((Path(__file__).parent / "kernels").glob("*.tl"))


def round_trip(mod: Module) -> str:
    text = print_module(mod)
    ast.parse(text)                             # the printed form is valid Python
    again = parse_module(text, "printed.tl")
    assert again == mod, text
    assert print_module(again) == text          # printing is deterministic and stable
    return text


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.stem)
def test_kernel_round_trip(path):
    mod = parse_module(path.read_text(), str(path))
    round_trip(mod)


# ----------------------------------------------------------------------------- lowered IR
i32 = "int32"
N = Var("N")
A = Buffer("A", (N, Const(64, i32)), "float32")
H = Buffer("H", (N,), "float16")
I8 = Buffer("I8", (Const(16, i32),), "int8")
W = Buffer("W", (N,), "int64")
S = Buffer("S", (Const(64, i32),), "float32", "shared")
S2 = Buffer("S2", (Const(64, i32), Const(64, i32)), "float32", "shared")
acc = Buffer("acc", (), "float32", "var")
cnt = Buffer("cnt", (), "int32", "var")
alpha = Var("alpha", "float32")
bx, i, j, k, t, u = (Var(n) for n in ("bx", "i", "j", "k", "t", "u"))


def c(v, dtype=i32):
    return Const(v, dtype)


def b(op, x, y, dtype=None):
    from tilelang.ir.nodes import COMPARISONS
    dtype = dtype or ("bool" if op in COMPARISONS or op in ("and", "or") else x.dtype)
    return Binary(op, x, y, dtype)


def ld(buf, *idx):
    return Load(buf, tuple(idx), buf.dtype)


def lowered_module() -> Module:
    row = b("+", b("*", bx, c(64)), i)
    in_bounds = b("<", row, N)
    base = b("*", bx, c(64))
    body = Seq((
        Alloc(S),
        Alloc(S2),
        Alloc(acc, c(0.0, "float32")),
        Alloc(cnt),
        Store(cnt, (), c(0)),
        For(i, c(0), c(64), "parallel",
            For(j, c(0), c(64), "parallel",
                Store(S2, (i, j), Select(in_bounds, ld(A, row, j), c(0.0, "float32"),
                                         "float32")))),
        For(k, c(0), c(8), "vectorized", Store(S, (k,), b("*", ld(S, k), alpha))),
        For(t, c(2), N, "serial",
            Seq((Let(Var("y", "float32"), b("+", ld(acc), ld(S, b("%", t, c(64))))),
                 Store(acc, (), Var("y", "float32"))))),
        For(u, bx, c(4), "unroll", Store(cnt, (), b("+", ld(cnt), u))),
        For(Var("p"), b("*", bx, c(2)), b("-", N, bx), "parallel",
            Atomic("add", A, (Var("p"), c(0)), c(1.5, "float32"))),
        For(Var("q"), c(0), Call("ceildiv", (N, c(32)), i32), "pipelined",
            Store(S, (Var("q"),), Cast(Var("q"), "float32")), (("num_stages", 2),)),
        If(b("and", b("<", base, N), Unary("not", b("==", bx, c(0)), "bool")),
           Store(H, (base,), Cast(ld(acc), "float16")),
           If(b(">=", ld(acc), c(math.inf, "float32")),
              Store(H, (base,), c(-math.inf, "float16")),
              Seq((Store(H, (base,), b("*", ld(H, base), c(2.0, "float16"))),
                   Store(W, (bx,), b("-", c(1, "int64"), Cast(bx, "int64"))))))),
        If(b("!=", ld(cnt), c(-3)), Atomic("max", I8, (c(0),), c(-7, "int8"))),
        Let(Var("e", "float32"), Call("exp2", (Unary("-", ld(acc), "float32"),), "float32")),
        Let(Var("m", i32), Binary("max", c(1), c(2), i32)),
        Let(Var("f", i32), b("+", c(1), c(2))),
        Let(Var("g", i32), Unary("-", c(5), i32)),
        Let(Var("h", i32), c(-5)),
        Let(Var("r", "float32"), b("/", b("-", alpha, b("-", c(1.0, "float32"), alpha)),
                                   Call("sqrt", (c(2.0, "float32"),), "float32"))),
        Let(Var("z", "bool"), b("or", c(True, "bool"), c(False, "bool"))),
        Let(Var("w", "float16"), Select(c(True, "bool"), c(1.0, "float16"), c(2.0, "float16"),
                                        "float16")),
        Let(Var("big", "int64"), b("//", c(1 << 40, "int64"), Cast(N, "int64"))),
        Store(I8, (c(1),), b("*", ld(I8, c(1)), c(3, "int8"))),
    ))
    kernel = Kernel((Call("ceildiv", (N, c(64)), i32),), (bx,), 128, body)
    func = PrimFunc("lowered", (A, H, I8, W, alpha), (N,), Seq((kernel,)))
    return Module((func,))


def test_lowered_ir_round_trip():
    text = round_trip(lowered_module())
    assert "for i, j in T.Parallel(64, 64):" in text
    assert "for t in T.serial(2, 2 + N):" in text
    assert "T.parallel(bx * 2, bx * 2 + (N - bx))" in text
    assert "T.Pipelined(T.ceildiv(N, 32), num_stages=2)" in text
    assert 'T.float16(-T.infinity("float16"))' not in text
    assert 'H[bx * 64] = -T.infinity("float16")' in text
    assert "f = T.int32(1) + 2" in text
    assert "g = -(5)" in text and "h = T.int32(-5)" in text    # a bare -5 binds a constant
    assert "elif acc >= T.infinity(\"float32\"):" in text


def test_tile_ops_with_partial_regions_round_trip():
    F = Buffer("F", (c(4), c(8)), "float32", "fragment")
    region_a = Region(A, (b("*", bx, c(4)), c(0)), (4, 8))
    body = Seq((Alloc(F),
                Copy(region_a, Region(F, (c(0), c(0)), (4, 8))),
                Fill(Region(F, (c(1), c(0)), (1, 8)), c(0.5, "float32")),
                Fill(Region(F, (c(0), c(3)), (1, 1)), c(2.0, "float32")),
                TileAtomic("add", Region(A, (bx, c(8)), (1, 8)), Region(F, (c(2), c(0)), (1, 8)))))
    kernel = Kernel((N,), (bx,), 32, body)
    mod = Module((PrimFunc("tiles", (A,), (N,), Seq((kernel,))),))
    text = round_trip(mod)
    assert "T.copy(A[bx * 4, 0], F)" in text
    assert "T.fill(F[1, 0:8], 0.5)" in text
    assert "T.fill(F[0:1, 3:4], 2.0)" in text


def test_print_node_expressions():
    e = b("*", b("+", i, c(1)), b("-", j, b("-", k, c(2))))
    assert print_node(e) == "(i + 1) * (j - (k - 2))"
    assert print_node(b("<", b("+", i, j), k)) == "i + j < k"
    assert print_node(Unary("-", b("+", i, j), i32)) == "-(i + j)"
    assert print_node(c(2.0, "bfloat16")) == "T.bfloat16(2.0)"
    assert print_node(c(1e-5, "float32")) == "1e-05"
    assert print_node(Unary("not", b("<", i, j), "bool")) == "not i < j"
    assert print_node(b("and", Unary("not", b("<", i, j), "bool"), b("<", j, k))) == \
        "not i < j and j < k"


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.stem)
def test_every_parsed_node_has_a_span(path):
    from tilelang.ir import walk
    from tilelang.ir.nodes import NO_SPAN
    mod = parse_module(path.read_text(), str(path))
    missing = [type(n).__name__ for n in walk(mod) if getattr(n, "span", None) is NO_SPAN]
    assert missing == []
    assert all(n.span.file == str(path) for n in walk(mod) if hasattr(n, "span"))
