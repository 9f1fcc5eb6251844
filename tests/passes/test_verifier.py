"""The verifier accepts well-formed IR and names the broken invariant (and where) otherwise."""
from __future__ import annotations

from dataclasses import replace

import pytest

from tilelang.diagnostics import InternalError
from tilelang.ir import (Const, Var, Binary, Cast, Select, Load, Seq, Let, Alloc, Store, For, If,
                         Module, Copy, Fill, Reduce, Region, Span)
from tilelang.ir.verifier import verify

from .irb import c, tensor, whole, window, kernel_func, module

SPAN = Span("k.tl", 7, 9, 7, 20)
A = tensor("A", (8, 4))
B = tensor("B", (8,))
S = tensor("S", (8, 4), scope="shared")
i, bx = Var("i"), Var("bx")


def func_with(*stmts, params=(A, B)) -> Module:
    func, _ = kernel_func("k", params, (c(1),), stmts)
    return module(func)


def load(buf, *idx, dtype=None):
    return Load(buf, tuple(idx), dtype or buf.dtype)


def row_sum_stmts():
    return [Alloc(S), Copy(whole(A), whole(S)),
            For(i, c(0), c(8), "parallel",
                Store(B, (i,), Binary("+", load(S, i, c(0)), load(S, i, c(1)), "float32")))]


def test_valid_module_passes():
    verify(func_with(*row_sum_stmts()))


def expect(mod, fragment):
    with pytest.raises(InternalError) as info:
        verify(mod)
    assert fragment in str(info.value)
    return str(info.value)


def test_unbound_variable_named_with_its_span():
    j = Var("j", span=SPAN)
    text = expect(func_with(Store(B, (j,), Const(1.0, "float32"))), "'j' is used but not bound")
    assert "k.tl:7:9" in text


def test_loop_variable_out_of_scope_after_loop():
    loop = For(i, c(0), c(8), "serial", Store(B, (i,), Const(0.0, "float32")))
    expect(func_with(loop, Store(B, (i,), Const(1.0, "float32"))), "'i' is used but not bound")


def test_rebinding_in_scope():
    inner = For(i, c(0), c(2), "serial", Store(B, (i,), Const(0.0, "float32")))
    expect(func_with(For(i, c(0), c(2), "serial", inner)), "bound again")


def test_let_scope_is_rest_of_block():
    x = Var("x")
    ok = func_with(Let(x, c(3)), Store(B, (x,), Const(1.0, "float32")))
    verify(ok)
    bad = func_with(Store(B, (x,), Const(1.0, "float32")), Let(x, c(3)))
    expect(bad, "'x' is used but not bound")


def test_buffer_must_be_param_or_enclosing_alloc():
    expect(func_with(Store(S, (c(0), c(0)), Const(1.0, "float32"))), "buffer 'S' is used")
    nested = Seq((If(Const(True, "bool"), Alloc(S)), Store(S, (c(0), c(0)),
                                                          Const(1.0, "float32"))))
    expect(func_with(nested), "buffer 'S' is used")


def test_index_count_must_match_rank():
    expect(func_with(Store(A, (c(0),), Const(1.0, "float32"))), "1 indices for rank-2")


def test_binary_operands_must_agree():
    bad = Binary("+", Const(1.0, "float32"), Const(1, "int32"), "float32")
    expect(func_with(Store(B, (c(0),), bad)), "operands of '+' disagree")


def test_comparison_is_bool():
    bad = Binary("<", c(1), c(2), "int32")
    expect(func_with(If(bad, Seq(()))), "expected bool")


def test_select_arms_agree():
    bad = Select(Const(True, "bool"), Const(1.0, "float32"), Const(1.0, "float16"), "float32")
    expect(func_with(Store(B, (c(0),), bad)), "select arms disagree")


def test_store_dtype_matches_buffer():
    expect(func_with(Store(B, (c(0),), c(1))), "store of a int32 value into float32")


def test_load_dtype_matches_buffer():
    expect(func_with(Store(B, (c(0),), Cast(load(A, c(0), c(0), dtype="int32"), "float32"))),
           "load of float32 buffer 'A' has dtype int32")


def test_grids_follow_the_prologue():
    func = module(*kernel_func("k", (A,), (c(1),), [])[:1]).funcs[0]
    verify(Module((replace(func, body=Seq(func.body.stmts * 2)),)))    # two grids
    none = replace(func, body=Seq(()))
    expect(Module((none,)), "no T.Kernel block")
    let = Let(Var("n", "int32"), c(1))
    between = replace(func, body=Seq(func.body.stmts + (let,) + func.body.stmts))
    expect(Module((between,)), "between or after its T.Kernel grids")


def test_tile_op_outside_kernel():
    func = module(*kernel_func("k", (A, B), (c(1),), [])[:1]).funcs[0]
    fill = Fill(whole(B), Const(0.0, "float32"))
    bad = replace(func, body=Seq((fill,) + func.body.stmts))
    expect(Module((bad,)), "outside the T.Kernel")


def test_region_extents_positive_and_rank_matching():
    expect(func_with(Fill(Region(A, (c(0), c(0)), (8, 0)), Const(0.0, "float32"))),
           "expected a positive int")
    expect(func_with(Fill(Region(A, (c(0),), (8,)), Const(0.0, "float32"))),
           "for a rank-2 buffer")


def test_copy_shapes_must_agree():
    bad = Copy(window(A, (c(0), c(0)), (8, 2)), whole(S))
    expect(func_with(Alloc(S), bad), "copy regions disagree")


def test_reduce_destination_shape():
    R = tensor("R", (4,), scope="fragment")
    expect(func_with(Alloc(S), Alloc(R), Reduce("sum", S, R, 1)), "destination shape")
    R8 = tensor("R8", (8,), scope="fragment")
    verify(func_with(Alloc(S), Alloc(R8), Reduce("sum", S, R8, 1)))


def test_buffer_declared_differently_from_use():
    other = replace(B, dtype="float16")
    expect(func_with(Store(other, (c(0),), Const(1.0, "float16"))), "differs")


def test_block_vars_bound_inside_kernel_only():
    func, (bx_,) = kernel_func("k", (B,), (c(2),), [Store(B, (bx,), Const(0.0, "float32"))])
    verify(module(func))
    outside = Let(Var("y"), bx)
    bad = replace(func, body=Seq((outside,) + func.body.stmts))
    expect(Module((bad,)), "'bx' is used but not bound")


def test_kernel_grid_and_block_vars_counts():
    func, _ = kernel_func("k", (B,), (c(2),), [])
    kern = func.body.stmts[0]
    bad = replace(func, body=Seq((replace(kern, block_vars=()),)))
    expect(Module((bad,)), "one block variable each")

