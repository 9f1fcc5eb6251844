"""TL02xx: types, dtypes and shapes."""
from .diag_helpers import BODY_LINE, HEADER, check, check_at, error_of, kernel_source

L = BODY_LINE


def test_tl0201_mixed_dtypes():
    # TVM's promotion converts fp16 to fp32; the strict option keeps the old error
    src = kernel_source("F[0, 0] = F[0, 0] + H[0, 0]")
    d = check_at(src, "TL0201", "mixed dtypes: float32 and float16", L, "+", help="T.cast",
                 strict_dtypes=True)
    assert [l.message for l in d.secondary] == ["float32", "float16"]


def test_tl0201_two_float8_formats_have_no_rule():
    src = kernel_source('E = T.alloc_fragment((4,), "float8_e4m3fn")',
                        'G = T.alloc_fragment((4,), "float8_e5m2")', "R[0] = E[0] + G[0]")
    check_at(src, "TL0201", "mixed dtypes: float8_e4m3fn and float8_e5m2", L + 2, "+")


def test_tl0201_float_literal_with_int():
    src = kernel_source("y = x * 0.5")
    check_at(src, "TL0201", "a float literal cannot be used as int32", L, "0.5",
             strict_dtypes=True)


def test_tl0202_true_division_of_ints():
    src = kernel_source("y = x / 2")
    check_at(src, "TL0202", "`/` on int32 values", L, "/", help="use `//`")


def test_tl0203_gemm_k_mismatch():
    src = kernel_source('G = T.alloc_shared((32, 64), "float32")', "T.gemm(S, G, F)")
    d = check_at(src, "TL0203", "shape mismatch in T.gemm: S is (64, 64) but G is (32, 64)",
                 L + 1, "S", help="K extents of A and B must agree")
    assert d.primary.message == "K = 64 here"
    assert d.secondary[0].message == "K = 32 here"


def test_tl0203_gemm_respects_transpose():
    src = kernel_source('G = T.alloc_shared((32, 64), "float32")',
                        'C = T.alloc_fragment((64, 32), "float32")',
                        "T.gemm(S, G, C, transpose_B=True)", "T.gemm(S, G, F, transpose_B=True)")
    check_at(src, "TL0203", "F is (64, 64) but A @ B is (64, 32)",
             L + 3, "F")


def test_tl0204_bad_dtype_suggests():
    src = kernel_source('Q = T.alloc_shared((4,), "flaot32")')
    check_at(src, "TL0204", 'unknown dtype "flaot32"', L, '"flaot32"', help='"float32"')


def test_tl0205_condition_not_bool():
    src = kernel_source("if x:", "    pass")
    check_at(src, "TL0205", "condition must be bool, found int32", L, "x")


def test_tl0206_float_index():
    src = kernel_source("S[v, 0] = 1.0")
    check_at(src, "TL0206", "expected an integer index, found a float32 value", L, "v")


def test_tl0207_wrong_index_count():
    src = kernel_source("S[0] = 1.0")
    check_at(src, "TL0207", "`S` has 2 dimensions but 1 index was given", L, "S[0]")


def test_tl0207_var_takes_no_index():
    src = kernel_source("v[0] = 1.0")
    check_at(src, "TL0207", "`v` is a T.alloc_var scalar", L, "v[0]")


def test_tl0208_alloc_shape_not_constant():
    src = kernel_source('Q = T.alloc_shared((x, 4), "float32")')
    check_at(src, "TL0208", "shape of a block-local buffer", L, "x")


def test_tl0209_copy_extents_mismatch():
    src = kernel_source("T.copy(S[0:32, 0:64], F)")
    d = check_at(src, "TL0209", "regions of T.copy do not match: S is (32, 64) but F is (64, 64)",
                 L, "F")
    assert d.secondary[0].message == "(32, 64) here"


def test_tl0210_gemm_accumulator_dtype():
    src = kernel_source('I = T.alloc_fragment((64, 64), "int32")', "T.gemm(S, S, I)")
    check_at(src, "TL0210", "accumulator `I` is int32", L + 1, "I")


def test_tl0211_reduce_dim_out_of_range():
    src = kernel_source("T.reduce_max(S, R, dim=2)")
    check_at(src, "TL0211", "dim 2 is out of range for 2-d `S`", L, "2")


def test_tl0212_reduce_destination_shape():
    src = kernel_source('R2 = T.alloc_fragment((32,), "float32")', "T.reduce_sum(S, R2, dim=1)")
    check_at(src, "TL0212", "gives (64,), but `R2` is (32,)", L + 1, "R2")


def test_tl0213_tensor_shape_expression():
    # an integer expression of sizes is a shape entry (`N * 2`); a float one is not
    src = HEADER.replace('A: T.Tensor((N, 64)', 'A: T.Tensor((N * 0.5, 64)')
    check_at(src, "TL0213", "a tensor shape entry must be", 8, "N * 0.5")


def test_tl0214_store_dtype():
    src = kernel_source("H[0, 0] = F[0, 0]")
    check_at(src, "TL0214", "value has dtype float32 but `H` is float16", L, "F[0, 0]",
             help="T.cast", strict_dtypes=True)


def test_tl0215_buffer_as_scalar():
    src = kernel_source("y = S + 1")
    check_at(src, "TL0215", "expected a scalar value, found a buffer", L, "S")


def test_tl0216_math_on_integer():
    src = kernel_source("y = T.exp(x)")
    check_at(src, "TL0216", "T.exp needs a float argument, found int32", L, "x", occurrence=1)


def test_tl0217_bad_parameter_annotation():
    src = HEADER.replace("x: T.int32)", "x: BLOCK)")
    check_at(src, "TL0217", "parameter `x` is annotated with a number", 8, "BLOCK")


def test_tl0217_missing_annotation():
    src = HEADER.replace("x: T.int32)", "x)")
    check_at(src, "TL0217", "parameter `x` has no type annotation", 8, "x")


def test_tl0218_num_stages_not_constant():
    src = kernel_source("for k in T.Pipelined(4, num_stages=x):", "    pass")
    check_at(src, "TL0218", "num_stages must be an integer constant", L, "x")


def test_tl0219_slice_outside_local_buffer():
    src = kernel_source("T.fill(S[60:68, 0:4], 0)")
    check_at(src, "TL0219", "slice 60:68 is outside dimension 0 of `S`", L, "60:68")


def test_tl0216_literal_out_of_range():
    src = kernel_source("y = x + 4000000000")
    check_at(src, "TL0216", "literal 4000000000 does not fit in int32", L, "4000000000")
