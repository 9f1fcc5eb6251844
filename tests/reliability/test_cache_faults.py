"""Issue 16, cases 2 and 6, and the cache's fault tests: `tilec cache clear` racing
loads, a read-only cache, a tampered host memo, compiles killed with SIGKILL.

Concurrent writers and corrupted entries are covered by tests/runtime/test_runtime_cache.py
and tests/cli/test_cli_cache.py; the tests here add the faults the issue found.
"""
from __future__ import annotations

import errno
import glob
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tilelang.driver import STATS, cachecmd, compile_source, store

from reliability_support import ROOT, run_python, run_tilec

VADD = textwrap.dedent("""\
    import tilelang.language as T
    N = T.dynamic("N")
    BLOCK = {block}

    @T.prim_func
    def vadd(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"),
             C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BLOCK)) as bx:
            for i in T.Parallel(BLOCK):
                C[bx * BLOCK + i] = A[bx * BLOCK + i] + B[bx * BLOCK + i]
    """)


def _check(library) -> None:
    a = np.arange(100, dtype=np.float32)
    c = np.zeros(100, np.float32)
    library["vadd"](a, a, c)
    np.testing.assert_array_equal(c, 2 * a)


def _entries(cache_dir: str) -> list:
    return [n for n in os.listdir(cache_dir) if len(n) == 64] if os.path.isdir(cache_dir) else []


# ----------------------------------------------------------------------------- clear vs load

@pytest.mark.parametrize("where", ["lookup_source", "lookup"])
def test_a_clear_between_lookup_and_load_costs_a_compile(monkeypatch, where):
    """The entry a lookup verified vanishes before the load: the driver compiles it
    again instead of dying with FileNotFoundError (was: 3 of 24 runs)."""
    text = VADD.format(block=40 if where == "lookup" else 41)
    _check(compile_source(text, "v.tl"))                    # now cached
    original = getattr(store.ArtifactStore, where)

    def lookup_then_clear(self, key):
        path = original(self, key)
        cachecmd.clear()
        return path

    monkeypatch.setattr(store.ArtifactStore, where, lookup_then_clear)
    if where == "lookup":       # skip the source index, so the artifact lookup is reached
        monkeypatch.setattr(store.ArtifactStore, "lookup_source", lambda self, key: None)
    n = STATS["compiled"]
    _check(compile_source(text, "v.tl"))
    assert STATS["compiled"] == n + 1


def test_a_clear_right_after_the_store_still_gives_the_kernel(monkeypatch):
    original = store.ArtifactStore.store

    def store_then_clear(self, akey, artifact):
        path = original(self, akey, artifact)
        cachecmd.clear()
        return path

    monkeypatch.setattr(store.ArtifactStore, "store", store_then_clear)
    _check(compile_source(VADD.format(block=42), "v.tl"))


def test_clear_racing_real_loads(tmp_path):
    """Processes loading (warm or cold) while another process clears in a loop."""
    env = dict(os.environ, TILELANG_CACHE_DIR=str(tmp_path / "cache"))
    src = tmp_path / "v.tl"
    src.write_text(VADD.format(block=43))
    clearer = subprocess.Popen(
        [sys.executable, "-c", "import time\nfrom tilelang.driver import cachecmd\n"
         "end = time.time() + 120\nwhile time.time() < end:\n"
         "    cachecmd.clear(); time.sleep(0.01)"],
        env=env, cwd=ROOT)
    try:
        load = ("import numpy as np, tilelang\n"
                f"k = tilelang.compile({str(src)!r})\n"
                "a = np.ones(100, np.float32); c = np.zeros(100, np.float32)\n"
                "k(a, a, c); assert (c == 2).all()")
        for _ in range(1):
            proc = run_python(load, env=env)
            assert proc.returncode == 0, proc.stderr
            proc = run_tilec("run", src, "--shape", "N=100", "--repeat", "1", env=env)
            assert proc.returncode == 0, proc.stderr
    finally:
        clearer.kill()
        clearer.wait()


# ----------------------------------------------------------------------------- read-only

def test_clear_of_a_read_only_cache_says_what_it_could_not_remove(cli_in_process, monkeypatch,
                                                                   private_cache):
    _check(compile_source(VADD.format(block=44), "v.tl"))
    before = _entries(private_cache)
    assert before
    import tilelang.runtime.cache as cache_mod

    def read_only_rename(src, dst):
        raise PermissionError(errno.EACCES, "Permission denied", src)

    monkeypatch.setattr(cache_mod.os, "rename", read_only_rename)
    result = cli_in_process("cache", "clear")
    assert result.exit_code == 1
    assert "error[TL0790]" in result.stderr
    assert f"{len(before)} artifact" in result.stderr and "Permission denied" in result.stderr
    assert "0 removed" in result.stderr
    assert _entries(private_cache) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_clear_of_a_chmod_read_only_cache(tmp_path):
    cache_dir = tmp_path / "cache"
    env = {"TILELANG_CACHE_DIR": str(cache_dir)}
    src = tmp_path / "v.tl"
    src.write_text(VADD.format(block=45))
    assert run_tilec("compile", src, "-o", tmp_path / "v.so", env=env).returncode == 0
    assert run_python(f"import tilelang; tilelang.compile({str(src)!r}).compile()",
                      env=env).returncode == 0
    os.chmod(cache_dir, 0o555)
    try:
        proc = run_tilec("cache", "clear", env=env)
    finally:
        os.chmod(cache_dir, 0o755)
    assert proc.returncode == 1 and "TL0790" in proc.stderr


# ----------------------------------------------------------------------------- host memo

def test_a_host_memo_with_a_wrong_cpu_is_recomputed(private_cache, tmp_path):
    env = {"TILELANG_CACHE_DIR": str(tmp_path / "cache")}
    src = tmp_path / "v.tl"
    src.write_text(VADD.format(block=46))
    assert run_tilec("run", src, "--shape", "N=10", "--repeat", "1", env=env).returncode == 0
    (memo,) = glob.glob(str(tmp_path / "cache" / "host-*.json"))
    facts = json.loads(open(memo).read())
    facts["cpu"] = "bogus"
    with open(memo, "w") as f:
        json.dump(facts, f)
    src.write_text(VADD.format(block=47))               # a compile, not a cache hit
    proc = run_tilec("run", src, "--shape", "N=10", "--repeat", "1", env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(open(memo).read())["cpu"] != "bogus"


def test_cache_clear_removes_the_host_memo(tmp_path):
    env = {"TILELANG_CACHE_DIR": str(tmp_path / "cache")}
    src = tmp_path / "v.tl"
    src.write_text(VADD.format(block=48))
    assert run_tilec("run", src, "--shape", "N=10", "--repeat", "1", env=env).returncode == 0
    assert glob.glob(str(tmp_path / "cache" / "host-*.json"))
    proc = run_tilec("cache", "clear", env=env)
    assert proc.returncode == 0 and "removed 1 cached artifact" in proc.stdout
    assert os.listdir(tmp_path / "cache") == []


# ----------------------------------------------------------------------------- kill -9

KILLED_AT = {
    # right after the system linker wrote the library
    "link": ("tilelang.codegen.llvm.link.subprocess", "run"),
    # inside the atomic write of the output, its bytes written but not yet named
    "write": ("tilelang.runtime.cache.os", "fchmod"),
}


@pytest.mark.parametrize("point", sorted(KILLED_AT))
def test_a_killed_compile_leaves_nothing_in_the_output_directory(tmp_path, point):
    out = tmp_path / "out"
    out.mkdir()
    src = tmp_path / "v.tl"
    src.write_text(VADD.format(block=49))
    module, name = KILLED_AT[point]
    code = textwrap.dedent(f"""\
        import importlib, os, signal, sys
        mod = importlib.import_module({module!r}.rsplit(".", 1)[0])
        target = getattr(mod, {module!r}.rsplit(".", 1)[1])
        original = getattr(target, {name!r})
        def killed(*a, **k):
            original(*a, **k)
            os.kill(os.getpid(), signal.SIGKILL)
        setattr(target, {name!r}, killed)
        from tilelang.cli import main
        sys.argv = ["tilec", "compile", {str(src)!r}, "-o", {str(out / "v.so")!r}]
        main()
        """)
    proc = run_python(code)
    assert proc.returncode == -9, proc.stderr
    assert os.listdir(out) == []


def test_a_compile_killed_while_storing_leaves_a_usable_cache(tmp_path):
    """SIGKILL between writing an entry and publishing it: the next process compiles
    and stores it, and `cache clear` removes the leftover."""
    env = {"TILELANG_CACHE_DIR": str(tmp_path / "cache")}
    src = tmp_path / "v.tl"
    src.write_text(VADD.format(block=50))
    code = textwrap.dedent(f"""\
        import os, signal
        import tilelang.runtime.cache as c
        c.Cache._publish = lambda *a: os.kill(os.getpid(), signal.SIGKILL)
        import tilelang
        tilelang.compile({str(src)!r}).compile()
        """)
    assert run_python(code, env=env).returncode == -9
    assert [n for n in os.listdir(tmp_path / "cache") if n.startswith(".tmp-")]
    proc = run_tilec("run", src, "--shape", "N=10", "--repeat", "1", env=env)
    assert proc.returncode == 0, proc.stderr
    assert len(_entries(str(tmp_path / "cache"))) == 1
    assert run_tilec("cache", "clear", env=env).returncode == 0
    assert os.listdir(tmp_path / "cache") == []
