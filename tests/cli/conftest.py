"""Fixtures of the CLI tests: a private cache directory and the fixture kernels on disk."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import cli_kernels as kernels  # noqa: E402


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tilelang-cache"))


@pytest.fixture(autouse=True)
def private_cache(shared_cache, monkeypatch):
    """Every test uses one session-wide cache directory, never the user's."""
    monkeypatch.setenv("TILELANG_CACHE_DIR", shared_cache)
    monkeypatch.delenv("TILELANG_DISABLE_CACHE", raising=False)
    monkeypatch.delenv("TILELANG_LOG", raising=False)
    return shared_cache


@pytest.fixture
def kernel_file(tmp_path):
    """kernel_file("vadd") -> path of that fixture kernel written to a fresh .tl file."""
    def write(name: str, text: str | None = None) -> str:
        path = tmp_path / f"{name}.tl"
        path.write_text(text if text is not None else kernels.SOURCES[name])
        return str(path)
    return write


@pytest.fixture
def cli():
    """Invoke `tilec` in-process: cli("ir", path) -> click Result (stderr kept apart)."""
    from click.testing import CliRunner
    from tilelang.cli import main
    runner = CliRunner()

    def invoke(*args, input=None):
        return runner.invoke(main, [str(a) for a in args], input=input, catch_exceptions=True)
    return invoke
