"""User errors found by the passes (TL04xx): code, message, position and caret, rendered
from a real file the way `tilec` shows them."""
from __future__ import annotations

import pytest

from tilelang.diagnostics import TileLangError
from tilelang.frontend import parse_module
from tilelang import targets
from tilelang.passes import PassManager

HEADER = '''import tilelang.language as T

N = T.dynamic("N")
BLOCK = 64


@T.prim_func
def k(A: T.Tensor((N, 64), "float32")):
    with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
        R = T.alloc_fragment((64,), "float32")
'''
FIRST = HEADER.count("\n") + 1


def compile_error(tmp_path, *lines) -> tuple[TileLangError, list[str]]:
    src = HEADER + "".join(" " * 8 + line + "\n" for line in lines)
    path = tmp_path / "k.tl"
    path.write_text(src)
    mod = parse_module(src, str(path))
    with pytest.raises(TileLangError) as info:
        PassManager(targets.get("cpu").pipeline(), verify_each=True).run(mod)
    return info.value, src.splitlines()


def check(err, src_lines, code, message, line, target, label):
    d = err.diagnostics[0]
    rendered = err.render()
    col = src_lines[line - 1].index(target) + 1
    assert d.code == code and message in d.message, rendered
    assert (d.primary.line, d.primary.col) == (line, col), rendered
    carets = [r for r in rendered.splitlines() if "^" in r][0].split("|", 1)[1][1:]
    assert carets[col - 1:col - 1 + len(target)] == "^" * len(target), rendered
    assert carets[col - 1 + len(target):].strip() == label, rendered
    assert "Traceback" not in rendered


def test_tl0401_integer_division_by_constant_zero(tmp_path):
    err, src = compile_error(tmp_path, "A[bx // (BLOCK - 64), 0] = 1.0")
    check(err, src, "TL0401", "integer division by zero", FIRST, "BLOCK - 64",
          "this divisor is 0")


def test_tl0401_ceildiv_by_zero(tmp_path):
    err, src = compile_error(tmp_path, "A[T.ceildiv(bx, BLOCK - BLOCK), 0] = 1.0")
    check(err, src, "TL0401", "division by zero", FIRST, "BLOCK - BLOCK", "this divisor is 0")


def test_tl0402_loop_runs_past_a_fragment(tmp_path):
    err, src = compile_error(tmp_path, "for i in T.Parallel(65):", "    R[i] = 0.0")
    check(err, src, "TL0402", "takes values 0..64 but the extent is 64", FIRST + 1, "i",
          "reaches 64")


def test_tl0402_negative_offset_load(tmp_path):
    err, src = compile_error(tmp_path, "for i in range(64):", "    A[0, i] = R[i - 1]")
    check(err, src, "TL0402", "takes values -1..62", FIRST + 1, "i - 1", "reaches -1")


def test_guarded_or_in_bounds_local_accesses_are_accepted(tmp_path):
    src = HEADER + "".join(" " * 8 + line + "\n" for line in [
        "for i in T.Parallel(65):",
        "    if i < 64:",
        "        R[i] = 0.0",
        "for j in T.Parallel(64):",
        "    A[bx * 64 + j, 0] = R[63 - j]",
    ])
    PassManager(targets.get("cpu").pipeline(), verify_each=True).run(parse_module(src, "k.tl"))
