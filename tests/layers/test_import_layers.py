"""The layer rules hold for every import in the package, and `import tilelang.ops` (or
`tilelang`) loads none of the compiler."""
from __future__ import annotations

import subprocess
import sys

import pytest

sys.path.insert(0, __file__.rsplit("/", 1)[0])

from layer_rules import imports, scan, violations  # noqa: E402


def test_every_import_keeps_the_layer_rules():
    assert scan() == []


@pytest.mark.parametrize("module, source, broken", [
    ("tilelang.runtime.launch", "from ..ir import nodes", "tilelang.ir"),
    ("tilelang.runtime.tcsim.sim", "def f():\n    import llvmlite.binding", "llvmlite"),
    ("tilelang.runtime.kernel_map", "from ..targets.tcsim import target", "tilelang.targets"),
    ("tilelang.ir.printer", "from ..passes import simplify", "tilelang.passes"),
    ("tilelang.ir.nodes", "def f():\n    from ..frontend import parse_module", "tilelang.frontend"),
    ("tilelang.passes.tiling", "from ..codegen.llvm import compile_module", "tilelang.codegen"),
    ("tilelang.passes.dce", "from ..targets.cpu.target import CpuTarget", "tilelang.targets"),
    ("tilelang.codegen.tcsim.vec", "from ...frontend.exprs import x", "tilelang.frontend"),
    ("tilelang.targets.tcsim.isa", "import numpy", "numpy"),
    ("tilelang.targets.cpu.machine", "from ...runtime.launch import x", "tilelang.runtime"),
    ("tilelang.targets.tcsim.config", "from .target import TcsimTarget", "tilelang.targets"),
    ("tilelang.ops.blocks", "from ..passes import layout", "tilelang.passes"),
])
def test_a_broken_rule_is_reported(module, source, broken):
    bad = violations(module, imports(source, module, False))
    assert bad and broken in bad[0], bad


@pytest.mark.parametrize("package", ["tilelang.targets", "tilelang.targets.tcsim"])
def test_a_targets_init_loads_no_target_class_on_import(package):
    """Importing a leaf runs its packages' `__init__`: they stay light at module level
    (the registry may load a Target class inside `get`)."""
    top = violations(package, imports("from .tcsim.target import TcsimTarget", package, True))
    lazy = violations(package, imports("def get():\n    from .tcsim.target import X",
                                       package, True))
    assert top and "a leaf imports only leaves" in top[0] and lazy == []


@pytest.mark.parametrize("module, source", [
    ("tilelang.runtime.tcsim.sim", "from ...targets.tcsim.config import get_config"),
    ("tilelang.runtime.artifact", "from ..diagnostics import ArtifactError"),
    ("tilelang.passes.tiling", "from ..targets.cpu import machine"),
    ("tilelang.targets.tcsim.isa", "from dataclasses import dataclass\nfrom .config import X"),
    ("tilelang.targets.tcsim.artifact", "from ...diagnostics import ArtifactError"),
    ("tilelang.ir.evaluate", "from . import nodes"),
])
def test_what_the_rules_allow(module, source):
    assert violations(module, imports(source, module, False)) == []


def _loaded_by(statement: str) -> set[str]:
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", statement],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


def test_importing_the_kernel_library_loads_no_pass():
    loaded = _loaded_by("import tilelang.ops")
    assert "tilelang.ops.gemm" in loaded                    # the scan sees the imports
    assert not [m for m in loaded if m.startswith(("tilelang.passes", "tilelang.codegen",
                                                   "tilelang.frontend", "lark", "llvmlite"))]


def test_importing_tilelang_stays_light():
    loaded = _loaded_by("import tilelang")
    assert not [m for m in loaded if m.startswith(("tilelang.driver", "tilelang.ir",
                                                   "lark", "llvmlite", "numpy"))]
