"""`@tilelang.kernel`, `@tilelang.jit` and `tilelang.compile`: the Python entry points."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.diagnostics import TileLangError

N = T.dynamic("N")
BLOCK = 64


@tilelang.kernel
def vadd(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"),
         C: T.Tensor((N,), "float32")):
    with T.Kernel(T.ceildiv(N, BLOCK), threads=64) as bx:
        for i in T.Parallel(BLOCK):
            if bx * BLOCK + i < N:
                C[bx * BLOCK + i] = A[bx * BLOCK + i] + B[bx * BLOCK + i]


@tilelang.kernel(out_idx=[-1], BLOCK=32)
def vmul(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"),
         C: T.Tensor((N,), "float32")):
    with T.Kernel(T.ceildiv(N, BLOCK), threads=32) as bx:
        for i in T.Parallel(BLOCK):
            if bx * BLOCK + i < N:
                C[bx * BLOCK + i] = A[bx * BLOCK + i] * B[bx * BLOCK + i]


@tilelang.jit(out_idx=[-1])
def scaler(block, factor=2.0):
    @T.prim_func
    def scale(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    Y[bx * block + i] = X[bx * block + i] * factor
    return scale


def test_bare_kernel_runs():
    a = np.arange(130, dtype=np.float32)
    b = np.full(130, 3.0, np.float32)
    c = np.zeros(130, np.float32)
    vadd(a, b, c)
    np.testing.assert_array_equal(c, a + b)
    assert vadd.name == "vadd" and vadd.__name__ == "vadd"


def test_kernel_with_out_idx_and_define_returns_output():
    a = np.arange(70, dtype=np.float32)
    b = np.full(70, -2.0, np.float32)
    c = vmul(a, b)
    np.testing.assert_array_equal(c, a * b)
    # the define replaced the module's BLOCK = 64
    assert "32" in vmul.ir() and "64" not in vmul.ir()


def test_body_is_never_executed_by_python():
    # Executing the body would fail: T.Kernel outside a kernel is not Python-callable code.
    assert vadd.ir().count("def vadd(") == 1


def test_ir_llvm_asm_inspection():
    from tilelang import targets
    assert "T.Parallel" in vadd.ir()
    for p in targets.get("cpu").pipeline():
        assert "def vadd(" in vadd.ir(after=p.name)
    assert "T.Parallel" not in vadd.ir(after="vectorize")
    assert "define" in vadd.llvm()
    assert "vadd" in vadd.asm()


def test_ir_unknown_pass_is_user_error():
    with pytest.raises(TileLangError) as info:
        vadd.ir(after="not_a_pass")
    assert info.value.code == "TL0702"


def test_jit_factory_compiles_once_per_parameter_tuple():
    x = np.arange(100, dtype=np.float32)
    k1 = scaler(32, 2.0)
    np.testing.assert_array_equal(k1(x), x * 2.0)
    assert scaler(32, 2.0) is k1
    assert scaler(block=32) is k1 and scaler(32, factor=2.0) is k1
    k2 = scaler(16, 0.5)
    assert k2 is not k1
    np.testing.assert_array_equal(k2(x), x * 0.5)
    assert "2 compiled" in repr(scaler)


def test_jit_factory_must_return_a_function():
    @tilelang.jit
    def broken(n):
        return n * 2

    with pytest.raises(TileLangError) as info:
        broken(3)
    assert info.value.code == "TL0710"


def _line_of(fn, needle: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if needle in line)


def test_user_error_points_into_the_py_file():
    def bad(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, 64), threads=64) as bx:
            for i in T.Parallel(64):
                B[bx * 64 + i] = A[bx * 64 + i] + undefined_name[i]  # noqa: F821

    k = tilelang.kernel(bad)
    with pytest.raises(TileLangError) as info:
        k(np.zeros(4, np.float32), np.zeros(4, np.float32))
    message = str(info.value)
    line = _line_of(bad, "undefined_name[i]")
    assert f"{__file__}:{line}:" in message, message
    assert "undefined_name" in message and "^" in message


def test_compile_a_function():
    def add1(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, 16), threads=16) as bx:
            for i in T.Parallel(16):
                if bx * 16 + i < N:
                    B[bx * 16 + i] = A[bx * 16 + i] + 1.0

    k = tilelang.compile(add1, out_idx=[-1])
    x = np.arange(20, dtype=np.float32)
    np.testing.assert_array_equal(k(x), x + 1)


SOURCE = """
import tilelang.language as T
N = T.dynamic("N")
W = 8

@T.prim_func
def neg(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
    with T.Kernel(T.ceildiv(N, W), threads=8) as bx:
        for i in T.Parallel(W):
            if bx * W + i < N:
                B[bx * W + i] = -A[bx * W + i]
"""


def test_compile_source_text_and_path(tmp_path):
    k = tilelang.compile(SOURCE, out_idx=[-1], defines={"W": 4})
    x = np.arange(9, dtype=np.float32)
    np.testing.assert_array_equal(k(x), -x)
    path = tmp_path / "neg.tl"
    path.write_text(SOURCE)
    k2 = tilelang.compile(str(path))
    y = np.zeros(9, np.float32)
    k2(x, y)
    np.testing.assert_array_equal(y, -x)
    assert tilelang.compile(path).name == "neg"


def test_compile_several_kernels_gives_a_library():
    two = SOURCE + """
@T.prim_func
def pos(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
    with T.Kernel(T.ceildiv(N, W), threads=8) as bx:
        for i in T.Parallel(W):
            if bx * W + i < N:
                B[bx * W + i] = A[bx * W + i]
"""
    lib = tilelang.compile(two)
    assert sorted(k.name for k in lib) == ["neg", "pos"]
    only = tilelang.compile(two, kernel="pos", out_idx=[-1])
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(only(x), x)


def test_compile_rejects_unknown_keywords_and_objects(tmp_path):
    with pytest.raises(TypeError):
        tilelang.compile(SOURCE, BLOCK=3)
    with pytest.raises(TileLangError) as info:
        tilelang.compile(42)
    assert info.value.code == "TL0710"
    with pytest.raises(TileLangError) as info:
        tilelang.compile(str(tmp_path / "missing.tl"))
    assert info.value.code == "TL0701"


def test_compile_accepts_a_decorated_kernel_but_not_a_factory():
    k = tilelang.compile(vmul, out_idx=[-1], defines={"BLOCK": 16})
    a = np.arange(40, dtype=np.float32)
    np.testing.assert_array_equal(k(a, a), a * a)
    assert "16" in k.ir()
    with pytest.raises(TileLangError) as info:
        tilelang.compile(scaler)
    assert info.value.code == "TL0710"
