"""`predicate`, `vectorize` and `dce` on hand-built lowered IR: guard placement, proofs of
in-bounds accesses, loop kinds and dead code."""
from __future__ import annotations

import pytest

from tilelang.diagnostics import TileLangError
from tilelang.ir import (Const, Var, Binary, Select, Load, Seq, For, If, Store, Atomic, Alloc,
                         Let, Unary, Span, walk)
from tilelang.passes.dce import dce
from tilelang.passes.predicate import predicate
from tilelang.passes.vectorize import vectorize
from tilelang.ir.verifier import verify

from .irb import c, add, mul, tensor, kernel_func, module

i, j, bx = Var("i"), Var("j"), Var("bx")


def lt(a, b_):
    return Binary("<", a, b_, "bool")


def ge0(a):
    return Binary(">=", a, c(0), "bool")


def kernel_body(mod):
    return mod.funcs[0].body.stmts[0].body


def run(pass_fn, params, grid, stmts):
    func, _ = kernel_func("k", params, grid, stmts)
    mod = module(func)
    verify(mod)
    out = pass_fn(mod)
    verify(out)
    body = kernel_body(out)
    return body.stmts if isinstance(body, Seq) else (body,)


# ----------------------------------------------------------------------------- predicate

def test_in_bounds_constant_tiles_get_no_guard():
    A, B = tensor("A", (8, 16)), tensor("B", (8, 16))
    body = For(i, c(0), c(4), "parallel",
               Store(B, (add(mul(bx, c(4)), i), c(3)), Load(A, (add(mul(bx, c(4)), i), c(3)),
                                                           "float32")))
    (out,) = run(predicate, (A, B), (c(2),), [body])
    assert out == body


def test_ragged_store_and_load_share_one_guard():
    A, B = tensor("A", (10,)), tensor("B", (10,))
    idx = add(mul(bx, c(4)), i)
    body = For(i, c(0), c(4), "parallel",
               Store(B, (idx,), Binary("+", Load(A, (idx,), "float32"),
                                       Load(B, (idx,), "float32"), "float32")))
    (out,) = run(predicate, (A, B), (c(3),), [body])
    guarded = out.body
    assert isinstance(guarded, If) and guarded.cond == lt(idx, c(10))
    # Both loads use the store's index: the store guard covers them, no Select.
    assert not any(isinstance(n, Select) for n in walk(guarded))


def test_loads_into_local_tile_become_selects():
    A = tensor("A", (10,))
    S = tensor("S", (4,), scope="shared")
    idx = add(mul(bx, c(4)), i)
    body = For(i, c(0), c(4), "parallel", Store(S, (i,), Load(A, (idx,), "float32")))
    (alloc, out) = run(predicate, (A,), (c(3),), [Alloc(S), body])
    assert out.body == Store(S, (i,), Select(lt(idx, c(10)), Load(A, (idx,), "float32"),
                                             Const(0.0, "float32"), "float32"))


def test_symbolic_extent_loop_is_proved_in_bounds():
    A = tensor("A", ("N",))
    body = For(i, c(0), Var("N"), "serial", Store(A, (i,), Const(1.0, "float32")))
    (out,) = run(predicate, (A,), (c(1),), [body])
    assert out == body


def test_negative_offsets_get_a_lower_guard():
    A = tensor("A", (8,))
    idx = Binary("-", i, c(1), "int32")
    body = For(i, c(0), c(8), "serial", Store(A, (idx,), Const(1.0, "float32")))
    (out,) = run(predicate, (A,), (c(1),), [body])
    assert out.body == If(ge0(idx), Store(A, (idx,), Const(1.0, "float32")))


def test_guard_on_outer_index_is_hoisted_out_of_inner_loop():
    C = tensor("C", (10, 10))
    row, col = add(mul(bx, c(4)), i), add(mul(bx, c(4)), j)
    st = Store(C, (row, col), Const(0.0, "float32"))
    body = For(i, c(0), c(4), "parallel", For(j, c(0), c(4), "parallel", st))
    (out,) = run(predicate, (C,), (c(3),), [body])
    # for i: if row < 10: for j: if col < 10: store
    assert isinstance(out.body, If) and out.body.cond == lt(row, c(10))
    inner = out.body.then_body
    assert isinstance(inner, For) and inner.body == If(lt(col, c(10)), st)


def test_user_if_then_else_guard_is_respected():
    A, B = tensor("A", (10,)), tensor("B", (12,))
    cond = lt(i, c(10))
    sel = Select(cond, Load(A, (i,), "float32"), Const(0.0, "float32"), "float32")
    body = For(i, c(0), c(12), "serial", Store(B, (i,), sel))
    (out,) = run(predicate, (A, B), (c(1),), [body])
    assert out == body


def test_atomics_are_guarded():
    C = tensor("C", (5,))
    idx = add(mul(bx, c(4)), i)
    body = For(i, c(0), c(4), "parallel", Atomic("add", C, (idx,), Const(1.0, "float32")))
    (out,) = run(predicate, (C,), (c(2),), [body])
    assert out.body == If(lt(idx, c(5)), body.body)


def test_indirect_index_guarded_inside_out():
    """KV[table[b]] with table's index ragged: the inner load is guarded by a Select, and
    the outer load's index (which holds that Select) is guarded too."""
    table, KV, O = tensor("table", (3,), "int32"), tensor("KV", (7,)), tensor("O", (4,))
    inner = Load(table, (i,), "int32")
    body = For(i, c(0), c(4), "serial", Store(O, (i,), Load(KV, (inner,), "float32")))
    (out,) = run(predicate, (table, KV, O), (c(1),), [body])
    value = out.body.value
    guarded_inner = Select(lt(i, c(3)), inner, c(0), "int32")
    assert value.cond == Binary("and", ge0(guarded_inner), lt(guarded_inner, c(7)), "bool")


def test_local_buffer_surely_out_of_bounds_is_a_user_error():
    S = tensor("S", (8,), scope="shared")
    span = Span("k.tl", 12, 9, 12, 17)
    bad = For(i, c(0), c(9), "serial", Store(S, (i,), Const(0.0, "float32"), span=span))
    with pytest.raises(TileLangError) as info:
        run(predicate, (), (c(1),), [Alloc(S), bad])
    assert info.value.code == "TL0402"
    assert info.value.diagnostics[0].primary.line == 12
    assert "0..8" in str(info.value)
    # The same access under the user's own guard is fine.
    ok = For(i, c(0), c(9), "serial", If(lt(i, c(8)), bad.body))
    run(predicate, (), (c(1),), [Alloc(S), ok])


# ----------------------------------------------------------------------------- vectorize

def test_innermost_constant_parallel_loop_is_vectorized():
    C = tensor("C", (4, 8))
    st = Store(C, (i, j), Const(0.0, "float32"))
    nest = For(i, c(0), c(4), "parallel", For(j, c(0), c(8), "parallel", st))
    (out,) = run(vectorize, (C,), (c(1),), [nest])
    assert out.kind == "serial" and out.body.kind == "vectorized"


def test_dynamic_extent_parallel_loop_becomes_serial_and_pipelined_too():
    C = tensor("C", ("N",))
    k = Var("k")
    loop = For(k, c(0), c(2), "pipelined",
               For(i, c(0), Var("N"), "parallel", Store(C, (i,), Const(0.0, "float32"))),
               annotations=(("num_stages", 3),))
    (out,) = run(vectorize, (C,), (c(1),), [loop])
    assert out.kind == "serial" and out.annotations == ()
    assert out.body.kind == "serial"


def test_other_loop_kinds_are_kept():
    C = tensor("C", (4,))
    for kind in ("serial", "unroll", "vectorized"):
        loop = For(i, c(0), c(4), kind, Store(C, (i,), Const(0.0, "float32")))
        (out,) = run(vectorize, (C,), (c(1),), [loop])
        assert out.kind == kind


# ----------------------------------------------------------------------------- dce

def test_unused_let_and_never_read_buffer_are_removed():
    C = tensor("C", (4,))
    S = tensor("S", (4,), scope="shared")
    t, u = Var("t"), Var("u")
    stmts = [Let(t, c(3)), Let(u, add(t, c(1))), Alloc(S),
             For(i, c(0), c(4), "serial", Store(S, (i,), Const(1.0, "float32"))),
             Store(S, (c(0),), Const(2.0, "float32")),
             Store(C, (c(0),), Const(5.0, "float32"))]
    out = run(dce, (C,), (c(1),), stmts)
    assert out == (Store(C, (c(0),), Const(5.0, "float32")),)


def test_let_feeding_a_kept_store_stays():
    C = tensor("C", (4,))
    t = Var("t")
    stmts = [Let(t, c(3)), Store(C, (t,), Const(5.0, "float32"))]
    assert run(dce, (C,), (c(1),), stmts) == tuple(stmts)


def test_read_local_buffer_and_atomics_are_kept():
    C = tensor("C", (4,))
    S = tensor("S", (4,), scope="fragment")
    stmts = [Alloc(S), Store(S, (c(0),), Const(1.0, "float32")),
             Atomic("add", C, (c(1),), Load(S, (c(0),), "float32"))]
    assert run(dce, (C,), (c(1),), stmts) == tuple(stmts)


def test_empty_loops_and_ifs_are_removed_and_else_only_if_is_inverted():
    C = tensor("C", (4,))
    cond = lt(Var("bx"), c(2))
    keep = Store(C, (c(0),), Const(1.0, "float32"))
    stmts = [For(i, c(0), c(4), "serial", Seq(())), If(cond, Seq(())),
             If(cond, Seq(()), keep), Seq((Seq(()),))]
    out = run(dce, (C,), (c(4),), stmts)
    assert out == (If(Unary("not", cond, "bool"), keep),)


def test_dce_keeps_global_workspace_allocs():
    C = tensor("C", (4,))
    W = tensor("W", (4,))
    func, _ = kernel_func("k", (C,), (c(1),), [Store(C, (c(0),), Const(1.0, "float32"))])
    func = func.__class__(func.name, func.params, func.symbols,
                          Seq((Alloc(W),) + func.body.stmts))
    out = dce(module(func))
    assert out.funcs[0].body.stmts[0] == Alloc(W)



def test_let_snapshot_of_memory_does_not_cancel_a_later_load():
    """x = n; n += 1; A[x - n]: the two loads of n differ (the index is -1), so x - n
    must not cancel to 0."""
    n = tensor("n", (), "int32", scope="var")
    A = tensor("A", (1,))
    x = Var("x")
    idx = Binary("-", x, Load(n, (), "int32"), "int32")
    stmts = [Alloc(n, c(0)), Let(x, Load(n, (), "int32")),
             Store(n, (), add(Load(n, (), "int32"), c(1))),
             Store(A, (idx,), Const(1.0, "float32"))]
    out = run(predicate, (A,), (c(1),), stmts)
    assert isinstance(out[-1], If)
