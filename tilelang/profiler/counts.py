"""What a launch must do, counted from the IR: useful FLOPs and bytes moved, per grid.

FLOPs: every `T.gemm` tile product (2 m n k, tiles counted whole) and every float
add / sub / mul / div / min / max and math call stored by an elementwise loop, times
the trip counts around them. Bytes: each global tensor the grid reads counts once in
full, each it writes once more — the compulsory traffic, what a perfectly cached
kernel would move (the roofline's memory term on the CPU; tcsim measures its traffic).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes
from ..ir.evaluate import NotConstant, evaluate
from ..ir import nodes as ir
from ..ir.visitor import walk

_FLOAT_OPS = ("+", "-", "*", "/", "min", "max")


@dataclass(frozen=True)
class GridCounts:
    index: int
    blocks: int
    flops: float
    gemm_flops: float
    bytes_read: float
    bytes_written: float
    compute_dtype: str            # the dtype the heaviest arithmetic reads

    @property
    def bytes(self) -> float:
        return self.bytes_read + self.bytes_written

    def to_dict(self) -> dict:
        return {"grid": self.index, "blocks": self.blocks, "flops": self.flops,
                "gemm_flops": self.gemm_flops, "bytes_read": self.bytes_read,
                "bytes_written": self.bytes_written, "bytes": self.bytes,
                "compute_dtype": self.compute_dtype}


def grids(func: ir.PrimFunc) -> list[ir.Kernel]:
    return [n for n in walk(func.body) if isinstance(n, ir.Kernel)]


def count(func: ir.PrimFunc, env: dict) -> list[GridCounts]:
    """The counts of every grid of `func` for the sizes and scalars in `env`."""
    env = dict(env)
    _bind_prologue(func.body, env)
    out = []
    for i, k in enumerate(grids(func)):
        blocks = 1
        for g in k.grid:
            blocks *= max(0, int(_eval(g, env, 1)))
        gemm = blocks * _flops(k.body, dict(env), gemm_only=True)
        total = blocks * _flops(k.body, dict(env), gemm_only=False)
        reads, writes = _tensors(k)
        out.append(GridCounts(i, blocks, float(total), float(gemm),
                              float(sum(_nbytes(b, env) for b in reads)),
                              float(sum(_nbytes(b, env) for b in writes)),
                              _compute_dtype(k, func)))
    return out


def _eval(expr, env, default):
    try:
        return evaluate(expr, env)
    except (NotConstant, ZeroDivisionError, TypeError):
        return default


def _bind_prologue(body, env) -> None:
    """Lets before the grid (tile counts and the like) that follow from the sizes."""
    if isinstance(body, ir.Seq):
        for s in body.stmts:
            if isinstance(s, ir.Let):
                try:
                    env[s.var.name] = evaluate(s.value, env)
                except (NotConstant, ZeroDivisionError, TypeError):
                    pass


def _flops(stmt, env, gemm_only: bool) -> float:
    if isinstance(stmt, ir.Gemm):
        m, n = stmt.c.extents[-2], stmt.c.extents[-1]
        k = stmt.a.extents[-2] if stmt.transpose_a else stmt.a.extents[-1]
        return 2.0 * m * n * k
    if isinstance(stmt, (ir.Store, ir.Atomic)):
        return 0.0 if gemm_only else float(_expr_flops(stmt.value))
    if isinstance(stmt, ir.Reduce):
        if gemm_only:
            return 0.0
        n = 1
        for d in stmt.src.shape:
            n *= int(_eval(d, env, 0))
        return float(n)
    if isinstance(stmt, ir.Seq):
        env = dict(env)
        total = 0.0
        for s in stmt.stmts:
            if isinstance(s, ir.Let):
                try:
                    env[s.var.name] = evaluate(s.value, env)
                except (NotConstant, ZeroDivisionError, TypeError):
                    env.pop(s.var.name, None)
            total += _flops(s, env, gemm_only)
        return total
    if isinstance(stmt, ir.For):
        inner = _flops(stmt.body, env, gemm_only)
        return inner * max(0, int(_eval(stmt.extent, env, 1))) if inner else 0.0
    if isinstance(stmt, ir.If):
        return max(_flops(stmt.then_body, env, gemm_only),
                   _flops(stmt.else_body, env, gemm_only) if stmt.else_body else 0.0)
    return 0.0


def _expr_flops(e) -> int:
    n = 0
    for node in walk(e):
        if isinstance(node, ir.Binary) and node.op in _FLOAT_OPS and dtypes.is_float(node.dtype):
            n += 1
        elif isinstance(node, ir.Call) and dtypes.is_float(node.dtype):
            n += 1
    return n


def _tensors(k: ir.Kernel) -> tuple[list, list]:
    """The global buffers the grid reads and writes (each once)."""
    reads, writes = {}, {}
    for node in walk(k.body):
        if isinstance(node, ir.Load) and node.buffer.scope == "global":
            reads.setdefault(node.buffer.name, node.buffer)
        elif isinstance(node, (ir.Store, ir.Atomic)) and node.buffer.scope == "global":
            writes.setdefault(node.buffer.name, node.buffer)
        elif isinstance(node, ir.Copy):
            if node.src.buffer.scope == "global":
                reads.setdefault(node.src.buffer.name, node.src.buffer)
            if node.dst.buffer.scope == "global":
                writes.setdefault(node.dst.buffer.name, node.dst.buffer)
        elif isinstance(node, ir.TileAtomic) and node.dst.buffer.scope == "global":
            reads.setdefault(node.dst.buffer.name, node.dst.buffer)
            writes.setdefault(node.dst.buffer.name, node.dst.buffer)
    return list(reads.values()), list(writes.values())


def _nbytes(buf: ir.Buffer, env) -> float:
    n = 1
    for d in buf.shape:
        n *= max(0, int(_eval(d, env, 0)))
    return float(n * dtypes.nbytes(buf.dtype))


def _compute_dtype(k: ir.Kernel, func: ir.PrimFunc) -> str:
    """The input dtype of the kernel's T.gemms, else its widest float tensor's dtype."""
    for node in walk(k.body):
        if isinstance(node, ir.Gemm):
            return node.a.buffer.dtype
    floats = [p.dtype for p in func.params if isinstance(p, ir.Buffer)
              and dtypes.is_float(p.dtype)]
    return max(floats, key=dtypes.bits) if floats else "float32"
