"""The tuning knobs of a kernel's source: which names set its pipeline depth, block
shape and dtypes, so advice can say "NUM_STAGES 1 -> 3" and a caller can apply it
(`-D NUM_STAGES=3`, or the factory parameter of that name).

Read from the source text with `ast` (a `.tl` file is Python syntax): the name given as
`num_stages=` to `T.Pipelined`; the names in the shapes of the buffers a `T.gemm`
multiplies (C's rows and columns are BLOCK_M and BLOCK_N, A's reduction extent
BLOCK_K); the block size in the grid's `T.ceildiv(N, BLOCK)`; dtype constants. A knob
is *settable* when its name is a module-level constant (a define overrides it).
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field

from .. import dtypes


@dataclass
class Knobs:
    names: dict = field(default_factory=dict)       # role -> source name
    values: dict = field(default_factory=dict)      # source name -> current value
    settable: set = field(default_factory=set)      # names a define can change

    def name(self, role: str) -> str | None:
        return self.names.get(role)

    def value(self, role: str):
        name = self.names.get(role)
        return self.values.get(name) if name else None

    def change(self, role: str, value) -> dict:
        """{name: value} to apply, if the knob of `role` is settable; else {}."""
        name = self.names.get(role)
        return {name: value} if name in self.settable else {}


def of_kernel(kernel_function) -> Knobs:
    """The knobs of a `KernelFunction` (its `.tl` text or its Python function)."""
    text = getattr(kernel_function, "_text", None)
    if text is None and getattr(kernel_function, "_pyfunc", None) is not None:
        try:
            text = inspect.getsource(kernel_function._pyfunc)
        except (OSError, TypeError):
            text = None
        if text is not None:
            # the function's module constants are its globals
            text = textwrap.dedent(text)
    if text is None:
        return Knobs()
    knobs = from_source(text)
    for name, value in kernel_function.options.defines:
        knobs.values[name] = value
    pyfunc = getattr(kernel_function, "_pyfunc", None)
    if pyfunc is not None:
        _values_from_function(knobs, pyfunc)
    return knobs


def from_source(text: str) -> Knobs:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return Knobs()
    knobs = Knobs()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Constant):
            knobs.values[stmt.targets[0].id] = stmt.value.value
            knobs.settable.add(stmt.targets[0].id)
    allocs = _allocs(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = _callee(node)
        if callee == "Pipelined":
            for kw in node.keywords:
                if kw.arg == "num_stages" and isinstance(kw.value, ast.Name):
                    knobs.names.setdefault("num_stages", kw.value.id)
        elif callee == "gemm" and len(node.args) >= 3:
            _gemm_knobs(knobs, node, allocs)
        elif callee == "Kernel" and node.args:
            block = _ceildiv_block(node.args[0])
            if block:
                knobs.names.setdefault("block", block)
    for name, value in knobs.values.items():
        if isinstance(value, str) and dtypes.canonical(value) and "dtype" in name.lower():
            knobs.names.setdefault("dtype", name)
    return knobs


def _callee(call: ast.Call) -> str | None:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else None)


def _allocs(tree) -> dict:
    """{buffer name: [shape element names or None]} of `x = T.alloc_*((d0, d1), ...)`."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call) \
                and (_callee(node.value) or "").startswith("alloc_") and node.value.args:
            shape = node.value.args[0]
            dims = shape.elts if isinstance(shape, (ast.Tuple, ast.List)) else [shape]
            out[node.targets[0].id] = [d.id if isinstance(d, ast.Name) else None for d in dims]
    return out


def _gemm_knobs(knobs: Knobs, call: ast.Call, allocs: dict) -> None:
    names = [a.id if isinstance(a, ast.Name) else None for a in call.args[:3]]
    a, _, c = (allocs.get(n) for n in names)
    flags = {kw.arg: kw.value for kw in call.keywords}
    trans_a = isinstance(flags.get("transpose_A"), ast.Constant) and flags["transpose_A"].value
    if c and len(c) >= 2:
        if c[-2]:
            knobs.names.setdefault("block_m", c[-2])
        if c[-1]:
            knobs.names.setdefault("block_n", c[-1])
    if a and len(a) >= 2:
        k = a[-2] if trans_a else a[-1]
        if k:
            knobs.names.setdefault("block_k", k)


def _ceildiv_block(expr) -> str | None:
    if isinstance(expr, ast.Call) and _callee(expr) == "ceildiv" and len(expr.args) == 2 \
            and isinstance(expr.args[1], ast.Name):
        return expr.args[1].id
    return None


def _values_from_function(knobs: Knobs, pyfunc) -> None:
    """Current values of names a Python kernel reads from its globals and closure (a
    `@tilelang.jit` factory's parameters are closure cells of the kernel it returns)."""
    module = getattr(pyfunc, "__globals__", {})
    closure = {}
    code = getattr(pyfunc, "__code__", None)
    cells = getattr(pyfunc, "__closure__", None) or ()
    if code is not None:
        for name, cell in zip(code.co_freevars, cells):
            try:
                closure[name] = cell.cell_contents
            except ValueError:
                pass
    for name in knobs.names.values():
        for scope, settable in ((closure, False), (module, True)):
            if name not in knobs.values and isinstance(scope.get(name), (int, float, str)):
                knobs.values[name] = scope[name]
                if settable:                  # a define overrides a global
                    knobs.settable.add(name)
