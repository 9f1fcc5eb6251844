"""The runtime on libraries the real compiler produced: the codegen's manifest (access,
workspaces, scalars, symbols) and the runtime's binding agree, threads change nothing,
and a compiled library runs in a process where the compiler cannot be imported."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from runtime_isolation import BLOCKER

SOURCE = '''
import tilelang.language as T

M = T.dynamic("M")
N = T.dynamic("N")
ROWS = 4


@T.prim_func
def scale_rows(X: T.Tensor((M, N), "float32"), alpha: T.float32, k: T.int32,
               Y: T.Tensor((M, N), "float32")):
    with T.Kernel(T.ceildiv(M, ROWS), threads=1) as bx:
        for r in T.serial(ROWS):
            i = bx * ROWS + r
            if i < M:
                for j in T.serial(N):
                    Y[i, j] = alpha * X[i, j] + T.cast(k, "float32")


@T.prim_func
def ws_sum(X: T.Tensor((M, 8), "float32"), out: T.Tensor((M,), "float32")):
    partial = T.alloc_global((M, 8), "float32")
    with T.Kernel(M, threads=1) as bx:
        s = T.alloc_var("float32")
        s = 0.0
        for j in T.serial(8):
            partial[bx, j] = partial[bx, j] + X[bx, j]
            s = s + partial[bx, j]
        out[bx] = s
'''


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    try:
        from tilelang.driver import compile_source
    except ImportError as e:                       # pragma: no cover - partial checkout
        pytest.skip(f"the compiler is not available: {e}")
    cache = tmp_path_factory.mktemp("compiled-cache")
    old = os.environ.get("TILELANG_CACHE_DIR")
    os.environ["TILELANG_CACHE_DIR"] = str(cache)
    try:
        return compile_source(SOURCE, "runtime_test.tl")
    finally:
        if old is None:
            del os.environ["TILELANG_CACHE_DIR"]
        else:
            os.environ["TILELANG_CACHE_DIR"] = old


def test_manifest_as_the_runtime_reads_it(compiled):
    k = compiled.scale_rows
    assert [p.name for p in k.params] == ["X", "alpha", "k", "Y"]
    assert [p.access for p in k.params if p.is_tensor] == ["read", "write"]
    assert compiled.ws_sum.spec.workspaces[0].shape == ("M", 8)


@pytest.mark.parametrize("threads", [1, 2])
def test_scalars_symbols_and_threads(compiled, threads):
    rng = np.random.default_rng(threads)
    x = rng.standard_normal((37, 5)).astype(np.float32)
    y = compiled.scale_rows(x, 1.5, -2, out_idx=-1, num_threads=threads)
    np.testing.assert_allclose(y, 1.5 * x - 2, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("threads", [1, 2])
def test_workspace_zeroed_every_call(compiled, threads):
    x = np.arange(40 * 8, dtype=np.float32).reshape(40, 8)
    for _ in range(2):
        out = compiled.ws_sum(x, out_idx=-1, num_threads=threads)
        np.testing.assert_array_equal(out, x.sum(axis=1))


def test_bad_launches_of_a_compiled_kernel(compiled):
    x = np.zeros((4, 3), np.float32)
    with pytest.raises(TypeError, match="'X' expects float32"):
        compiled.scale_rows(x.astype(np.float64), 1.0, 0, x.copy())
    with pytest.raises(ValueError, match="M is 4 from X.shape.0. but 5 from Y.shape.0."):
        compiled.scale_rows(x, 1.0, 0, np.zeros((5, 3), np.float32))
    with pytest.raises(TypeError, match="'k' expects an integer"):
        compiled.scale_rows(x, 1.0, 0.5, x.copy())
    with pytest.raises(ValueError, match="'X'.*dimension 1 must be 8"):
        compiled.ws_sum(x, out_idx=-1)


def test_compiled_library_runs_without_the_compiler(compiled):
    script = BLOCKER + textwrap.dedent(f"""
        import numpy as np
        import tilelang
        lib = tilelang.load({compiled.path!r})
        x = np.arange(24, dtype=np.float32).reshape(6, 4)
        y = lib.scale_rows(x, 2.0, 1, out_idx=-1, num_threads=2)
        assert (y == 2 * x + 1).all(), y
        assert not [m for m in sys.modules if m.startswith(("llvmlite", "lark"))]
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
