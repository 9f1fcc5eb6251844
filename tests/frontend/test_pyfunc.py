"""parse_function: kernels written as decorated Python functions."""
import inspect

import pytest

import tilelang.language as T
from tilelang.diagnostics import TileLangError
from tilelang.frontend import parse_function, parse_module
from tilelang.ir.nodes import Const, Var, For, Store
from tilelang.ir.printer import print_module

from . import pykernels as P

DTYPE = "float32"


def _line_of(func, text):
    lines, start = inspect.getsourcelines(func)
    for k, line in enumerate(lines):
        if text in line:
            return start + k, line.index(text) + 1
    raise AssertionError(text)


def test_globals_macros_and_scalar_params():
    mod = parse_function(P.vec_scale)
    func = mod.funcs[0]
    assert func.name == "vec_scale" and func.symbols == (Var("M"),)
    assert func.params[2] == Var("alpha", "float32")
    kernel = func.body.stmts[0]
    loop = kernel.body.stmts[2]
    assert isinstance(loop, For) and loop.extent == Const(64, "int32")
    assert loop.body.value.rhs == Var("alpha", "float32")        # macro argument substituted
    assert loop.span.file == inspect.getsourcefile(P.scale_row)
    # the printed form is an ordinary .tl module
    assert parse_module(print_module(mod), "p.tl") == mod


def test_diagnostic_points_into_the_py_file():
    with pytest.raises(TileLangError) as info:
        parse_function(P.bad_mixed, strict_dtypes=True)
    d = info.value.diagnostics[0]
    line, _ = _line_of(P.bad_mixed, "B[bx * BLOCK + i] = A[")
    text = inspect.getsourcelines(P.bad_mixed)[0][line - inspect.getsourcelines(P.bad_mixed)[1]]
    assert d.code == "TL0201"
    assert (d.primary.file, d.primary.line) == (inspect.getsourcefile(P.bad_mixed), line)
    assert d.primary.col == text.index(" + B[") + 2
    rendered = info.value.render()
    assert f"pykernels.py:{line}:{d.primary.col}" in rendered
    assert "B[bx * BLOCK + i] = A[bx * BLOCK + i] + B[bx * BLOCK + i]" in rendered


def test_closure_constants_of_a_factory():
    func = parse_function(P.make_scaled_copy(16)).funcs[0]
    loop = func.body.stmts[0].body
    assert isinstance(loop, For) and loop.extent == Const(16, "int32")
    assert isinstance(loop.body, Store)


def test_nested_function_columns_are_offset_by_the_dedent():
    def make():
        @T.prim_func
        def inner(A: T.Tensor((4,), "float32")):
            with T.Kernel(1) as bx:
                A[0] = undefined_name
        return inner

    with pytest.raises(TileLangError) as info:
        parse_function(make())
    d = info.value.diagnostics[0]
    line, col = _line_of(make, "undefined_name")
    assert d.code == "TL0101" and (d.primary.line, d.primary.col) == (line, col)


def test_constants_argument_overrides_globals():
    func = parse_function(P.vec_scale, constants={"BLOCK": 32}).funcs[0]
    assert func.body.stmts[0].body.stmts[0].buffer.shape == (Const(32, "int32"),)


def test_constants_given_as_command_line_text():
    with pytest.raises(TileLangError) as info:        # alpha stays float32: now mixed
        parse_function(P.vec_scale, constants={"BLOCK": "16", "DTYPE": "bf16"},
                       strict_dtypes=True)
    assert info.value.code == "TL0201"
    func = parse_function(P.vec_scale, constants={"BLOCK": "16", "DTYPE": "float"}).funcs[0]
    alloc = func.body.stmts[0].body.stmts[0]
    assert alloc.buffer.shape == (Const(16, "int32"),) and alloc.buffer.dtype == "float32"
    assert func.params[0].dtype == "float32"

    def bf16_kernel():
        @T.prim_func
        def k(A: T.Tensor((4,), DTYPE)):
            with T.Kernel(1) as bx:
                A[0] = A[1]
        return k
    func = parse_function(bf16_kernel(), constants={"DTYPE": "bf16"}).funcs[0]
    assert func.params[0].dtype == "bfloat16"      # the annotation follows the override


def test_python_object_in_kernel_is_a_diagnostic():
    table = {"a": 1}

    @T.prim_func
    def uses_dict(A: T.Tensor((4,), "float32")):
        with T.Kernel(1) as bx:
            A[0] = table

    with pytest.raises(TileLangError) as info:
        parse_function(uses_dict)
    assert info.value.code == "TL0215"
    diag = info.value.diagnostics[0]            # a dict of str keys is a compile-time
    assert "found a dict" in diag.message       # value (for `**kwargs`), not a scalar
    assert diag.primary is not None and diag.primary.line > 0


def test_string_annotations_fall_back_to_the_source():
    ns = {}
    exec(compile("from __future__ import annotations\n"
                 "import tilelang.language as T\n"
                 "def f(A: T.Tensor((4,), 'float32')): pass\n", "<mem>", "exec"), ns)
    with pytest.raises(TileLangError) as info:       # no source file: a clear diagnostic
        parse_function(ns["f"])
    assert info.value.code == "TL0317"
