"""Helpers shared by the CLI tests (a uniquely named module: every test directory has
its own conftest, so `from conftest import ...` would be ambiguous)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]      # the repository


def tilec_binary() -> str:
    """The installed console script (beside the interpreter running the tests)."""
    candidate = Path(sys.executable).with_name("tilec")
    return str(candidate) if candidate.exists() else "tilec"


def run_python(code: str, env_extra: dict | None = None, cwd=None, timeout=300):
    """Run `code` in a fresh interpreter; returns the CompletedProcess (text mode)."""
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)
