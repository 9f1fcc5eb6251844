"""The meaning of the surface syntax: what IR each construct builds."""
import math

import pytest

from tilelang.diagnostics import TileLangError
from tilelang.frontend import parse_module
from tilelang.ir import walk
from tilelang.ir.nodes import (Const, Var, Binary, Unary, Call, Cast, Select, Load, Let, Alloc,
                               Store, Atomic, For, If, Copy, Gemm, Fill, Reduce, TileAtomic,
                               Kernel, Seq)

HEAD = '''import tilelang.language as T

N = T.dynamic("N")
BLOCK = 64

@T.prim_func
def k(A: T.Tensor((N, 64), "float32"), H: T.Tensor((N,), "float16"), x: T.int32):
    with T.Kernel(T.ceildiv(N, BLOCK), threads=256) as bx:
'''


def body_of(*lines, defines=None):
    src = HEAD + "".join("        " + l + "\n" for l in lines)
    func = parse_module(src, "t.tl", defines).funcs[0]
    kernel = func.body.stmts[-1]
    assert isinstance(kernel, Kernel)
    return kernel


def stmts(kernel):
    body = kernel.body
    return list(body.stmts) if isinstance(body, Seq) else [body]


def only(kernel, cls):
    found = [n for n in walk(kernel) if isinstance(n, cls)]
    assert found, f"no {cls.__name__}"
    return found


def test_kernel_grid_threads_and_block_vars():
    kernel = body_of("pass")
    assert kernel.threads == 256
    assert kernel.block_vars == (Var("bx"),)
    assert kernel.grid == (Call("ceildiv", (Var("N"), Const(64, "int32")), "int32"),)


def test_parallel_two_extents_is_nested_parallel_loops():
    (outer,) = stmts(body_of("for i, j in T.Parallel(4, 8):", "    A[i, j] = 0.0"))
    assert outer.kind == "parallel" and outer.extent == Const(4, "int32")
    inner = outer.body
    assert isinstance(inner, For) and inner.kind == "parallel" and inner.extent.value == 8
    assert isinstance(inner.body, Store) and inner.body.value == Const(0.0, "float32")


@pytest.mark.parametrize("header, lo, extent, kind", [
    ("range(10)", 0, 10, "serial"),
    ("range(2, 10)", 2, 8, "serial"),
    ("T.serial(3)", 0, 3, "serial"),
    ("T.unroll(4)", 0, 4, "unroll"),
    ("T.vectorized(8)", 0, 8, "vectorized"),
    ("T.parallel(1, 5)", 1, 4, "parallel"),
])
def test_loop_kinds_and_bounds(header, lo, extent, kind):
    (loop,) = stmts(body_of(f"for i in {header}:", "    pass"))
    assert (loop.min.value, loop.extent.value, loop.kind) == (lo, extent, kind)


def test_serial_with_symbolic_bounds_simplifies_extent():
    (loop,) = stmts(body_of("for i in T.serial(x, x + 16):", "    pass"))
    assert loop.min == Var("x") and loop.extent == Const(16, "int32")
    (loop,) = stmts(body_of("for i in T.serial(x, N):", "    pass"))
    assert loop.extent == Binary("-", Var("N"), Var("x"), "int32")


def test_pipelined_records_num_stages():
    (loop,) = stmts(body_of("for k in T.Pipelined(T.ceildiv(N, 32), num_stages=3):",
                            "    pass"))
    assert loop.kind == "pipelined" and loop.annotations == (("num_stages", 3),)


def test_clear_is_fill_zero_and_alloc_scopes():
    s = stmts(body_of('F = T.alloc_fragment((4, 4), "float16")', "T.clear(F)",
                      'L = T.alloc_local((2,), "int8")', 'G = T.alloc_shared([8], "bfloat16")'))
    assert [a.buffer.scope for a in s if isinstance(a, Alloc)] == ["fragment", "local", "shared"]
    fill = s[1]
    assert isinstance(fill, Fill) and fill.value == Const(0.0, "float16")
    assert fill.dst.extents == (4, 4)


def test_alloc_var_is_rank0_buffer_read_and_written_by_name():
    s = stmts(body_of('acc = T.alloc_var("float32", init=1)', "acc = acc * 2.0", "acc += 1"))
    alloc = s[0]
    assert alloc.buffer.shape == () and alloc.buffer.scope == "var"
    assert alloc.init == Const(1.0, "float32")
    assert isinstance(s[1], Store) and s[1].indices == ()
    assert s[1].value == Binary("*", Load(alloc.buffer, (), "float32"), Const(2.0, "float32"),
                                "float32")
    assert s[2].value.op == "+"


def test_expression_intrinsics():
    s = stmts(body_of("a = T.if_then_else(x > 0, 1.0, -1.0)", "m = T.max(x, 3)",
                      'inf = -T.infinity("float16")', 'c = T.cast(x, "float32")',
                      "d = T.ceildiv(x, 4)", "e = T.exp2(T.log(c))", "n = T.min(a, c)"))
    assert isinstance(s[0].value, Select) and s[0].value.dtype == "float32"
    assert s[1].value == Binary("max", Var("x"), Const(3, "int32"), "int32")
    assert s[2].value == Const(-math.inf, "float16")
    assert s[3].value == Cast(Var("x"), "float32")
    assert s[4].value == Call("ceildiv", (Var("x"), Const(4, "int32")), "int32")
    assert s[5].value.name == "exp2" and s[5].value.args[0].name == "log"
    assert s[6].value.op == "min"


def test_literals_adapt_to_the_other_operand():
    (store,) = stmts(body_of("H[0] = H[0] * 2 + 0.5"))
    assert store.value.dtype == "float16"
    assert store.value.rhs == Const(0.5, "float16")
    assert store.value.lhs.rhs == Const(2.0, "float16")


def test_literal_arithmetic_folds_python_style():
    # a compile-time value is bound as a constant, as Python binds it: its uses see it
    (let,) = stmts(body_of("y = (7 // 2) * BLOCK - -1 + 0x10 + 0", "w = x + y"))
    assert let.value == Binary("+", Var("x"), Const(3 * 64 + 1 + 16, "int32"), "int32")
    (let,) = stmts(body_of("z = 1e-5 * 2", 'c = T.cast(x, "float32") * z'))
    assert let.value.rhs == Const(2e-5, "float32")


def test_chained_comparison_is_and():
    (let,) = stmts(body_of("ok = 0 <= x < N"))
    assert let.value.op == "and" and let.value.lhs.op == "<=" and let.value.rhs.op == "<"


def test_scalar_and_tile_atomics():
    s = stmts(body_of('F = T.alloc_fragment((4, 64), "float32")',
                      "T.atomic_add(A[bx, 0], F[0, 1])", "T.atomic_add(A[bx * 4, 0], F)",
                      "T.atomic_max(A[0:4, 0:64], F)"))
    assert isinstance(s[1], Atomic) and s[1].op == "add"
    assert isinstance(s[2], TileAtomic) and s[2].dst.extents == (4, 64)
    assert isinstance(s[3], TileAtomic) and s[3].op == "max"


def test_copy_regions_corner_slices_and_unit_dims():
    s = stmts(body_of('F = T.alloc_fragment((64,), "float32")',
                      "T.copy(A[bx, 0], F)", "T.copy(F, A[bx, 0:64])", "T.copy(A[bx, :], F)"))
    for copy in s[1:]:
        assert isinstance(copy, Copy)
        glob = copy.src if copy.src.buffer.name == "A" else copy.dst
        assert glob.extents == (1, 64) and glob.starts[0] == Var("bx")


def test_gemm_transpose_and_reduce():
    s = stmts(body_of('P = T.alloc_shared((32, 16), "float16")',
                      'Q = T.alloc_shared((8, 32), "float16")',
                      'C = T.alloc_fragment((16, 8), "float32")',
                      'r = T.alloc_fragment((16,), "float32")',
                      "T.gemm(P, Q, C, transpose_A=True, transpose_B=True, clear_accum=True)",
                      "T.reduce_max(C, r, dim=-1, clear=False)"))
    gemm, red = s[4], s[5]
    assert isinstance(gemm, Gemm) and gemm.transpose_a and gemm.transpose_b and gemm.clear_accum
    assert isinstance(red, Reduce) and red.dim == 1 and red.clear is False and red.kind == "max"


def test_if_elif_else_nests():
    (node,) = stmts(body_of("if x < 0:", "    A[0, 0] = 1.0", "elif x == 0:",
                            "    A[0, 0] = 2.0", "else:", "    A[0, 0] = 3.0"))
    assert isinstance(node, If) and isinstance(node.else_body, If)
    assert node.else_body.else_body.value == Const(3.0, "float32")


def test_sibling_loops_get_unique_names():
    s = stmts(body_of("for i in range(2):", "    pass", "for i in range(3):", "    pass"))
    assert [l.var.name for l in s] == ["i", "i_1"]


def test_macro_inlines_with_arguments():
    src = HEAD.replace("@T.prim_func", '''@T.macro
def bump(buf, amount):
    for i in T.Parallel(64):
        buf[0, i] = buf[0, i] + amount

@T.prim_func''') + "        bump(A, 2.0)\n        bump(A, T.cast(x, 'float32'))\n"
    kernel = parse_module(src, "m.tl").funcs[0].body.stmts[-1]
    loops = stmts(kernel)
    assert [l.var.name for l in loops] == ["i", "i_1"]
    assert loops[0].body.value.rhs == Const(2.0, "float32")
    assert loops[1].body.value.rhs == Cast(Var("x"), "float32")


def test_defines_parse_values():
    src = HEAD.replace("BLOCK = 64", "BLOCK = 64\nDT = \"float16\"\nSCALE = 0.5\nFLAG = True")
    src += '        F = T.alloc_fragment((BLOCK,), DT)\n        F[0] = SCALE\n' \
           '        if FLAG:\n            pass\n'
    mod = parse_module(src, "d.tl", {"BLOCK": "32", "DT": "bfloat16", "SCALE": 2,
                                      "FLAG": "false"})
    kernel = mod.funcs[0].body.stmts[-1]
    alloc, store = kernel.body.stmts            # `if FLAG:` with FLAG false: not built
    assert alloc.buffer.shape == (Const(32, "int32"),) and alloc.buffer.dtype == "bfloat16"
    assert store.value == Const(2.0, "bfloat16")
    with pytest.raises(TileLangError) as info:
        parse_module(src, "d.tl", {"DT": "float17"})
    assert info.value.code == "TL0204"


def test_buffer_alias_symbolic_alias_and_syntax_extras():
    src = '''import tilelang.language as T
from tilelang import language as L

M = T.symbolic("M")   # comment after code
# a comment line

@T.prim_func
def f(X: T.Buffer((M, 0x10), "float32"),
      s: T.float32,):
    """Docstring: ignored."""
    with L.Kernel(M,
                  threads=32) as (b,):
        X[b, 0] = \\
            s * 1e-3 + 2.5E2 + 1_000.0
'''
    func = parse_module(src, "x.tl").funcs[0]
    assert func.params[0].shape == (Var("M"), Const(16, "int32"))
    assert func.symbols == (Var("M"),)
    kernel = func.body.stmts[0]
    assert kernel.threads == 32
    assert kernel.body.value.rhs == Const(1000.0, "float32")


def test_function_prologue_lets_and_workspaces():
    src = HEAD.replace("    with T.Kernel", '    ws = T.alloc_global((N, 4), "float32")\n'
                       "    half = N // 2\n    with T.Kernel")
    src += "        ws[bx, 0] = T.cast(half, \"float32\")\n"
    func = parse_module(src, "p.tl").funcs[0]
    alloc, let, kernel = func.body.stmts
    assert alloc.buffer.scope == "global" and alloc.buffer.shape[0] == Var("N")
    assert isinstance(let, Let) and isinstance(kernel, Kernel)


def test_spans_point_at_source():
    (store,) = stmts(body_of("A[bx, 0] = 1.0"))
    assert (store.span.file, store.span.line, store.span.col) == ("t.tl", 9, 9)
    assert store.value.span.col == 20


@pytest.mark.parametrize("text, expected", [
    ("x + 2 * 3 - 1", "x + 6 - 1"),
    ("(x + 2) * 3", "(x + 2) * 3"),
    ("x - (2 - x)", "x - (2 - x)"),
    ("x // 2 % 3 * 4", "x // 2 % 3 * 4"),
    ("not x < 1 and x > 0 or x == 5", "not x < 1 and x > 0 or x == 5"),
    ("not (x < 1 and x > 0)", "not (x < 1 and x > 0)"),
    ("x < 1 or x > 2 and x != 3", "x < 1 or x > 2 and x != 3"),
    ("(x < 1 or x > 2) and x != 3", "(x < 1 or x > 2) and x != 3"),
    ("-x * -2 + -(x)", "-x * -2 + -x"),
])
def test_operator_precedence_round_trips(text, expected):
    from tilelang.ir.printer import print_node
    (let,) = stmts(body_of(f"y = {text}"))
    assert print_node(let.value) == expected


def test_not_after_an_operator_needs_parentheses():
    with pytest.raises(TileLangError) as info:
        body_of("y = x == not x")
    assert info.value.code == "TL0001" and "`not` cannot follow" in str(info.value)


def test_tilelang_scheduling_hints_are_accepted():
    s = stmts(body_of('Q = T.alloc_shared((64, 64), "float32", scope="shared.dyn")',
                      'R = T.alloc_fragment((64, 64), "float32")',
                      "T.copy(A[bx * 64, 0], Q, coalesced_width=4)",
                      "T.gemm(Q, Q, R, policy=0, k_pack=1)",
                      "for i, j in T.Parallel(64, 64, coalesced_width=2):",
                      "    R[i, j] = 0.0",
                      "for k in T.Pipelined(4, num_stages=2, order=[0, 1], stage=[0, 1]):",
                      "    pass"))
    assert isinstance(s[2], Copy) and isinstance(s[3], Gemm)
    # a manual pipeline schedule is kept (tcsim lowers it; the CPU target ignores it)
    assert s[5].annotations == (("num_stages", 2), ("order", (0, 1)), ("stage", (0, 1)))


def test_pipelined_schedule_with_groups():
    (loop,) = stmts(body_of("for k in T.Pipelined(8, order=[-1, 0], stage=[-1, 0], "
                            "group=[[0], [1, 2]]):", "    pass"))
    assert loop.annotation("group") == ((0,), (1, 2))
    assert loop.annotation("order") == (-1, 0) and loop.annotation("stage") == (-1, 0)


def test_pipelined_schedule_must_be_constant_lists():
    for bad in ("order=3", "order=[0, N]", "group=[0, 1]"):
        with pytest.raises(TileLangError) as info:
            body_of(f"for k in T.Pipelined(8, {bad}):", "    pass")
        assert info.value.code == "TL0218"


def test_tilelang_scheduling_statements_are_ignored():
    s = stmts(body_of("T.use_swizzle(10)", "T.use_swizzle(panel_size=10, enable=True)",
                      "A[0, 0] = 1.0"))
    assert len(s) == 1 and isinstance(s[0], Store)
