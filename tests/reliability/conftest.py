"""Fixtures of the reliability tests: a private cache, `tilec` in this process
(reliability_support.py runs it in a subprocess)."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tilelang-cache"))


@pytest.fixture(autouse=True)
def private_cache(shared_cache, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", shared_cache)
    monkeypatch.delenv("TILELANG_DISABLE_CACHE", raising=False)
    monkeypatch.delenv("TILELANG_LOG", raising=False)
    return shared_cache


@pytest.fixture
def cli_in_process():
    """Invoke `tilec` in this process: result.exit_code, .stdout, .stderr."""
    from click.testing import CliRunner
    from tilelang.cli import main
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(main, [str(a) for a in args], catch_exceptions=True)
    return invoke
