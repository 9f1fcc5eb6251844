"""Fresh names for variables and buffers that passes introduce.

Vars compare by (name, dtype) and the verifier rejects rebinding, so a new loop variable
must not reuse any name already present in the function (params, symbols, buffers, vars).
"""
from __future__ import annotations

from ..ir import Node, Var, Buffer, PrimFunc, walk


def names_in(node: Node) -> set[str]:
    """Every var and buffer name under `node`."""
    found = set()
    for n in walk(node):
        if isinstance(n, (Var, Buffer)):
            found.add(n.name)
        elif isinstance(n, PrimFunc):
            found.add(n.name)
    return found


class NameSupply:
    """Hands out names not in `taken` (and records them as taken)."""

    def __init__(self, taken: set[str]):
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        if base not in self.taken:
            self.taken.add(base)
            return base
        n = 0
        while f"{base}_{n}" in self.taken:
            n += 1
        name = f"{base}_{n}"
        self.taken.add(name)
        return name

    def var(self, base: str, dtype: str = "int32") -> Var:
        return Var(self.fresh(base), dtype)
