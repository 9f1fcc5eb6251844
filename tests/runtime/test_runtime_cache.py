"""The disk cache: store / lookup, corruption and truncation detected (entry removed,
then rebuilt by the next store), concurrent writers, TILELANG_DISABLE_CACHE."""
import multiprocessing
import os

import pytest

from tilelang.runtime.cache import META, Cache, key


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.delenv("TILELANG_DISABLE_CACHE", raising=False)
    return Cache(tmp_path / "c")


def test_key_is_stable_and_unambiguous():
    k = key("ir text", {"opt": 3, "cpu": "znver3"}, b"\x00", 1)
    assert k == key("ir text", {"cpu": "znver3", "opt": 3}, b"\x00", 1)   # dict order
    assert len(k) == 64 and int(k, 16) >= 0
    assert key("ab", "c") != key("a", "bc")
    assert key("1") != key(1)
    assert key(b"x") != key("x")
    with pytest.raises(TypeError, match="cache key parts"):
        key(object())


def test_store_and_lookup(cache, tmp_path):
    src = tmp_path / "lib.so"
    src.write_bytes(b"\x7fELF" + bytes(range(256)) * 10)
    k = key("a")
    assert cache.lookup(k) is None
    entry = cache.store(k, {"kernel.so": str(src), "kernel.h": b"// header\n"},
                        meta={"kernels": ["vadd"]})
    assert entry == cache.lookup(k) == os.path.join(cache.dir, k)
    with open(os.path.join(entry, "kernel.so"), "rb") as f:
        assert f.read() == src.read_bytes()
    assert cache.meta(k) == {"kernels": ["vadd"]}
    info = cache.info()
    assert info["entries"] == 1 and info["bytes"] > 2560 and info["dir"] == cache.dir
    assert not [n for n in os.listdir(cache.dir) if n.startswith(".")]   # no temp left


def test_store_same_key_twice_keeps_first(cache):
    k = key("same")
    first = cache.store(k, {"f": b"one"})
    second = cache.store(k, {"f": b"two"})
    assert first == second
    with open(os.path.join(first, "f"), "rb") as f:
        assert f.read() == b"one"


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete", "meta", "meta_json"])
def test_corrupt_entry_detected_removed_and_rebuilt(cache, damage):
    k = key("corrupt", damage)
    entry = cache.store(k, {"kernel.so": b"A" * 1000, "kernel.h": b"h"})
    so = os.path.join(entry, "kernel.so")
    if damage == "truncate":
        with open(so, "r+b") as f:
            f.truncate(500)
    elif damage == "flip":
        with open(so, "r+b") as f:
            f.seek(10)
            f.write(b"B")
    elif damage == "delete":
        os.remove(so)
    elif damage == "meta":
        os.remove(os.path.join(entry, META))
    else:
        with open(os.path.join(entry, META), "w") as f:
            f.write('{"format": 1, "key": ')
    assert cache.lookup(k) is None                 # never served
    assert not os.path.exists(entry)               # and removed
    rebuilt = cache.store(k, {"kernel.so": b"A" * 1000, "kernel.h": b"h"})
    assert cache.lookup(k) == rebuilt


def test_entry_for_another_key_is_rejected(cache):
    k1, k2 = key("1"), key("2")
    e1 = cache.store(k1, {"f": b"x"})
    os.rename(e1, os.path.join(cache.dir, k2))     # a misplaced entry
    assert cache.lookup(k2) is None


def test_store_over_corrupt_entry_replaces_it(cache):
    k = key("replace")
    entry = cache.store(k, {"f": b"good"})
    with open(os.path.join(entry, "f"), "wb") as f:
        f.write(b"bad!")
    assert cache.store(k, {"f": b"good"}) == entry   # replaced, not kept
    with open(os.path.join(entry, "f"), "rb") as f:
        assert f.read() == b"good"
    assert cache.lookup(k) == entry


def test_failed_store_leaves_nothing(cache, tmp_path):
    k = key("fail")
    with pytest.raises(FileNotFoundError):
        cache.store(k, {"a": b"ok", "b": str(tmp_path / "missing.so")})
    with pytest.raises(TypeError, match="expected bytes or a file path"):
        cache.store(k, {"a": 12})
    with pytest.raises(TypeError):
        cache.store(k, {"a": b"x"}, meta={"bad": object()})
    assert cache.lookup(k) is None
    assert os.listdir(cache.dir) == []


def test_bad_names_and_keys(cache):
    with pytest.raises(ValueError, match="bad cache key"):
        cache.lookup("../etc")
    for name in ("../x", META, ".hidden", ""):
        with pytest.raises(ValueError, match="bad cache file name"):
            cache.store(key("n"), {name: b"x"})


def test_clear(cache):
    for i in range(3):
        cache.store(key(i), {"f": b"x" * i})
    os.makedirs(os.path.join(cache.dir, ".tmp-left-over"))
    assert cache.clear() == 3
    assert cache.info()["entries"] == 0
    assert os.listdir(cache.dir) == []


def test_disable_env(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")
    c = Cache(tmp_path / "off")
    assert not c.enabled
    assert c.store(key("x"), {"f": b"1"}) is None
    assert c.lookup(key("x")) is None
    assert not os.path.exists(tmp_path / "off")
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "0")
    assert Cache(tmp_path / "on").enabled


def test_default_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "env"))
    assert Cache().dir == str(tmp_path / "env")
    monkeypatch.delenv("TILELANG_CACHE_DIR")
    assert Cache().dir == os.path.join(os.path.expanduser("~"), ".cache", "tilelang")


def _store_worker(args):
    directory, k, payload, barrier = args
    barrier.wait()
    entry = Cache(directory, enabled=True).store(k, {"kernel.so": payload, "x": b"y"})
    with open(os.path.join(entry, "kernel.so"), "rb") as f:
        return entry, f.read()


def test_concurrent_stores_of_one_key_all_succeed(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    k = key("race")
    n = 4
    with ctx.Manager() as manager:
        barrier = manager.Barrier(n)
        payloads = [bytes([i]) * 200_000 for i in range(n)]
        with ctx.Pool(n) as pool:
            results = pool.map(_store_worker,
                               [(str(tmp_path), k, p, barrier) for p in payloads])
    entries = {e for e, _ in results}
    contents = {c for _, c in results}
    assert len(entries) == 1 and len(contents) == 1       # everyone got the winner's entry
    assert contents.pop() in payloads
    assert Cache(tmp_path, enabled=True).lookup(k) == entries.pop()
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")] == []


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root ignores directory permissions")
def test_unwritable_dir_is_a_clear_oserror(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(OSError, match="TILELANG_CACHE_DIR"):
            Cache(ro / "sub", enabled=True).store(key("x"), {"f": b"1"})
    finally:
        ro.chmod(0o700)


def test_cache_dir_is_a_file_is_a_clear_oserror(tmp_path):
    f = tmp_path / "file"
    f.write_bytes(b"")
    with pytest.raises(OSError, match="cannot write to the tilelang cache directory"):
        Cache(f, enabled=True).store(key("x"), {"f": b"1"})
    assert Cache(f, enabled=True).lookup(key("x")) is None
