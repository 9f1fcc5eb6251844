"""The CPU pipeline on every example kernel: verify-each, print -> parse round trip after
every pass, and the lowered IR run by the reference interpreter against the numpy
references (with the block sizes shrunk by defines so the interpreter stays quick)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tilelang.frontend import parse_module
from tilelang.ir import Buffer, Var
from tilelang.ir.printer import print_module
from tilelang.ir.verifier import verify
from tilelang import targets
from tilelang.passes import PassManager

from . import interp

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.tl"))
# The frontend's test kernels cover more of the surface (alloc_var, macros, elif, ...).
SURFACE = EXAMPLES + sorted((ROOT / "tests" / "frontend" / "kernels").glob("*.tl"))
SMALL = {"DIM": 4, "SPLIT_K": 2}
SIZES = {"M": 5, "N": 7, "K": 6, "BATCH": 1, "HEADS": 2, "SEQ_Q": 5, "SEQ_KV": 6}


def small_defines(text: str, block: int) -> dict:
    """Every block-size constant of the file set to `block` (and DIM, SPLIT_K small)."""
    names = re.findall(r"^(BLOCK\w*|DIM|SPLIT_K) = \d+", text, flags=re.M)
    return {n: SMALL.get(n, block) for n in names}


def load(path: Path, block: int = 4):
    text = path.read_text()
    defines = small_defines(text, block)
    if re.search(r'^dtype = "float16"', text, flags=re.M):
        defines["dtype"] = "float32"     # the comparison below uses float32 tolerances
    return parse_module(text, str(path), defines=defines)


@pytest.mark.parametrize("path", SURFACE, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_pass_output_verifies_and_round_trips(path):
    mod = parse_module(path.read_text(), str(path))
    verify(mod)
    for p in targets.get("cpu").pipeline():
        mod = PassManager([p], verify_each=True).run(mod)
        again = parse_module(print_module(mod), f"<after {p.name}>")
        assert again == mod, f"{path.stem}: printed IR after {p.name} does not parse back"


def _reference(name: str):
    import importlib.util
    spec = importlib.util.spec_from_file_location("tl_example_refs",
                                                  ROOT / "examples" / "references.py")
    refs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(refs)
    if name in ("splitk_gemm", "gemm_epilogue"):
        return refs.gemm
    return getattr(refs, name)


@pytest.mark.parametrize("block", [4, 1, 3])
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_lowered_examples_match_numpy_in_the_interpreter(path, block):
    """Block size 1 makes every tile a single element (all-unit regions, extent-1 loops);
    3 makes every tile ragged."""
    lowered = PassManager(targets.get("cpu").pipeline(), verify_each=True).run(load(path, block))
    rng = np.random.default_rng(7)
    for func in lowered.funcs:
        tensors = [p for p in func.params if isinstance(p, Buffer)]
        assert len(tensors) == len(func.params), "examples take tensors only"
        args = {}
        for buf in tensors:
            shape = tuple(SIZES[d.name] if isinstance(d, Var) else d.value for d in buf.shape)
            args[buf.name] = rng.uniform(-1, 1, size=shape).astype(np.float32)
        out = tensors[-1].name
        args[out][...] = 0
        interp.run(lowered, func.name, args, SIZES)
        want = _reference(func.name)(*[args[b.name] for b in tensors[:-1]])
        np.testing.assert_allclose(args[out], want, rtol=1e-4, atol=1e-5,
                                   err_msg=f"{path.stem}:{func.name}")
