"""TL03xx: tile operations and kernel structure."""
from .diag_helpers import BODY_LINE, HEADER, check, check_at, error_of, kernel_source

L = BODY_LINE
PRE = L - 6          # the `with T.Kernel` line of HEADER


def _before_kernel(*lines):
    """HEADER with `lines` inserted before its `with T.Kernel` line."""
    head, _, rest = HEADER.partition("    with T.Kernel")
    return head + "".join("    " + l + "\n" for l in lines) + "    with T.Kernel" + rest


def test_tl0301_missing_kernel():
    src = "import tilelang.language as T\n\n@T.prim_func\ndef empty(x: T.int32):\n    y = x\n"
    check_at(src, "TL0301", "kernel `empty` has no `with T.Kernel(...)`", 4, "empty")


def test_tl0302_statement_between_grids():
    src = HEADER + "    y = x * 2\n    with T.Kernel(4) as by:\n        pass\n"
    d = check_at(src, "TL0302", "statement between two `T.Kernel` grids", L, "y = x * 2")
    assert d.secondary[0].line == PRE


def test_a_second_grid_is_a_kernel_of_two_grids():
    from tilelang.frontend import parse_module
    src = HEADER + "    with T.Kernel(4) as bx:\n        pass\n"
    (f,) = parse_module(src, "k.tl").funcs
    assert [len(k.grid) for k in f.grids()] == [1, 1]
    assert [k.block_vars[0].name for k in f.grids()] == ["bx", "bx_1"]


def test_tl0303_nested_kernel():
    src = kernel_source("with T.Kernel(4) as by:", "    pass")
    check_at(src, "TL0303", "`T.Kernel` inside another statement", L, "with T.Kernel(4) as by:")


def test_tl0304_iterator_outside_for():
    src = kernel_source("y = T.Parallel(4)")
    check_at(src, "TL0304", "`T.Parallel` can only be the iterable of a for loop", L,
             "T.Parallel(4)")


def test_tl0305_tile_op_outside_kernel():
    src = _before_kernel("T.copy(A, B)")
    check_at(src, "TL0305", "`T.copy` outside `T.Kernel`", PRE, "T.copy(A, B)")


def test_tl0305_store_outside_kernel():
    src = _before_kernel("A[0, 0] = 1.0")
    check_at(src, "TL0305", "store outside `T.Kernel`", PRE, "A[0, 0] = 1.0")


def test_tl0306_alloc_outside_kernel():
    src = _before_kernel('Q = T.alloc_shared((4,), "float32")')
    check_at(src, "TL0306", "`T.alloc_shared` outside `T.Kernel`", PRE, "Q")


def test_tl0307_return_in_kernel():
    src = kernel_source("return x")
    check_at(src, "TL0307", "`return` in a kernel", L, "return x")


def test_tl0308_wrong_arity():
    src = kernel_source("T.copy(A)")
    check_at(src, "TL0308", "T.copy is missing the argument `dst`", L, "T.copy(A)",
             help="signature: T.copy(src, dst, *, eviction_policy=None)")


def test_tl0308_too_many_arguments():
    src = kernel_source("T.clear(F, S)")
    check_at(src, "TL0308", "T.clear takes 1 positional arguments but 2 were given", L, "S")


def test_tl0309_unknown_keyword():
    src = kernel_source("T.gemm(S, S, F, trans_A=True)")
    check_at(src, "TL0309", "T.gemm got an unexpected keyword argument `trans_A`", L,
             "trans_A", help="did you mean `transpose_A`?")


def test_tl0310_statement_before_kernel():
    src = _before_kernel("for i in range(4):", "    y = i")
    check_at(src, "TL0310", "must be inside `T.Kernel`", PRE, "for i in range(4):")


def test_tl0310_statement_after_kernel():
    src = HEADER + "    y = x + 1\n"
    check_at(src, "TL0310", "statement after `T.Kernel`", L, "y = x + 1")


def test_tl0311_loop_target_count():
    src = kernel_source("for i, j in T.Parallel(4):", "    pass")
    check_at(src, "TL0311", "T.Parallel gives 1 loop variable but 2 are bound", L, "i, j")


def test_tl0311_kernel_target_count():
    src = HEADER.replace("threads=128) as bx", "threads=128) as (bx, by)")
    check_at(src, "TL0311", "T.Kernel has 1 grid dimension but 2 block indices", PRE,
             "(bx, by)")


def test_tl0312_not_iterable():
    src = kernel_source("for i in N:", "    pass")
    check_at(src, "TL0312", "cannot loop over this expression", L, "N")


def test_tl0313_bad_with():
    src = kernel_source("with T.Parallel(4):", "    pass")
    check_at(src, "TL0313", "the only `with` statement is `with T.Kernel(...)`", L,
             "T.Parallel(4)")


def test_tl0314_copy_needs_an_extent():
    # (two start corners are one element, as in TileLang: T.copy(A[0, 0], B[0, 0]))
    src = kernel_source("T.copy(A[0:x, 0], B[0:x, 0])")
    check_at(src, "TL0314", "both sides are start corners", L, "B[0:x, 0]")


def test_tl0315_global_alloc_in_kernel():
    src = kernel_source('W = T.alloc_global((N,), "float32")')
    check_at(src, "TL0315", "`T.alloc_global` inside `T.Kernel`", L, "W")


def test_tl0316_atomic_needs_element():
    src = kernel_source("T.atomic_add(v, 1.0)")
    check_at(src, "TL0316", "the destination of T.atomic_add must be an element", L, "v")


def test_tl0317_undecorated_function():
    src = HEADER.replace("@T.prim_func\n", "")
    check_at(src, "TL0317", "function `k` needs @T.prim_func or @T.macro", 7, "k")


def test_tl0317_unknown_decorator():
    src = HEADER.replace("@T.prim_func", "@T.Kernel")
    check_at(src, "TL0317", "decorated with @T.prim_func or @T.macro", 7, "@T.Kernel")


def test_tl0390_argument_out_of_range():
    src = HEADER.replace("threads=128", "threads=-1")
    check_at(src, "TL0390", "threads must be at least 1, got -1", PRE, "-1")
    src = kernel_source("for i in T.Pipelined(4, num_stages=-2):", "    A[i, 0] = 1.0")
    check_at(src, "TL0390", "num_stages must be at least 0, got -2", L, "-2")
    src = HEADER.replace("T.Kernel(T.ceildiv(N, BLOCK)", "T.Kernel(-4")
    check_at(src, "TL0390", "grid size -4", PRE, "-4")


def test_tl0391_dependent_parallel_iterations():
    src = kernel_source("for i in T.Parallel(63):", "    R[i + 1] = R[i + 1] + R[i]")
    check_at(src, "TL0391", "iteration i=1 reads an element of `R` that iteration i=0 writes",
             L + 1, "R[i]")
