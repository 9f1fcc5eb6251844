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


# Matrices whose CPU half compiles a kernel per case (seconds each, where tcsim:tiny takes
# a tenth of that): tcsim:tiny runs every case (what the frontend and the passes make of
# each is the same on both targets) and the CPU its first, the rest under -m slow.
CPU_FIRST_CASE_ONLY = {
    ("test_lang_pipeline.py", "test_pipeline_order_stage"),
    ("test_lang_pipeline.py", "test_blocksparse_matmul"),
    ("test_lang_any_all_of.py", "test_block_sparse_matmul"),
    ("test_lang_scan.py", "test_scan"),
}


@pytest.hookimpl(tryfirst=True)         # before -m "not slow" deselects
def pytest_collection_modifyitems(config, items):
    seen = set()
    for item in items:
        key = (item.path.name, getattr(item, "originalname", item.name))
        params = getattr(getattr(item, "callspec", None), "params", {})
        if key in CPU_FIRST_CASE_ONLY and params.get("target") == "cpu":
            if key in seen:
                item.add_marker(pytest.mark.slow)
            seen.add(key)
