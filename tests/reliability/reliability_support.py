"""Helpers of the reliability tests: `tilec` or Python code in a subprocess (a crash there
must fail the test, not take pytest down with it). A module of its own, not conftest.py:
`from conftest import ...` would find another directory's conftest when the whole suite
is collected."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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
