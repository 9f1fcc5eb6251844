"""The compile cache seen from the driver: keys, damaged entries, concurrent writers,
warm starts that neither parse nor import llvmlite."""
from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

import cli_kernels as kernels
from cli_support import run_python

# A fresh process compiles (or loads) vadd from a file, checks it, and reports whether the
# compiler's heavy dependencies were imported.
CHILD = """
import sys, numpy as np, tilelang
k = tilelang.compile({path!r})
a = np.arange(300, dtype=np.float32); b = np.ones(300, np.float32); c = np.zeros(300, np.float32)
k(a, b, c)
assert (c == a + b).all()
print("heavy:", sorted(m for m in ("llvmlite", "lark") if m in sys.modules))
"""


def test_second_process_compiles_nothing(kernel_file, tmp_path):
    env = {"TILELANG_CACHE_DIR": str(tmp_path / "cache"), "TILELANG_LOG": "1"}
    code = CHILD.format(path=kernel_file("vadd"))
    first = run_python(code, env)
    assert first.returncode == 0, first.stderr
    assert "tilelang: compiled" in first.stderr
    second = run_python(code, env)
    assert second.returncode == 0, second.stderr
    assert "tilelang: cache hit" in second.stderr
    assert "compiled" not in second.stderr
    # a warm start needs neither the parser nor LLVM
    assert "heavy: []" in second.stdout


def test_comments_and_whitespace_do_not_change_the_key():
    from tilelang.driver import STATS, compile_source
    text = kernels.VECTOR_ADD.replace("BLOCK = 64", "BLOCK = 48")
    compile_source(text, "a.tl")
    before = dict(STATS)
    noisy = "# a comment\n\n" + text.replace("    with T.Kernel", "    # why\n    with T.Kernel")
    check = compile_source(noisy, "b.tl")["vadd"]
    assert STATS["compiled"] == before["compiled"]
    assert STATS["cache_hits"] == before["cache_hits"] + 1
    kernels.check_vadd(check)


def test_defines_and_options_change_the_key():
    from tilelang.driver import STATS, compile_source
    text = kernels.VECTOR_ADD.replace("BLOCK = 64", "BLOCK = 80")
    compile_source(text, "a.tl")
    n = STATS["compiled"]
    compile_source(text, "a.tl", defines={"BLOCK": 16})
    compile_source(text, "a.tl", opt=1)
    assert STATS["compiled"] == n + 2


def _entries(cache_dir):
    return glob.glob(os.path.join(cache_dir, "*", "kernel.so"))


@pytest.mark.parametrize("damage", ["truncate", "corrupt", "delete"])
def test_damaged_entry_is_rebuilt(kernel_file, tmp_path, monkeypatch, damage):
    from tilelang.driver import STATS, compile_source
    cache_dir = str(tmp_path / "cache")
    monkeypatch.setenv("TILELANG_CACHE_DIR", cache_dir)
    # Another process fills the cache (a library this process had mapped must not be
    # damaged in place: that is a bus error, not a cache test).
    path = kernel_file("vadd")
    assert run_python(CHILD.format(path=path)).returncode == 0
    (so,) = _entries(cache_dir)
    data = open(so, "rb").read()
    if damage == "truncate":
        open(so, "wb").write(data[: len(data) // 2])
    elif damage == "corrupt":
        open(so, "wb").write(data[:100] + bytes(b ^ 0xFF for b in data[100:200]) + data[200:])
    else:
        os.unlink(so)
    n = STATS["compiled"]
    lib = compile_source(open(path).read(), path)
    assert STATS["compiled"] == n + 1
    kernels.check_vadd(lib["vadd"])
    assert len(_entries(cache_dir)) == 1


def test_garbage_source_index_is_ignored(tmp_path, monkeypatch):
    from tilelang.driver import compile_source
    cache_dir = str(tmp_path / "cache")
    monkeypatch.setenv("TILELANG_CACHE_DIR", cache_dir)
    compile_source(kernels.VECTOR_ADD, "v.tl")
    assert glob.glob(os.path.join(cache_dir, "index", "*"))
    for path in glob.glob(os.path.join(cache_dir, "index", "*")):
        open(path, "wb").write(b"\xff\x00 not a key")
    kernels.check_vadd(compile_source(kernels.VECTOR_ADD, "v.tl")["vadd"])


def test_disabled_cache_compiles_every_time(tmp_path, monkeypatch):
    from tilelang.driver import STATS, compile_source
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")
    n = STATS["compiled"]
    first = compile_source(kernels.VECTOR_ADD, "v.tl")
    second = compile_source(kernels.VECTOR_ADD, "v.tl")
    assert STATS["compiled"] == n + 2
    kernels.check_vadd(first["vadd"])
    kernels.check_vadd(second["vadd"])
    assert _entries(str(cache_dir)) == []


def test_two_processes_compiling_at_once_both_succeed(kernel_file, tmp_path):
    env = dict(os.environ, TILELANG_CACHE_DIR=str(tmp_path / "cache"))
    code = CHILD.format(path=kernel_file("vadd"))
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    assert len(_entries(str(tmp_path / "cache"))) == 1


def test_unwritable_cache_still_gives_a_kernel(tmp_path, monkeypatch, capsys):
    """A cache directory that cannot be created (its parent is a file) only costs caching."""
    from tilelang.driver import STATS, compile_source
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setenv("TILELANG_LOG", "1")
    n = STATS["compiled"]
    kernels.check_vadd(compile_source(kernels.VECTOR_ADD, "v.tl")["vadd"])
    kernels.check_vadd(compile_source(kernels.VECTOR_ADD, "v.tl")["vadd"])
    assert STATS["compiled"] == n + 2
    assert "cannot write the cache" in capsys.readouterr().err
