"""TL01xx: names and scopes."""
from .diag_helpers import BODY_LINE, HEADER, check, check_at, error_of, kernel_source

L = BODY_LINE


def test_tl0101_unknown_name_suggests():
    src = kernel_source("S[0, 0] = AA[0, 0]")
    check_at(src, "TL0101", "unknown name `AA`", L, "AA", help="did you mean `A`?")


def test_tl0101_missing_import_of_T():
    src = "N = 4\n\n@T.prim_func\ndef f():\n    pass\n"
    check_at(src, "TL0101", "unknown name `T`", 3, "T", help="import tilelang.language as T")


def test_tl0102_unknown_T_function():
    src = kernel_source("T.cpy(A, S)")
    check_at(src, "TL0102", "`T.cpy` is not part of the tile language", L, "cpy",
             help="`T.copy`")


def test_tl0103_let_rebound():
    # (a compile-time value such as `y = 1` may be rebound, as in Python: see tests/compat)
    src = kernel_source("y = x + 1", "y = 2")
    d = check_at(src, "TL0103", "`y` is already bound", L + 1, "y", help="T.alloc_var")
    assert d.secondary[0].line == L


def test_tl0103_augmented_let():
    src = kernel_source("y = x * 3", "y += 2")
    check_at(src, "TL0103", "`y` is a let-binding", L + 1, "y")


def test_tl0104_loop_shadows_block_index():
    src = kernel_source("for bx in T.Parallel(4):", "    pass")
    check_at(src, "TL0104", "loop variable `bx` shadows the block index `bx`", L, "bx")


def test_tl0104_nested_loop_reuses_name():
    src = kernel_source("for i in range(4):", "    for i in range(4):", "        pass")
    check_at(src, "TL0104", "shadows the loop variable `i`", L + 1, "i")


def test_tl0105_assign_to_buffer():
    src = kernel_source("S = 1.0")
    check_at(src, "TL0105", "cannot assign to buffer `S`", L, "S", help="T.fill")


def test_tl0105_store_into_scalar():
    src = kernel_source("x[0] = 1")
    check_at(src, "TL0105", "cannot store into an int32 value", L, "x")


def test_tl0105_assign_to_module_constant():
    src = kernel_source("BLOCK = 32")
    check_at(src, "TL0105", "cannot assign to `BLOCK`", L, "BLOCK")


def test_tl0106_unknown_define():
    err = error_of(kernel_source("pass"), defines={"BLOK": "32"})
    d = err.diagnostics[0]
    assert d.code == "TL0106" and "-D BLOK" in d.message and d.help == "did you mean `BLOCK`?"
    assert "Traceback" not in err.render()


def test_tl0107_symbol_not_in_signature():
    src = HEADER.replace('N = T.dynamic("N")', 'N = T.dynamic("N")\nK = T.dynamic("K")')
    src += "        y = K * 2\n"
    check_at(src, "TL0107", "symbolic size `K` is not in the shape", L + 1, "K")


def test_tl0108_macro_used_as_value():
    src = HEADER.replace("@T.prim_func", "@T.macro\ndef helper(a):\n    pass\n\n\n@T.prim_func")
    src += "        y = helper(1)\n"
    # a macro that ends with `return value` may be used as a value (tests/compat)
    check_at(src, "TL0108", "macro `helper` returns no value", L + 5, "helper(1)",
             help="return <value>")


def test_tl0108_recursive_macro():
    src = HEADER.replace("@T.prim_func", "@T.macro\ndef rec(a):\n    rec(a)\n\n\n@T.prim_func")
    src += "        rec(1)\n"
    check_at(src, "TL0108", "macro `rec` calls itself", 9, "rec(a)")


def test_tl0109_duplicate_parameter():
    src = HEADER.replace("x: T.int32)", "x: T.int32, x: T.float32)")
    check_at(src, "TL0109", "duplicate parameter `x`", 8, "x", occurrence=1)


def test_tl0109_duplicate_constant():
    src = HEADER.replace("BLOCK = 64", "BLOCK = 64\nBLOCK = 32")
    check_at(src, "TL0109", "`BLOCK` is defined twice", 5, "BLOCK")


def test_tl0110_other_module_in_kernel():
    src = "import numpy as np\n" + kernel_source("y = np.exp(1.0)")
    check_at(src, "TL0110", "module `numpy` cannot be used in a kernel", L + 1, "np.exp")


def test_tl0110_module_level_statement():
    src = HEADER.replace("BLOCK = 64", "for i in range(3):\n    pass")
    check_at(src, "TL0110", "only imports, constants", 4, "for i in range(3):\n"[:-1])


def test_tl0101_name_from_an_ended_block():
    src = kernel_source("if x > 0:", "    y = 1.0", "else:", "    y = 2.0", "S[0, 0] = y")
    check_at(src, "TL0101", "unknown name `y`", L + 4, "y",
             help=f"`y` was bound in a block that has ended (line {L + 3})")


def test_tl0109_buffer_declared_twice():
    src = kernel_source('Q = T.alloc_shared((4,), "float32")', 'Q = T.alloc_shared((8,), "float32")')
    d = check_at(src, "TL0109", "`Q` is already defined", L + 1, "Q")
    assert d.secondary[0].line == L
