"""The T namespace as Python objects, and the code registry of the frontend's ranges."""
import pytest

import tilelang.language as T
from tilelang.diagnostics.codes import all_codes, explain
from tilelang.language.names import ALL_NAMES


def test_every_name_is_an_attribute():
    for name in ALL_NAMES:
        assert hasattr(T, name), name


def test_signature_objects_evaluate():
    M = T.dynamic("M")
    assert T.symbolic("K").name == "K" and M.name == "M"
    t = T.Tensor((M, 128), "float16")
    assert t.shape == (M, 128) and t.dtype == "float16"
    assert T.Buffer([4], T.float32).dtype == "float32"
    assert T.float32 == "float32" and isinstance(T.bfloat16, str)


def test_decorators_mark_and_keep_the_function():
    def f():
        pass
    assert T.prim_func(f) is f and f.__tilelang_kind__ == "prim_func"
    assert T.macro(f).__tilelang_kind__ == "macro"


@pytest.mark.parametrize("call", [lambda: T.copy(1, 2), lambda: T.Parallel(4),
                                  lambda: T.exp(1.0), lambda: T.float16(2.0),
                                  lambda: T.Kernel(1), lambda: T.alloc_shared((4,), "int8")])
def test_calling_from_python_explains(call):
    with pytest.raises(T.KernelBodyError, match="compiled by tilelang, not executed"):
        call()


def test_frontend_codes_have_explanations():
    codes = {c: v for c, v in all_codes().items() if c[:4] in ("TL00", "TL01", "TL02", "TL03")}
    assert len(codes) >= 30
    for code, (title, text) in codes.items():
        assert title and len(text) > 40, code
        assert explain(code).startswith(f"{code}: {title}")


def test_every_frontend_code_has_a_diagnostic_test():
    from pathlib import Path
    tests = "".join(p.read_text() for p in Path(__file__).parent.glob("test_diagnostics_*.py"))
    codes = [c for c in all_codes() if c[:4] in ("TL00", "TL01", "TL02", "TL03")]
    untested = [c for c in codes if f'"{c}"' not in tests]
    assert untested == []
