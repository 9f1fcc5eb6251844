"""Fixtures of the target tests: a private cache directory, `tilec` in-process."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from target_kernels import VADD  # noqa: E402


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




@pytest.fixture
def vadd_file(tmp_path):
    path = tmp_path / "vadd.tl"
    path.write_text(VADD)
    return str(path)
