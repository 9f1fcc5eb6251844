"""`dce`: dead-code elimination on the lowered IR.

Removes Lets whose variable is never used, block-local allocations that are never read
(together with the stores into them), and loops / ifs / sequences left empty. Expressions
have no side effects, so dropping them is always safe; atomics, stores to global memory
and global workspaces (part of the kernel's ABI) are always kept. Removal can make more
code dead (a Let used only by a dropped store), so the pass runs to a fixed point.
"""
from __future__ import annotations

from dataclasses import replace

from ..ir import (Node, Var, Load, Seq, Let, Alloc, Store, For, If, Unary, Module, Copy, Gemm,
                  Fill, Reduce, TileAtomic, PeerCopy, Region, Buffer, children, rewrite)
from ..ir.canon import canonicalize

EMPTY = Seq(())


def dce(module: Module) -> Module:
    while True:
        new = canonicalize(_sweep(module))
        if new == module:
            return new
        module = new


def _sweep(module: Module) -> Module:
    used_vars = _used_vars(module)
    read = _read_buffers(module)

    def visit(node: Node):
        if isinstance(node, Let) and node.var.name not in used_vars:
            return EMPTY
        if isinstance(node, Alloc) and node.buffer.scope != "global" \
                and node.buffer.name not in read:
            return EMPTY
        if isinstance(node, Store) and node.buffer.scope != "global" \
                and node.buffer.name not in read:
            return EMPTY
        return _prune(node)

    return rewrite(module, visit)


def _is_empty(s) -> bool:
    return isinstance(s, Seq) and not s.stmts


def _prune(node: Node):
    if isinstance(node, For) and _is_empty(node.body):
        return EMPTY
    if isinstance(node, If):
        then_empty = _is_empty(node.then_body)
        else_empty = node.else_body is None or _is_empty(node.else_body)
        if then_empty and else_empty:
            return EMPTY
        if then_empty:
            return If(Unary("not", node.cond, "bool", span=node.cond.span), node.else_body,
                      span=node.span)
        if node.else_body is not None and else_empty:
            return replace(node, else_body=None)
    return None


def _used_vars(node: Node) -> set[str]:
    """Names of variables that occur anywhere except in their own binding position."""
    used = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Var):
            used.add(n.name)
        elif isinstance(n, Let):
            stack.append(n.value)
        else:
            stack.extend(children(n))
    return used


def _read_buffers(node: Node) -> set[str]:
    """Names of buffers that something reads (tile ops count as reading all operands)."""
    read = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Load):
            read.add(n.buffer.name)
        elif isinstance(n, (Copy, Gemm, Fill, Reduce, TileAtomic, PeerCopy)):
            for c in children(n):
                if isinstance(c, Region):
                    read.add(c.buffer.name)
                elif isinstance(c, Buffer):
                    read.add(c.name)
        stack.extend(children(n))
    return read
