"""Size expressions from the manifest (`"M * 2"`, `"(N + 127) // 128"`, `"max(K, 1)"`).

The codegen spells a shape dimension that is not a plain constant or symbol as a small
Python-style integer expression. The runtime evaluates those to check argument shapes and
to size `out_idx` outputs and workspaces. Only integer arithmetic is accepted (`+ - * //
%`, unary minus, `min`, `max`, `ceildiv`, parentheses), with Python's floor semantics as
in the IR; the text is parsed with the standard `ast` module and never `eval`ed.
"""
from __future__ import annotations

import ast
import operator

from ..diagnostics import ArtifactError

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
_CALLS = {"min": min, "max": max, "ceildiv": lambda a, b: -(-a // b)}


class SizeExpr:
    """A compiled size expression: `.names` it reads, `.evaluate(env) -> int`."""

    def __init__(self, text: str, where: str):
        self.text = text
        try:
            tree = ast.parse(text.strip(), mode="eval").body
        except SyntaxError:
            raise ArtifactError(f"{where}: cannot read size expression {text!r}") from None
        self.names: set[str] = set()
        self._fn = self._compile(tree, where)

    def evaluate(self, env: dict) -> int:
        try:
            return self._fn(env)
        except ZeroDivisionError:
            raise ValueError(f"size {self.text} divides by zero for "
                             f"{_show(env, self.names)}") from None

    def __repr__(self) -> str:
        return f"SizeExpr({self.text!r})"

    def __str__(self) -> str:
        return self.text

    def _compile(self, node, where: str):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            value = node.value
            return lambda env: value
        if isinstance(node, ast.Name):
            name = node.id
            self.names.add(name)
            return lambda env: env[name]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            op = _BINOPS[type(node.op)]
            lhs, rhs = self._compile(node.left, where), self._compile(node.right, where)
            return lambda env: op(lhs(env), rhs(env))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self._compile(node.operand, where)
            return lambda env: -inner(env)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in _CALLS and len(node.args) == 2 and not node.keywords):
            fn = _CALLS[node.func.id]
            a, b = (self._compile(x, where) for x in node.args)
            return lambda env: fn(a(env), b(env))
        raise ArtifactError(f"{where}: unsupported size expression {self.text!r} (integer "
                            f"+ - * // %, min, max and ceildiv only)")


def _show(env: dict, names) -> str:
    return ", ".join(f"{n} = {env[n]}" for n in sorted(names) if n in env)


def show_env(env: dict, names) -> str:
    """`"M = 4, N = 8"` for the names an expression reads (for error messages)."""
    return _show(env, names)
