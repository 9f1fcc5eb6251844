"""Issue 16, case 4: inputs that compiled silently into something the user did not
write are now diagnosed at compile time (each with a caret at the culprit)."""
from __future__ import annotations

import pytest

from tilelang.diagnostics import TileLangError
from tilelang.frontend import parse_module

HEADER = """import tilelang.language as T

@T.prim_func
def k(A: T.Tensor((8,), "float32"), H: T.Tensor((8,), "float16"),
      E: T.Tensor((8,), "float8_e4m3"), F: T.Tensor((8,), "float8_e4m3fn")):
"""


def _kernel(body: str, grid: str = "1", threads: str = "") -> str:
    lines = "\n".join("        " + line for line in body.splitlines())
    return HEADER + f"    with T.Kernel({grid}{threads}) as bx:\n{lines}\n"


def _error(text: str) -> str:
    with pytest.raises(TileLangError) as info:
        parse_module(text, "k.tl")
    return info.value.render()


@pytest.mark.parametrize("body, code, message, caret", [
    ("H[0] = T.float16(70000.0)", "TL0216", "literal 70000.0 does not fit in float16",
     "70000.0"),
    ("H[0] = H[0] * 70000.0", "TL0216", "does not fit in float16", "70000.0"),
    ("E[0] = T.float8_e4m3(300.0)", "TL0216", "does not fit in float8_e4m3 (largest "
     "finite value 240)", "300.0"),
    ("F[0] = T.float8_e4m3fn(500.0)", "TL0216", "does not fit in float8_e4m3fn", "500.0"),
    ("A[0] = 1e39", "TL0216", "does not fit in float32", "1e39"),
    ("A[0] = 1e400", "TL0216", "literal 1e400 is beyond the range of float64", "1e400"),
    ("A[0] = T.float32(1e300 * 1e300)", "TL0216", "overflows float64", "1e300 * 1e300"),
])
def test_float_literals_that_overflow_their_dtype(body, code, message, caret):
    text = _kernel(body)
    rendered = _error(text)
    assert f"error[{code}]" in rendered and message in rendered
    line = next(ln for ln in rendered.splitlines() if "^" in ln)
    start = line.index("^")
    source_line = next(ln for ln in rendered.splitlines() if caret in ln and "|" in ln)
    assert source_line.index(caret) == start


def test_in_range_float_literals_still_round():
    mod = parse_module(_kernel("H[0] = T.float16(65504.0)\nA[0] = 3.4e38\n"
                               "E[0] = T.float8_e4m3(240.0)\n"
                               "F[0] = T.float8_e4m3fn(448.0)"), "k.tl")
    assert mod.funcs[0].name == "k"


@pytest.mark.parametrize("grid, threads, message", [
    ("-4", "", "grid size -4: a constant grid size must be at least 1"),
    ("0", "", "grid size 0"),
    ("2, 4 - 5", "", "grid size -1"),
    ("1", ", threads=-1", "threads must be at least 1, got -1"),
    ("1", ", threads=0", "threads must be at least 1, got 0"),
])
def test_grid_and_threads_must_be_positive(grid, threads, message):
    rendered = _error(_kernel("A[0] = 1.0", grid, threads))
    assert "error[TL0390]" in rendered and message in rendered


def test_num_stages_must_not_be_negative():
    body = "for i in T.Pipelined(4, num_stages=-2):\n    A[i] = 1.0"
    rendered = _error(_kernel(body))
    assert "error[TL0390]" in rendered and "num_stages must be at least 0, got -2" in rendered


def test_num_stages_zero_means_no_pipelining():
    body = "for i in T.Pipelined(4, num_stages=0):\n    A[i] = 1.0"
    parse_module(_kernel(body), "k.tl")


@pytest.mark.parametrize("text", ["", "# only a comment\n",
                                  "import tilelang.language as T\nX = 3\n"])
def test_a_source_without_kernels_is_an_error(cli_in_process, tmp_path, text):
    src = tmp_path / "empty.tl"
    src.write_text(text)
    result = cli_in_process("compile", src, "-o", tmp_path / "empty.so")
    assert result.exit_code == 1
    assert "error[TL0791]" in result.stderr and "defines no kernel" in result.stderr
    assert not (tmp_path / "empty.so").exists()
