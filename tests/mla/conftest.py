"""Fixtures of the MLA tests: a private kernel cache."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
