"""The canonical shape of statement sequences, shared by every pass.

The frontend builds bodies one way: a body of one statement is that statement, a longer
one is a flat Seq, an empty one is `Seq(())`; a function body is always a Seq. Passes
keep to the same shape (`canonicalize`) so that the printed IR of any stage parses back to an equal IR.
"""
from __future__ import annotations

from dataclasses import replace

from .nodes import Node, Seq, PrimFunc
from .visitor import rewrite


def make_body(stmts, span=None):
    """One statement, or a flat Seq of several (empty Seqs dropped)."""
    flat = []
    for s in stmts:
        flat.extend(s.stmts if isinstance(s, Seq) else (s,))
    if len(flat) == 1:
        return flat[0]
    return Seq(tuple(flat)) if span is None else Seq(tuple(flat), span=span)


def canonicalize(node: Node) -> Node:
    return rewrite(node, _fix)


def _fix(node: Node):
    if isinstance(node, Seq):
        if len(node.stmts) == 1 or any(isinstance(s, Seq) for s in node.stmts):
            return make_body(node.stmts, node.span)
        return None
    if isinstance(node, PrimFunc) and not isinstance(node.body, Seq):
        return replace(node, body=Seq((node.body,), span=node.body.span))
    return None
