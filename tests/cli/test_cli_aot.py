"""AOT: `tilec compile --emit so` in a real subprocess, the library loaded by a process that
cannot import the compiler, and called from C through the generated header."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from cli_support import run_python, tilec_binary

# Any import of the compiler (or its dependencies) fails in the child process.
BLOCKER = """
import sys
BLOCKED = ("llvmlite", "lark", "tilelang.frontend", "tilelang.passes", "tilelang.codegen",
           "tilelang.ir", "tilelang.driver", "tilelang.language", "tilelang.decorators")

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ImportError(f"{name} is blocked in this process")
        return None

sys.meta_path.insert(0, Blocker())
"""

LOAD_AND_RUN = BLOCKER + """
import numpy as np
import tilelang
lib = tilelang.load(SO_PATH)
a = np.arange(1000, dtype=np.float32); b = np.full(1000, 2.0, np.float32)
c = np.zeros(1000, np.float32)
lib["vadd"](a, b, c)
assert (c == a + b).all(), c
assert lib.vadd(a, b, out_idx=[-1]).tolist() == (a + b).tolist()
c2 = np.zeros(1000, np.float32)
tilelang.load(SO_PATH)(a, b, c2)          # a one-kernel library is its kernel
assert (c2 == a + b).all(), c2
assert lib(a, b, out_idx=[-1]).tolist() == (a + b).tolist()
print("ok", sorted(m for m in sys.modules if m.startswith(("llvmlite", "lark"))))
"""

C_MAIN = r"""
#include <stdio.h>
#include <stdint.h>
#include "vadd.h"

int main(void) {
    float a[1000], b[1000], c[1000];
    for (int i = 0; i < 1000; i++) { a[i] = (float)i; b[i] = 0.5f; c[i] = -1.0f; }
    vadd(a, b, c, 1000);
    for (int i = 0; i < 1000; i++) {
        if (c[i] != a[i] + b[i]) { printf("mismatch at %d: %f\n", i, c[i]); return 1; }
    }
    printf("c ok\n");
    return 0;
}
"""


@pytest.fixture
def built_so(kernel_file, tmp_path):
    """vadd.so + vadd.h written by the installed `tilec` console script."""
    out = tmp_path / "aot" / "vadd.so"
    out.parent.mkdir()
    proc = subprocess.run([tilec_binary(), "compile", kernel_file("vadd"), "--emit", "so",
                           "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert out.exists() and out.with_suffix(".h").exists()
    return out


def test_load_without_the_compiler(built_so):
    proc = run_python(LOAD_AND_RUN.replace("SO_PATH", repr(str(built_so))))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok []"


def test_a_library_of_several_kernels_says_which_to_call():
    import numpy as np
    import tilelang
    from cli_support import ROOT
    lib = tilelang.compile(str(ROOT / "examples" / "reduce.tl"))
    x = np.ones((4, 8), np.float32)
    with pytest.raises(TypeError, match=r"holds 2 kernels \(col_sum, row_sum\): call one"):
        lib(x, np.zeros(4, np.float32))
    from tilelang.driver import compile_file
    sim = compile_file(ROOT / "examples" / "vector_add.tl", target="tcsim:tiny")
    a, c = np.ones(100, np.float32), np.zeros(100, np.float32)
    sim(a, a, c)                            # the simulated library of one kernel too
    assert (c == 2).all()


def test_blocker_really_blocks():
    """The check above means something only if the blocker stops a compiler import."""
    proc = run_python(BLOCKER + "import tilelang.frontend\n")
    assert proc.returncode != 0 and "blocked" in proc.stderr


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_c_program_calls_the_library(built_so):
    directory = built_so.parent
    (directory / "main.c").write_text(C_MAIN)
    exe = directory / "main"
    build = subprocess.run(["cc", "-std=c11", "-o", str(exe), str(directory / "main.c"),
                            "-I", str(directory), str(built_so),
                            f"-Wl,-rpath,{directory}"], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == "c ok"


def test_tilec_console_script_exit_codes(kernel_file, tmp_path):
    """The installed script, not just the click object: a user error exits 1 without a
    traceback, a usage error 2."""
    missing = subprocess.run([tilec_binary(), "compile", str(tmp_path / "missing.tl")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 1
    assert "error[TL0701]" in missing.stderr and "Traceback" not in missing.stderr
    usage = subprocess.run([tilec_binary(), "compile"], capture_output=True, text=True,
                           timeout=120)
    assert usage.returncode == 2
    ok = subprocess.run([tilec_binary(), "ir", kernel_file("vadd")], capture_output=True,
                        text=True, timeout=120)
    assert ok.returncode == 0 and "def vadd(" in ok.stdout
