"""`vectorize`: choose which `T.Parallel` loops become SIMD loops on the CPU.

A block runs on one core, so parallelism inside it means SIMD lanes. The innermost
parallel loop (one with no loop inside) of constant extent becomes "vectorized", which
codegen turns into LLVM vectorisation hints; every other parallel loop becomes "serial".
Pipelined loops are serial on the CPU too. Their `num_stages` annotation is dropped with
the kind: nothing after this pass reads it, and `.tl` text has no spelling for a serial
loop with annotations (`tilec ir --after vectorize` must parse back).
"""
from __future__ import annotations

from dataclasses import replace

from ..ir import Const, For, Module, rewrite, walk


def vectorize(module: Module) -> Module:
    return rewrite(module, _retarget)


def _retarget(node):
    if not isinstance(node, For):
        return None
    if node.kind == "pipelined":
        return replace(node, kind="serial", annotations=())
    if node.kind != "parallel":
        return None
    innermost = not any(isinstance(n, For) for n in walk(node.body))
    if innermost and isinstance(node.extent, Const):
        return replace(node, kind="vectorized")
    return replace(node, kind="serial")
