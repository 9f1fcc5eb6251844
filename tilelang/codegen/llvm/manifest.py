"""The JSON manifest embedded in every object / shared library (docs/interfaces.md).

It is all the runtime needs to bind arguments: parameters, symbolic sizes, workspaces.
The `grid` strings are for people; the runtime asks `name__num_blocks`.
"""
from __future__ import annotations

import json

from ...ir.nodes import Binary, Buffer, Call, Cast, Const, Module, PrimFunc, Var
from .abi import split_body, workspaces
from .target import TargetSpec

FORMAT = 1
_PREC = {"or": 1, "and": 2, "<": 3, "<=": 3, ">": 3, ">=": 3, "==": 3, "!=": 3,
         "+": 4, "-": 4, "*": 5, "/": 5, "//": 5, "%": 5}


def format_expr(e, parent_prec: int = 0) -> str:
    """A readable Python-style spelling of a size expression."""
    if isinstance(e, Const):
        return str(e.value).lower() if isinstance(e.value, bool) else str(e.value)
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Cast):
        return format_expr(e.value, parent_prec)
    if isinstance(e, Binary):
        if e.op in ("min", "max"):
            return f"{e.op}({format_expr(e.lhs)}, {format_expr(e.rhs)})"
        prec = _PREC[e.op]
        # the right operand binds tighter so that a - (b - c) keeps its parentheses
        text = f"{format_expr(e.lhs, prec)} {e.op} {format_expr(e.rhs, prec + 1)}"
        return f"({text})" if prec < parent_prec else text
    if isinstance(e, Call):
        if e.name == "ceildiv" and isinstance(e.args[1], Const):
            num = Binary("+", e.args[0], Const(e.args[1].value - 1, e.args[1].dtype), e.dtype)
            return format_expr(Binary("//", num, e.args[1], e.dtype), parent_prec)
        return f"{e.name}({', '.join(format_expr(a) for a in e.args)})"
    return f"<{type(e).__name__}>"


def _shape(shape) -> list:
    return [int(d.value) if isinstance(d, Const) else format_expr(d) for d in shape]


def _param(p) -> dict:
    if isinstance(p, Buffer):
        return {"name": p.name, "kind": "tensor", "dtype": p.dtype, "shape": _shape(p.shape)}
    return {"name": p.name, "kind": "scalar", "dtype": p.dtype}


def kernel_entry(func: PrimFunc) -> dict:
    prologue, kernel = split_body(func)
    grid = [format_expr(g) for g in kernel.grid]
    grid += ["1"] * (3 - len(grid))
    return {
        "name": func.name,
        "params": [_param(p) for p in func.params],
        "symbols": [s.name for s in func.symbols],
        "workspaces": [{"name": w.name, "dtype": w.dtype, "shape": _shape(w.shape)}
                       for w in workspaces(prologue)],
        "grid": grid,
        "threads": kernel.threads,
    }


def build_manifest(module: Module, target: TargetSpec) -> dict:
    from ... import __version__
    return {"format": FORMAT, "compiler_version": __version__, "target": target.as_dict(),
            "kernels": [kernel_entry(f) for f in module.funcs]}


def to_json(manifest: dict) -> str:
    return json.dumps(manifest, separators=(",", ":"), sort_keys=False)
