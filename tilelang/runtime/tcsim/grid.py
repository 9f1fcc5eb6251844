"""Grid expressions: `(N + 127) // 128`, `ceildiv(M, 64)`, `min(a, b)` over symbol names.

Stored as text in programs and artifacts and evaluated at launch from the symbol values
bound from argument shapes. Only integer literals, names, + - * // % and the functions
ceildiv/min/max are accepted: an artifact from disk never runs arbitrary code.
"""
from __future__ import annotations

import ast
import functools

_FUNCS = {"ceildiv": lambda a, b: -(-a // b), "min": min, "max": max}
_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
           ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
           ast.Mod: lambda a, b: a % b}


class GridError(ValueError):
    pass


def evaluate(text: str, env: dict[str, int]) -> int:
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise GridError(f"bad grid expression {text!r}") from None
    return _eval(tree, env, text)


def _eval(node, env, text):
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise GridError(f"grid expression {text!r} names unknown size {node.id!r}")
        return int(env[node.id])
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_eval(node.left, env, text), _eval(node.right, env, text))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand, env, text)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCS and not node.keywords):
        return _FUNCS[node.func.id](*(_eval(a, env, text) for a in node.args))
    raise GridError(f"grid expression {text!r}: unsupported syntax")


@functools.lru_cache(maxsize=8)
def block_order(grid: tuple[int, int, int], panel: int) -> tuple[tuple[int, int, int], ...]:
    """Block coordinates in launch order. panel == 0: row-major (bx fastest). panel = P:
    rasterised for L2 reuse — the grid is cut into panels of P rows of `by`, and each
    panel is walked column by column (by fastest within a column), so the blocks that run
    together share both their A row panels and their B column panels. Cached: a grid
    run again (the clock model, repeated launches) reuses it (read-only)."""
    gx, gy, gz = grid
    order = []
    for bz in range(gz):
        if panel <= 0:
            order += [(bx, by, bz) for by in range(gy) for bx in range(gx)]
            continue
        for y0 in range(0, gy, panel):
            rows = range(y0, min(y0 + panel, gy))
            order += [(bx, by, bz) for bx in range(gx) for by in rows]
    return tuple(order)
