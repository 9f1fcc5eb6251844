"""TileLang programs written the way TileLang users write them, each run unchanged on
both targets: the `target` fixture sets TILELANG_TARGET (the default target of a compile
that names none), so a kernel's source never says where it runs."""
import pytest

TARGETS = ("cpu", "tcsim:tiny")


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tilelang-cache"))


@pytest.fixture(autouse=True)
def private_cache(shared_cache, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", shared_cache)
    monkeypatch.delenv("TILELANG_DISABLE_CACHE", raising=False)
    monkeypatch.setenv("TILELANG_AUTOTUNE", "0")
    return shared_cache


@pytest.fixture(params=TARGETS)
def target(request, monkeypatch):
    monkeypatch.setenv("TILELANG_TARGET", request.param)
    return request.param
