"""The reference interpreter agrees with every example on both targets.

Each example runs, with small block sizes and ragged shapes, through the differential
check (tilelang/fuzz/differential.py): the interpreter on the parsed IR is the
reference; the CPU target's and tcsim:tiny's results, and the interpreter's run of the
IR after every pass for three of them (all of them in the slow variant), must agree
with it (the oracle of docs/semantics.md).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tilelang.fuzz.differential import check

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GEMM_BLOCKS = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 8}
ROWS = {"BLOCK_M": 4, "BLOCK_N": 16}

CASES = {
    "vector_add": ({"N": 37}, {"BLOCK": 16}),
    "bias_gelu": ({"M": 9, "N": 40}, ROWS),
    "softmax": ({"M": 9, "N": 40}, ROWS),
    "rmsnorm": ({"M": 9, "N": 40}, ROWS),
    "reduce": ({"M": 9, "N": 40}, ROWS),
    "transpose": ({"M": 9, "N": 40}, {"BLOCK": 8}),
    "gemm": ({"M": 37, "N": 29, "K": 21}, GEMM_BLOCKS),
    "gemm_bias_relu": ({"M": 20, "N": 18, "K": 19}, GEMM_BLOCKS),
    "gemm_epilogue": ({"M": 20, "N": 18, "K": 19}, GEMM_BLOCKS),
    "splitk_gemm": ({"M": 20, "N": 18, "K": 70}, GEMM_BLOCKS),
    "flash_attention": ({"BATCH": 1, "HEADS": 2, "SEQ_Q": 9, "SEQ_KV": 13},
                        {"BLOCK_M": 8, "BLOCK_N": 8, "DIM": 16}),
}


def test_every_example_is_covered():
    from .test_interp_kernels import GIVEN_INPUTS    # examples checked on given inputs
    assert sorted([*CASES, *GIVEN_INPUTS]) == \
        sorted(p.stem for p in EXAMPLES.rglob("*.tl"))


def _kernels(name):
    text = (EXAMPLES / f"{name}.tl").read_text()
    from tilelang.frontend import parse_module
    sizes, defines = CASES[name]
    return text, sizes, defines, [f.name for f in parse_module(text, name, defines).funcs]


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_on_both_targets(name):
    """The interpreter against both targets' code (on a disagreement, the stages are
    interpreted one by one to name the pass)."""
    text, sizes, defines, kernels = _kernels(name)
    for kernel in kernels:
        verdict = check(text, sizes, seed=3, kernel=kernel, defines=defines,
                        stages="bisect", filename=f"{name}.tl")
        assert verdict.kind == "ok", f"{name}/{kernel}: {verdict}"


@pytest.mark.parametrize("name", ["vector_add", "transpose", "reduce"])
def test_example_after_every_pass(name):
    text, sizes, defines, kernels = _kernels(name)
    for kernel in kernels:
        verdict = check(text, sizes, seed=4, kernel=kernel, defines=defines, stages="all")
        assert verdict.kind == "ok", f"{name}/{kernel}: {verdict}"
        assert verdict.stages_checked >= 12


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_example_after_every_pass_slow(name):
    text, sizes, defines, kernels = _kernels(name)
    for kernel in kernels:
        verdict = check(text, sizes, seed=5, kernel=kernel, defines=defines, stages="all")
        assert verdict.kind == "ok", f"{name}/{kernel}: {verdict}"


def test_the_readme_block_runs_as_written(monkeypatch):
    import re
    import numpy as np
    root = EXAMPLES.parent
    monkeypatch.chdir(root)
    readme = (root / "README.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", readme, flags=re.S)
                 if "interp.run(" in b)
    scope: dict = {}
    exec(compile(block, "README.md", "exec"), scope)
    a, b = scope["a"].astype(np.float64), scope["b"].astype(np.float64)
    np.testing.assert_allclose(scope["c"], a @ b, rtol=1e-5)
