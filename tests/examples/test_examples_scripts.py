"""The scripts in examples/ run and check themselves (demo.py is what `make demo` runs),
and the README's tour shows the example kernels as they are in examples/."""
from __future__ import annotations

import re
import subprocess
import sys

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
