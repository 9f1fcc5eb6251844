"""Every program the fuzzer found a bug with, shrunk: each target must now agree with the
reference interpreter on it (tilelang/fuzz/shrink.py writes these files)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tilelang.fuzz.differential import check
from tilelang.fuzz.shrink import load

HERE = Path(__file__).resolve().parent
CASES = sorted(HERE.glob("*.tl"))


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_regression(path, monkeypatch):
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")
    text, sizes, seed = load(str(path))
    targets = ("cpu",) if "# targets: cpu\n" in text else ("cpu", "tcsim:tiny")
    verdict = check(text, sizes, seed=seed, targets=targets, stages="all",
                    filename=path.name)
    assert verdict.kind == "ok", str(verdict)
