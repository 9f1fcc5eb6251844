"""Helpers for diagnostic tests: parse, catch the TileLangError, check code, message,
position and the caret row of the rendered text."""
import pytest


from tilelang.diagnostics import TileLangError
from tilelang.frontend import parse_module

HEADER = '''import tilelang.language as T

N = T.dynamic("N")
BLOCK = 64


@T.prim_func
def k(A: T.Tensor((N, 64), "float32"), B: T.Tensor((N, 64), "float16"), x: T.int32):
    with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
        S = T.alloc_shared((64, 64), "float32")
        F = T.alloc_fragment((64, 64), "float32")
        H = T.alloc_fragment((64, 64), "float16")
        R = T.alloc_fragment((64,), "float32")
        v = T.alloc_var("float32", init=0)
'''
BODY_LINE = HEADER.count("\n") + 1        # line number of the first body line
INDENT = " " * 8


def kernel_source(*body_lines: str) -> str:
    return HEADER + "".join(INDENT + line + "\n" for line in body_lines)


def error_of(source: str, **kwargs) -> TileLangError:
    with pytest.raises(TileLangError) as info:
        parse_module(source, "k.tl", **kwargs)
    return info.value


def caret_row(rendered: str) -> str:
    """The first underline row of the rendered diagnostic, without the gutter."""
    for row in rendered.splitlines():
        if "|" in row and "^" in row:
            return row.split("|", 1)[1][1:]
    raise AssertionError(f"no caret row in:\n{rendered}")


def check(err: TileLangError, code: str, message: str, line: int, col: int,
          width: int = 1, help: str | None = None):
    d = err.diagnostics[0]
    rendered = err.render()
    assert d.code == code, rendered
    assert message in d.message, rendered
    assert (d.primary.line, d.primary.col) == (line, col), rendered
    assert f"--> k.tl:{line}:{col}" in rendered
    row = caret_row(rendered)
    assert row[col - 1: col - 1 + width] == "^" * width, rendered
    assert row[col - 1 + width: col + width] != "^", rendered
    if help is not None:
        assert d.help and help in d.help, rendered
    assert "Traceback" not in rendered and "__ANON" not in rendered
    return d


def check_at(source: str, code: str, message: str, line: int, target: str,
             occurrence: int = 0, help: str | None = None, **kwargs):
    """Check a diagnostic whose caret underlines `target` on `line` of `source`."""
    err = error_of(source, **kwargs)
    text = source.splitlines()[line - 1]
    col = -1
    for _ in range(occurrence + 1):
        col = text.index(target, col + 1)
    return check(err, code, message, line, col + 1, len(target), help)
