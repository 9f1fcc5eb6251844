"""The JSON manifest embedded in every object / shared library (docs/interfaces.md).

It is all the runtime needs to bind arguments and launch: parameters, symbolic sizes,
workspaces, and the grids in launch order with their entry symbols. The `grid` strings
are for people; the runtime asks each grid's `num_blocks` entry.
"""
from __future__ import annotations

import json

from ... import dtypes
from ...ir.nodes import (Alloc, Atomic, AtomicFetch, Barrier, Binary, Buffer, Call, Cast,
                         Const, Let, Load, Module, PeerCopy, PrimFunc, SignalOp, Store, Unary,
                         Var, Wait)
from ...ir.visitor import walk
from .abi import grid_symbols, split_body, workspaces
from .arena import arena_sizes
from .ranks import rank_sites, symmetric_buffers, uses_ranks
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
    if isinstance(e, Unary) and e.op == "-":
        return f"-{format_expr(e.operand, 6)}"
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


_SIZE_OPS = {"+", "-", "*", "//", "%", "min", "max"}


def is_size_expr(e) -> bool:
    """Whether `e` is integer arithmetic the runtime can evaluate from the manifest text
    (ints, names, + - * // %, min, max, ceildiv)."""
    for n in walk(e):
        if isinstance(n, (Const, Var, Cast)) or (isinstance(n, Unary) and n.op == "-"):
            if isinstance(n, (Const, Var)) and not dtypes.is_int(n.dtype):
                return False
        elif isinstance(n, Binary) and n.op in _SIZE_OPS:
            continue
        elif isinstance(n, Call) and n.name == "ceildiv":
            continue
        else:
            return False
    return True


def _access(func: PrimFunc) -> dict:
    """name -> "read" | "write" | "readwrite" for each tensor, from the kernel body (the
    runtime lets read-only tensors overlap)."""
    reads, writes = set(), set()
    for n in walk(func.body):
        if isinstance(n, Load):
            reads.add(n.buffer.name)
        elif isinstance(n, (Store, Atomic)):
            writes.add(n.buffer.name)
        elif isinstance(n, PeerCopy):
            reads.add(n.src.name)
            writes.add(n.dst.name)
        elif isinstance(n, (SignalOp, Barrier, AtomicFetch)):
            reads.add(n.buffer.name)
            writes.add(n.buffer.name)
        elif isinstance(n, Wait):
            reads.add(n.buffer.name)
    return {name: ("readwrite" if name in reads else "write") if name in writes else "read"
            for name in reads | writes}


def _param(p, access: dict) -> dict:
    if isinstance(p, Buffer):
        return {"name": p.name, "kind": "tensor", "dtype": p.dtype, "shape": _shape(p.shape),
                "access": access.get(p.name, "read")}
    return {"name": p.name, "kind": "scalar", "dtype": p.dtype}


def _grid_entry(func: PrimFunc, kernel, g: int) -> dict:
    grid = [format_expr(x) for x in kernel.grid]
    blocks, num_blocks = grid_symbols(func.name, g)
    return {
        "grid": grid + ["1"] * (3 - len(grid)),
        "threads": kernel.threads,
        "blocks": blocks,
        "num_blocks": num_blocks,
        # block-local memory of each `__blocks` / C-entry call (memory_reuse's arenas),
        # on the thread's stack or, when large, the heap (localmem.py)
        "arenas": [{"scope": scope, "bytes": size, "align": align}
                   for scope, (size, align) in arena_sizes(kernel).items()],
        "local_memory": _local_memory(kernel),
    }


def kernel_entry(func: PrimFunc) -> dict:
    prologue, kernels = split_body(func)
    grids = [_grid_entry(func, k, g) for g, k in enumerate(kernels)]
    access = _access(func)
    lets = [{"name": s.var.name, "expr": format_expr(s.value)} for s in prologue
            if isinstance(s, Let) and dtypes.is_int(s.var.dtype) and is_size_expr(s.value)]
    entry = {
        "name": func.name,
        "params": [_param(p, access) for p in func.params],
        "symbols": [s.name for s in func.symbols],
        "workspaces": [{"name": w.name, "dtype": w.dtype, "shape": _shape(w.shape)}
                       for w in workspaces(prologue)],
        "lets": lets,
        # the first grid's, as a kernel of one grid has always described itself
        "grid": grids[0]["grid"],
        "threads": grids[0]["threads"],
        "arenas": grids[0]["arenas"],
        "local_memory": grids[0]["local_memory"],
        # every grid in launch order: each runs to completion before the next starts
        "grids": grids,
    }
    if uses_ranks(func):
        entry["ranks"] = {"symmetric": symmetric_buffers(func),
                          "sites": [_site(n) for n in rank_sites(func)]}
    return entry


def _site(n) -> dict:
    """What the runtime says about a multi-rank statement that failed at run time."""
    if isinstance(n, PeerCopy):
        op, buf = f"T.{n.kind}_block", n.remote.name
    elif isinstance(n, Alloc):                 # a peer view
        op, buf = "a view of another rank's tensor (T.Tensor(..., pe=))", n.source.name
    elif isinstance(n, SignalOp):
        op, buf = f"T.signal_op({n.op!r})", n.buffer.name
    elif isinstance(n, Wait):
        op, buf = f"T.wait_{n.cmp}", n.buffer.name
    else:
        op, buf = "T.barrier_blocks", n.buffer.name
    return {"op": op, "buffer": buf, "where": str(n.span)}


def _local_memory(kernel) -> dict:
    from .localmem import STACK_LIMIT, block_local_bytes
    total, _ = block_local_bytes(kernel, arena_sizes(kernel))
    return {"bytes": total, "on": "heap" if total > STACK_LIMIT else "stack"}


def build_manifest(module: Module, target: TargetSpec) -> dict:
    from ...version import __version__
    return {"format": FORMAT, "compiler_version": __version__, "target": target.as_dict(),
            "kernels": [kernel_entry(f) for f in module.funcs]}


def to_json(manifest: dict) -> str:
    return json.dumps(manifest, separators=(",", ":"), sort_keys=False)
