"""The layer rules of docs/architecture.md ("Layers"), as data, and a scan of every
import in `tilelang/` (module level and inside functions alike: a lazy import is still a
dependency). A uniquely named module: every test directory has its own conftest."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "tilelang"

# Leaves any layer may import: they import only the standard library (and each other).
SHARED_LEAVES = ("tilelang.dtypes", "tilelang.diagnostics", "tilelang.version")
TARGET_LEAVES = ("tilelang.targets.cpu.machine", "tilelang.targets.tcsim.isa",
                 "tilelang.targets.tcsim.asm", "tilelang.targets.tcsim.encoding",
                 "tilelang.targets.tcsim.validate", "tilelang.targets.tcsim.artifact",
                 "tilelang.targets.tcsim.config")
# importing a target leaf runs these first, so they are held to the same rule at module
# level (the registry's `get` loads the Target classes when called)
TARGET_INITS = ("tilelang.targets", "tilelang.targets.cpu", "tilelang.targets.tcsim")
COMPILER = ("tilelang.frontend", "tilelang.ir", "tilelang.passes", "tilelang.codegen",
            "tilelang.driver", "tilelang.language", "tilelang.targets", "tilelang.decorators",
            "tilelang.cli", "lark", "llvmlite")

# (layer, what it must not import, what it may import nonetheless besides the leaves)
RULES = [
    ("tilelang.runtime", COMPILER, ()),
    ("tilelang.ir", ("tilelang",), ("tilelang.ir",)),
    ("tilelang.passes", ("tilelang.codegen", "tilelang.driver", "tilelang.frontend",
                         "tilelang.targets", "tilelang.decorators", "tilelang.cli"), ()),
    ("tilelang.codegen", ("tilelang.frontend", "tilelang.passes", "tilelang.driver",
                          "tilelang.targets", "tilelang.decorators", "tilelang.cli"), ()),
    ("tilelang.ops", ("tilelang.passes", "tilelang.codegen", "tilelang.frontend",
                      "tilelang.ir", "lark", "llvmlite"), ()),
]


def _within(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def is_leaf(name: str) -> bool:
    return _within(name, SHARED_LEAVES + TARGET_LEAVES) or name in TARGET_INITS or \
        name == "tilelang"


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(source: str, module: str, is_package: bool) -> list[tuple[str, int]]:
    """(absolute module name, line) of every import in `source` (of its top-level
    statements only for the targets' `__init__` modules)."""
    out = []
    package = module if is_package else module.rpartition(".")[0]
    tree = ast.parse(source)
    nodes = tree.body if module in TARGET_INITS else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            if node.module is None or node.level:
                # `from . import x` / `from ..pkg import x`: x may be a module
                out += [(f"{target}.{a.name}", node.lineno) for a in node.names]
            out.append((target, node.lineno))
    return out


def violations(module: str, found) -> list[str]:
    """What of `found` ((name, line) pairs imported by `module`) breaks a rule."""
    bad = []
    for name, line in found:
        if is_leaf(module) and module != "tilelang":
            top = name.split(".")[0]
            if top != "tilelang" and top not in sys.stdlib_module_names \
                    and not _within(module, ("tilelang.dtypes",)):     # numpy, lazily
                bad.append(f"{module}:{line} imports {name} (a leaf imports only the "
                           f"standard library)")
            elif top == "tilelang" and not is_leaf(name):
                bad.append(f"{module}:{line} imports {name} (a leaf imports only leaves)")
            continue
        for layer, forbidden, allowed in RULES:
            if _within(module, (layer,)) and _within(name, forbidden) \
                    and not is_leaf(name) and not _within(name, allowed):
                bad.append(f"{module}:{line} imports {name} ({layer} must not)")
    return bad


def scan() -> list[str]:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        found = imports(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")
        bad += violations(module, found)
    return bad
