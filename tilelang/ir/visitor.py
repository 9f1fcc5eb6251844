"""Generic traversal of the IR: children, pre-order walk, post-order rewrite, substitution."""
from __future__ import annotations

from dataclasses import fields, replace
from typing import Callable, Iterator

from .nodes import Node, Var, Expr


def _field_names(cls) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = tuple(f.name for f in fields(cls) if f.name != "span")
        _FIELDS[cls] = names
    return names


_FIELDS: dict[type, tuple[str, ...]] = {}


def children(node: Node) -> Iterator[Node]:
    """The direct child nodes of `node`, in field order (tuples are flattened)."""
    for name in _field_names(type(node)):
        value = getattr(node, name)
        if isinstance(value, Node):
            yield value
        elif isinstance(value, tuple):
            for item in value:
                if isinstance(item, Node):
                    yield item


def walk(node: Node) -> Iterator[Node]:
    """Every node under `node` (itself included), pre-order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(list(children(n))))


def rewrite(node: Node, fn: Callable[[Node], Node | None]) -> Node:
    """Post-order rewrite: children first, then `fn(rebuilt node)`; `fn` returns a
    replacement or None to keep the node. Unchanged subtrees keep their identity."""
    changes = {}
    for name in _field_names(type(node)):
        value = getattr(node, name)
        if isinstance(value, Node):
            new = rewrite(value, fn)
            if new is not value:
                changes[name] = new
        elif isinstance(value, tuple) and any(isinstance(v, Node) for v in value):
            new_items = tuple(rewrite(v, fn) if isinstance(v, Node) else v for v in value)
            if any(a is not b for a, b in zip(new_items, value)):
                changes[name] = new_items
    if changes:
        node = replace(node, **changes)
    result = fn(node)
    return node if result is None else result


def substitute(node: Node, mapping: dict[Var, Expr]) -> Node:
    """Replace free occurrences of variables (compared structurally) by expressions."""
    if not mapping:
        return node
    return rewrite(node, lambda n: mapping.get(n) if isinstance(n, Var) else None)


def free_vars(node: Node) -> set[Var]:
    """All Vars that occur under `node` (bound or not; names are unique per function)."""
    return {n for n in walk(node) if isinstance(n, Var)}
