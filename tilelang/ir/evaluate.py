"""Evaluate IR integer expressions (shapes, grids, loop extents) for given sizes.

`tilec run` needs concrete shapes for its random inputs and the trip counts of the loops
around each `T.gemm` to count FLOPs; both are IR expressions over the symbolic sizes.
"""
from __future__ import annotations

from . import nodes as ir


class NotConstant(Exception):
    """The expression depends on something besides the bound names (e.g. tensor data)."""


_BINARY = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "//": lambda a, b: a // b, "%": lambda a, b: a % b, "min": min, "max": max,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "and": lambda a, b: a and b, "or": lambda a, b: a or b,
}


def evaluate(expr, env: dict):
    """The value of `expr` with the variables in `env` (name -> number) bound."""
    if isinstance(expr, int):
        return expr
    if isinstance(expr, ir.Const):
        return expr.value
    if isinstance(expr, ir.Var):
        if expr.name not in env:
            raise NotConstant(expr.name)
        return env[expr.name]
    if isinstance(expr, ir.Binary):
        lhs, rhs = evaluate(expr.lhs, env), evaluate(expr.rhs, env)
        if expr.op == "/":
            return lhs // rhs if _is_int(expr.dtype) else lhs / rhs
        if expr.op in ("//", "%") and rhs == 0:
            raise NotConstant("division by zero")
        return _BINARY[expr.op](lhs, rhs)
    if isinstance(expr, ir.Unary):
        value = evaluate(expr.operand, env)
        return -value if expr.op == "-" else not value
    if isinstance(expr, ir.Call) and expr.name == "ceildiv":
        a, b = (evaluate(x, env) for x in expr.args)
        if b == 0:
            raise NotConstant("division by zero")
        return -(-a // b)
    if isinstance(expr, ir.Cast):
        value = evaluate(expr.value, env)
        return int(value) if _is_int(expr.dtype) else value
    if isinstance(expr, ir.Select):
        cond = evaluate(expr.cond, env)
        return evaluate(expr.true_value if cond else expr.false_value, env)
    raise NotConstant(type(expr).__name__)


def _is_int(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


def gemm_flops(func, env: dict) -> int | None:
    """Floating-point operations of the `T.gemm`s of `func` (2*m*n*k per tile product,
    times the trip counts around it); 0 without a gemm; None when a trip count is not a
    function of the sizes alone (it depends on a block index or on tensor data). Tiles
    are counted whole, so ragged sizes count their padding."""
    try:
        return _flops(func.body, dict(env))
    except NotConstant:
        return None


def _flops(stmt, env) -> int:
    if isinstance(stmt, ir.Gemm):
        m, n = stmt.c.extents[-2], stmt.c.extents[-1]
        k = stmt.a.extents[-2] if stmt.transpose_a else stmt.a.extents[-1]
        return 2 * m * n * k
    if isinstance(stmt, ir.Seq):
        env = dict(env)             # a Let binds for the rest of its sequence
        total = 0
        for s in stmt.stmts:
            if isinstance(s, ir.Let):
                _bind(s, env)
            total += _flops(s, env)
        return total
    if isinstance(stmt, ir.For):
        inner = _flops(stmt.body, env)
        return inner * max(0, int(evaluate(stmt.extent, env))) if inner else 0
    if isinstance(stmt, ir.Kernel):
        inner = _flops(stmt.body, env)
        blocks = 1
        for g in stmt.grid:
            blocks *= max(0, int(evaluate(g, env)))
        return inner * blocks
    if isinstance(stmt, ir.If):
        # Upper bound: the costlier branch, as if every condition went its way.
        return max(_flops(stmt.then_body, env),
                   _flops(stmt.else_body, env) if stmt.else_body is not None else 0)
    return 0


def _bind(let, env: dict) -> None:
    """Bind a Let's variable when its value follows from the sizes (e.g. a tile count);
    one that depends on a block index or on data stays unbound."""
    try:
        env[let.var.name] = evaluate(let.value, env)
    except NotConstant:
        env.pop(let.var.name, None)
