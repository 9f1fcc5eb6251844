"""Small helpers to build IR by hand in the pass tests (for what .tl text cannot say
directly, and for kernels whose sizes hypothesis draws)."""
from __future__ import annotations

from tilelang.ir import (Expr, Const, Var, Binary, Call, Buffer, Region, Seq, Kernel, PrimFunc,
                         Module, For)


def c(value, dtype="int32"):
    return Const(value, dtype)


def size(n):
    """A shape entry: an int becomes a constant, a str a symbolic size Var."""
    if isinstance(n, Expr):
        return n
    return Var(n) if isinstance(n, str) else Const(n, "int32")


def add(a, b):
    return Binary("+", a, b, a.dtype)


def mul(a, b):
    return Binary("*", a, b, a.dtype)


def ceildiv(a, b):
    return Call("ceildiv", (a, b), "int32")


def tensor(name, shape, dtype="float32", scope="global"):
    return Buffer(name, tuple(size(s) for s in shape), dtype, scope)


def whole(buf: Buffer) -> Region:
    return Region(buf, tuple(c(0) for _ in buf.shape), tuple(s.value for s in buf.shape))


def window(buf: Buffer, starts, extents) -> Region:
    return Region(buf, tuple(starts), tuple(extents))


def symbols_of(*bufs) -> tuple[Var, ...]:
    seen = []
    for b in bufs:
        for s in b.shape:
            if isinstance(s, Var) and s not in seen:
                seen.append(s)
    return tuple(seen)


def kernel_func(name, params, grid, body_stmts, block_names=("bx", "by", "bz")):
    bvars = tuple(Var(n) for n in block_names[:len(grid)])
    kern = Kernel(tuple(grid), bvars, 128, Seq(tuple(body_stmts)))
    bufs = [p for p in params if isinstance(p, Buffer)]
    return PrimFunc(name, tuple(params), symbols_of(*bufs), Seq((kern,))), bvars


def module(*funcs) -> Module:
    return Module(tuple(funcs))


def loop(var, extent, body, kind="serial", start=0):
    return For(var, c(start), extent if not isinstance(extent, int) else c(extent), kind, body)
