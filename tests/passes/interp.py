"""A tiny reference interpreter for lowered IR (loops, loads, stores, atomics), in numpy.

Slow and simple on purpose: it is the oracle for the lowering and predicate tests. Any
access outside a buffer's shape raises `OutOfBounds`, so a missing guard is caught
instead of wrapping around (numpy would accept a negative index). Floats are computed in
float64 and rounded to the node's dtype after every operation.
"""
from __future__ import annotations

import math

import numpy as np

from tilelang import dtypes
from tilelang.ir import (Const, Var, Binary, Unary, Call, Cast, Select, Load, Seq, Let, Alloc,
                         Store, Atomic, For, If, Kernel, Module)


class OutOfBounds(Exception):
    pass


class NotLowered(Exception):
    pass


def run(module: Module, name: str, args: dict, symbols: dict | None = None) -> None:
    """Run kernel `name` on `args` (buffer name -> numpy array, scalar name -> value),
    updating the arrays in place. `symbols` gives the symbolic sizes."""
    func = module.func(name)
    env = dict(symbols or {})
    bufs = {}
    for p in func.params:
        if isinstance(p, Var):
            env[p.name] = args[p.name]
        else:
            bufs[p.name] = args[p.name]
    _Interp(env, bufs).stmt(func.body)


def _convert(value, dtype: str):
    if dtypes.is_bool(dtype):
        return bool(value)
    if dtypes.is_int(dtype):
        return int(value)
    v = float(value)
    if dtype == "float64" or math.isnan(v) or math.isinf(v):
        return v
    with np.errstate(all="ignore"):
        return float(dtypes.numpy_dtype(dtype).type(v))


_BIN = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "//": lambda a, b: a // b, "%": lambda a, b: a % b,
    "min": min, "max": max, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}

_CALLS = {
    "exp": math.exp, "exp2": lambda x: 2.0 ** x, "log": math.log, "log2": math.log2,
    "sqrt": math.sqrt, "rsqrt": lambda x: 1 / math.sqrt(x), "tanh": math.tanh,
    "sigmoid": lambda x: 1 / (1 + math.exp(-x)), "abs": abs, "floor": math.floor,
    "ceil": math.ceil, "erf": math.erf, "ceildiv": lambda a, b: -(-a // b),
}


class _Interp:
    def __init__(self, env: dict, bufs: dict):
        self.env = env
        self.bufs = bufs

    # ------------------------------------------------------------------ statements

    def stmt(self, s) -> None:
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise NotLowered(f"interpreter cannot run {type(s).__name__}")
        method(s)

    def s_Seq(self, s: Seq):
        for x in s.stmts:
            self.stmt(x)

    def s_Let(self, s: Let):
        self.env[s.var.name] = self.expr(s.value)

    def s_Alloc(self, s: Alloc):
        b = s.buffer
        shape = tuple(self.expr(d) for d in b.shape)
        if s.offset is not None:
            # memory_reuse's placement: a view of the block's arena at the planned offset,
            # so buffers placed over each other really share their bytes here too
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtypes.nbytes(b.dtype)
            arena = self.arenas[b.scope][s.offset:s.offset + nbytes]
            self.bufs[b.name] = arena.view(dtypes.numpy_dtype(b.dtype)).reshape(shape)
            return
        arr = np.zeros(shape, dtype=dtypes.numpy_dtype(b.dtype))
        if s.init is not None:
            arr[()] = self.expr(s.init)
        self.bufs[b.name] = arr

    def s_Store(self, s: Store):
        idx = self.index(s.buffer, s.indices)
        self.bufs[s.buffer.name][idx] = self.expr(s.value)

    def s_Atomic(self, s: Atomic):
        idx = self.index(s.buffer, s.indices)
        arr = self.bufs[s.buffer.name]
        old = _convert(arr[idx], s.buffer.dtype)
        new = self.expr(s.value)
        arr[idx] = {"add": lambda: old + new, "max": lambda: max(old, new),
                    "min": lambda: min(old, new)}[s.op]()

    def s_Prefetch(self, s):
        pass        # a cache hint: no effect on values

    def s_For(self, s: For):
        lo = self.expr(s.min)
        for v in range(lo, lo + self.expr(s.extent)):
            self.env[s.var.name] = v
            self.stmt(s.body)

    def s_If(self, s: If):
        if self.expr(s.cond):
            self.stmt(s.then_body)
        elif s.else_body is not None:
            self.stmt(s.else_body)

    def s_Kernel(self, s: Kernel):
        grid = [self.expr(g) for g in s.grid]
        sizes = _arena_sizes(s)
        for flat in range(int(np.prod(grid))):
            rest = flat
            for var, g in zip(s.block_vars, grid):
                self.env[var.name] = rest % g
                rest //= g
            # each block's arenas start as garbage (NaN bytes), as stack memory does: a
            # read of a placed buffer before its write shows up in the results
            self.arenas = {scope: np.full(n, 0xFF, dtype=np.uint8) for scope, n in sizes.items()}
            self.stmt(s.body)

    # ------------------------------------------------------------------ expressions

    def index(self, buf, indices) -> tuple:
        arr = self.bufs[buf.name]
        idx = tuple(self.expr(i) for i in indices)
        for i, n in zip(idx, arr.shape):
            if not 0 <= i < n:
                raise OutOfBounds(f"{buf.name}{list(idx)} outside shape {arr.shape}")
        return idx

    def expr(self, e):
        return getattr(self, "e_" + type(e).__name__)(e)

    def e_Const(self, e: Const):
        return _convert(e.value, e.dtype)

    def e_Var(self, e: Var):
        return self.env[e.name]

    def e_Binary(self, e: Binary):
        if e.op == "and":
            return bool(self.expr(e.lhs)) and bool(self.expr(e.rhs))
        if e.op == "or":
            return bool(self.expr(e.lhs)) or bool(self.expr(e.rhs))
        a, b = self.expr(e.lhs), self.expr(e.rhs)
        if e.op == "/" and dtypes.is_int(e.dtype):
            raise NotLowered("integer '/' has no defined meaning in the interpreter")
        return _convert(_BIN[e.op](a, b), e.dtype)

    def e_Unary(self, e: Unary):
        v = self.expr(e.operand)
        return (not v) if e.op == "not" else _convert(-v, e.dtype)

    def e_Call(self, e: Call):
        return _convert(_CALLS[e.name](*[self.expr(a) for a in e.args]), e.dtype)

    def e_Cast(self, e: Cast):
        v = self.expr(e.value)
        if dtypes.is_int(e.dtype) and isinstance(v, float):
            v = math.trunc(v)
        return _convert(v, e.dtype)

    def e_Select(self, e: Select):
        return self.expr(e.true_value) if self.expr(e.cond) else self.expr(e.false_value)

    def e_Load(self, e: Load):
        idx = self.index(e.buffer, e.indices)
        return _convert(self.bufs[e.buffer.name][idx], e.dtype)


def _arena_sizes(kernel) -> dict:
    """scope -> bytes of the arena holding the buffers memory_reuse placed."""
    from tilelang.ir import walk
    sizes: dict = {}
    for n in walk(kernel):
        if isinstance(n, Alloc) and n.offset is not None:
            count = int(np.prod([int(d.value) for d in n.buffer.shape], dtype=np.int64))
            end = n.offset + count * dtypes.nbytes(n.buffer.dtype)
            sizes[n.buffer.scope] = max(sizes.get(n.buffer.scope, 0), end)
    return sizes
