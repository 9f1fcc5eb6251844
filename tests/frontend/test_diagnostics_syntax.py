"""TL00xx: every syntax diagnostic, with its message, position and caret."""
from .diag_helpers import BODY_LINE, HEADER, check, check_at, error_of, kernel_source

L = BODY_LINE
INDENT = " " * 8


def test_tl0001_missing_colon_points_at_end_of_line():
    src = kernel_source("for i in range(4)", "    pass")
    err = error_of(src)
    check(err, "TL0001", "expected ':', found end of line", L, len(INDENT_FOR) + 1)


INDENT_FOR = "        for i in range(4)"


def test_tl0001_names_the_real_token():
    src = kernel_source("T.copy(A B)")
    d = check_at(src, "TL0001", "found `B`", L, "B", occurrence=0)
    assert d.message == "expected an operator, ')' or ',', found `B`"
    assert d.help == "is a comma or an operator missing before it?"


def test_tl0001_keyword_out_of_place():
    src = HEADER + "else:\n    pass\n"
    check_at(src, "TL0001", "`else` without a matching `if`", L, "else")


def test_tl0001_keyword_used_as_a_name():
    src = kernel_source("in = 1")
    check_at(src, "TL0001", "keyword `in` cannot be used here", L, "in")


def test_tl0002_unclosed_bracket_at_end_of_file():
    src = kernel_source("T.copy(A[0, 0], S")
    check_at(src, "TL0002", "'(' was never closed", L, "(", help="add the matching ')'")


def test_tl0002_unclosed_bracket_before_next_statement():
    src = kernel_source("T.copy(A[0, 0], S", "T.clear(F)")
    err = error_of(src)
    d = check_at(src, "TL0002", "'(' was never closed", L, "(")
    assert d.secondary and d.secondary[0].line == L + 1
    assert err.code == "TL0002"


def test_tl0003_mismatched_bracket():
    src = kernel_source("T.copy(A[0, 0), S)")
    d = check_at(src, "TL0003", "closing ')' does not match '['", L, ")")
    assert d.secondary[0].col == src.splitlines()[L - 1].index("[") + 1


def test_tl0003_unmatched_bracket():
    src = kernel_source("T.clear(F))")
    check_at(src, "TL0003", "unmatched ')'", L, ")", occurrence=1)


def test_tl0004_unexpected_character():
    src = kernel_source("y = x $ 2")
    check_at(src, "TL0004", "unexpected character `$`", L, "$")


def test_tl0005_bad_dedent():
    src = kernel_source("for i in range(4):", "    y = i", "  z = 1")
    check(error_of(src), "TL0005", "unindent does not match", L + 2, 1, 10)


def test_tl0006_tab_indentation():
    src = kernel_source("for i in range(4):") + INDENT + "\ty = i\n"
    check(error_of(src), "TL0006", "tab character in indentation", L + 1, 9)


def test_tl0007_unexpected_end_of_file():
    src = "import tilelang.language as T\n\n@T.prim_func\n"
    d = check(error_of(src), "TL0007", "unexpected end of file, expected '@' or `def`", 3, 13)
    assert d.primary.message == "the file ends here"


def test_tl0008_unexpected_indent():
    src = kernel_source("y = 1", "    z = 2")
    check(error_of(src), "TL0008", "unexpected indent", L + 1, 1, 12)


def test_tl0009_unsupported_syntax():
    # a dict is a compile-time value with string keys (keywords for a `**` call)
    src = kernel_source("y = {x: 2}")
    check_at(src, "TL0009", "a dict in a kernel has string keys", L, "x")


def test_tl0010_unterminated_string():
    src = kernel_source('Q = T.alloc_shared((4,), "float32)')
    check_at(src, "TL0010", "unterminated string literal", L, '"float32)')


def test_tl0011_expected_indented_block():
    src = kernel_source("for i in range(4):", "y = 1")
    check_at(src, "TL0011", "expected an indented block", L + 1, "y",
             help="use `pass` for an empty block")
