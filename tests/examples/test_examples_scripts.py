"""The scripts in examples/ run and check themselves (demo.py is what `make demo` runs),
and the README's tour shows the example kernels as they are in examples/."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from examples_support import EXAMPLES, ROOT


def run_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_demo_quick():
    proc = run_script(str(EXAMPLES / "demo.py"), "--quick")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "all kernels match numpy"
    for kernel in ("gemm", "softmax", "flash_attention"):
        row = next(line for line in lines if line.startswith(kernel + " "))
        assert " PASS " in row and ("GFLOP/s" in row or "GB/s" in row), row


def test_python_api_script():
    proc = run_script(str(EXAMPLES / "python_api.py"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "all steps match numpy"
    assert sum(line.endswith(" PASS") for line in lines) == 6, proc.stdout


def _code_lines(text: str) -> list[str]:
    """Non-blank lines without comments (the README shows the kernels without them)."""
    out = []
    for line in text.splitlines():
        line = re.sub(r"\s+#.*$", "", line) if not line.lstrip().startswith("#") else ""
        if line.strip():
            out.append(line.rstrip())
    return out


def _readme_blocks() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", readme, flags=re.S)


def test_readme_opens_with_make_demo_and_make_test():
    readme = (ROOT / "README.md").read_text()
    first_block = re.search(r"```\w*\n(.*?)```", readme, flags=re.S).group(1)
    assert first_block.split("\n")[:2] == ["make demo", "make test"]


def test_readme_tour_is_the_real_gemm():
    gemm = _code_lines((EXAMPLES / "gemm.tl").read_text())
    assert any(_code_lines(block) == gemm for block in _readme_blocks())


def test_readme_softmax_excerpt_is_in_softmax_tl():
    softmax = "\n".join(_code_lines((EXAMPLES / "softmax.tl").read_text()))
    excerpts = [b for b in _readme_blocks() if "T.reduce_max" in b]
    assert excerpts
    for block in excerpts:
        assert "\n".join(_code_lines(block)) in softmax


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler on this machine")
def test_c_program_calls_the_aot_gemm(tmp_path):
    """examples/aot/gemm_main.c, built against `tilec compile`'s library and header,
    computes a ragged GEMM correctly (the program checks itself)."""
    so = tmp_path / "gemm.so"
    subprocess.run([sys.executable, "-m", "tilelang.cli", "compile",
                    str(EXAMPLES / "gemm.tl"), "-o", str(so)], check=True, cwd=ROOT)
    assert (tmp_path / "gemm.h").is_file()
    exe = tmp_path / "gemm_main"
    subprocess.run(["cc", "-O2", f"-I{tmp_path}", str(EXAMPLES / "aot" / "gemm_main.c"),
                    str(so), "-o", str(exe), "-Wl,-rpath," + str(tmp_path), "-lm"],
                   check=True)
    proc = subprocess.run([str(exe), "131", "67", "259"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("gemm 131x259x67 from C") and "PASS" in proc.stdout


def test_readme_python_api_block_runs(tmp_path):
    """The README's Python API block, run as written (from a directory where `examples/`
    is the repository's and gemm.so has been built by tilec), then its results checked."""
    block = next(b for b in _readme_blocks() if "tilelang.load(" in b)
    (tmp_path / "examples").symlink_to(EXAMPLES, target_is_directory=True)
    subprocess.run([sys.executable, "-m", "tilelang.cli", "compile", "examples/gemm.tl",
                    "-o", "gemm.so"], check=True, cwd=tmp_path)
    script = tmp_path / "readme_api.py"
    script.write_text(block + """
import json
print(json.dumps({
    "gemm": float(np.abs(c32 - a32 @ b32).max()),
    "gemm_out_idx": float(np.abs(gemm(a, b) - a32 @ b32).max()),
    "row_sum": float(np.abs(row_sums - x.sum(axis=1)).max()),
    "add": float(np.abs(c - 2.0).max()),
    "scale": float(np.abs(y - 2.0 * np.arange(10)).max()),
}))
""")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    errors = json.loads(proc.stdout.strip().splitlines()[-1])
    assert errors["add"] == 0 and errors["scale"] == 0, errors
    # float32 sums of <= 200 terms of size ~1: absolute errors far below 1e-3
    assert max(errors.values()) < 1e-3, errors


def test_readme_cli_lines_run():
    """Every `tilec ...` line of the README's CLI block exits 0 (run from a directory
    where `examples/` is the repository's)."""
    import tempfile
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## The CLI.*?```\n(.*?)```", readme, flags=re.S).group(1)
    commands = [line.split("#")[0].split() for line in block.splitlines()
                if line.startswith("tilec ")]
    assert len(commands) >= 8
    tilec = [sys.executable, "-m", "tilelang.cli"]
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "examples").symlink_to(EXAMPLES, target_is_directory=True)
        for argv in commands:
            if argv[:3] == ["tilec", "run", "examples/gemm.tl"]:
                argv = argv + ["--repeat", "1"]
            proc = subprocess.run(tilec + argv[1:], cwd=tmp, capture_output=True, text=True,
                                  timeout=300)
            assert proc.returncode == 0, f"{' '.join(argv)}:\n{proc.stdout}{proc.stderr}"
        assert (Path(tmp) / "gemm.so").is_file() and (Path(tmp) / "gemm.h").is_file()
        assert sorted(p.name for p in (Path(tmp) / "dumps").iterdir())
