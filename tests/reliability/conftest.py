"""Fixtures of the reliability tests: a private cache and a `tilec` run in a subprocess
(a crash there must fail the test, not take pytest down with it)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tilelang-cache"))


@pytest.fixture(autouse=True)
def private_cache(shared_cache, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", shared_cache)
    monkeypatch.delenv("TILELANG_DISABLE_CACHE", raising=False)
    monkeypatch.delenv("TILELANG_LOG", raising=False)
    return shared_cache


def run_python(code: str, *, timeout: float = 300, env: dict | None = None,
               cwd=None) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter (the test's environment, plus `env`)."""
    full = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env=full, cwd=cwd or ROOT)


def run_tilec(*args, timeout: float = 300, env: dict | None = None,
              cwd=None) -> subprocess.CompletedProcess:
    """`tilec ARGS` in a subprocess (exit code, stdout, stderr)."""
    code = "import sys; from tilelang.cli import main; sys.exit(main())"
    full = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-c", code, *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=full,
                          cwd=cwd or ROOT)


@pytest.fixture
def cli_in_process():
    """Invoke `tilec` in this process: result.exit_code, .stdout, .stderr."""
    from click.testing import CliRunner
    from tilelang.cli import main
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(main, [str(a) for a in args], catch_exceptions=True)
    return invoke
