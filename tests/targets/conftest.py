"""Fixtures of the target tests: a private cache directory, `tilec` in-process."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
    monkeypatch.delenv("TILELANG_DISABLE_CACHE", raising=False)


@pytest.fixture
def cli():
    """cli("passes", "--target", "x") -> click Result (stderr kept apart)."""
    from click.testing import CliRunner
    from tilelang.cli import main
    runner = CliRunner()
    return lambda *args: runner.invoke(main, [str(a) for a in args])


VADD = '''\
import tilelang.language as T

N = T.dynamic("N")


@T.prim_func
def vadd(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"),
         C: T.Tensor((N,), "float32")):
    with T.Kernel(T.ceildiv(N, 64), threads=64) as bx:
        A_f = T.alloc_fragment((64,), "float32")
        B_f = T.alloc_fragment((64,), "float32")
        T.copy(A[bx * 64], A_f)
        T.copy(B[bx * 64], B_f)
        for i in T.Parallel(64):
            A_f[i] = A_f[i] + B_f[i] * (2 - 1)
        T.copy(A_f, C[bx * 64])
'''


@pytest.fixture
def vadd_file(tmp_path):
    path = tmp_path / "vadd.tl"
    path.write_text(VADD)
    return str(path)
