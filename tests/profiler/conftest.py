"""The profiler and autotuner tests use a private cache directory, never the user's."""
import pytest


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tilelang-cache"))


@pytest.fixture(autouse=True)
def private_cache(shared_cache, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", shared_cache)
    monkeypatch.delenv("TILELANG_DISABLE_CACHE", raising=False)
    return shared_cache
