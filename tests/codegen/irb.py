"""Small helpers to build lowered IR by hand in codegen tests."""
from __future__ import annotations

import ctypes
import os
import tempfile

import numpy as np

from tilelang import dtypes
from tilelang.ir.nodes import (Alloc, Atomic, Binary, Buffer, Call, Cast, Const, For, If,
                               Kernel, Let, Load, Module, PrimFunc, Select, Seq, Store,
                               Unary, Var)

__all__ = ["Alloc", "Atomic", "Binary", "Buffer", "Call", "Cast", "Const", "For", "If",
           "Kernel", "Let", "Load", "Module", "PrimFunc", "Select", "Seq", "Store", "Unary",
           "Var", "c", "v", "bin", "load", "store", "loop", "seq", "kernel_func", "tensor",
           "build", "Built"]


def c(value, dtype=None):
    if dtype is None:
        dtype = "bool" if isinstance(value, bool) else ("int32" if isinstance(value, int)
                                                         else "float32")
    return Const(value, dtype)


def v(name, dtype="int32"):
    return Var(name, dtype)


def _lift(x, dtype):
    return x if not isinstance(x, (int, float, bool)) else c(x, dtype)


def bin(op, a, b, dtype=None):
    ref = a if not isinstance(a, (int, float, bool)) else b
    a, b = _lift(a, ref.dtype), _lift(b, ref.dtype)
    if dtype is None:
        from tilelang.ir.nodes import COMPARISONS
        dtype = "bool" if op in COMPARISONS or op in ("and", "or") else a.dtype
    return Binary(op, a, b, dtype)


def tensor(name, shape, dtype="float32", scope="global"):
    dims = tuple(c(d) if isinstance(d, int) else d for d in shape)
    return Buffer(name, dims, dtype, scope)


def load(buf, *idx, dtype=None):
    return Load(buf, tuple(_lift(i, "int32") for i in idx), dtype or buf.dtype)


def store(buf, idx, value):
    return Store(buf, tuple(_lift(i, "int32") for i in idx), _lift(value, buf.dtype))


def loop(var, extent, body, kind="serial", start=0, annotations=()):
    return For(var, _lift(start, "int32"), _lift(extent, "int32"), kind, body,
               tuple(annotations))


def seq(*stmts):
    return Seq(tuple(stmts))


def kernel_func(name, params, grid, block_vars, body, symbols=(), prologue=(), threads=1):
    k = Kernel(tuple(_lift(g, "int32") for g in grid), tuple(block_vars), threads, body)
    fbody = Seq(tuple(prologue) + (k,)) if prologue else k
    return PrimFunc(name, tuple(params), tuple(symbols), fbody)


class Built:
    """A compiled, linked and loaded module; `call(name, *arrays_and_scalars)` runs the
    typed C entry, `blocks(name, args, begin, end)` the runtime entry."""

    def __init__(self, compiled, lib, path):
        self.compiled, self.lib, self.path = compiled, lib, path
        self.manifest = compiled.manifest

    def kernel(self, name):
        return next(k for k in self.manifest["kernels"] if k["name"] == name)

    def call(self, name, *args):
        k = self.kernel(name)
        cargs, argtypes = [], []
        params = k["params"]
        for p, a in zip(params, args):
            if p["kind"] == "tensor":
                assert a.flags["C_CONTIGUOUS"] and a.dtype == dtypes.numpy_dtype(p["dtype"])
                cargs.append(ctypes.c_void_p(a.ctypes.data))
                argtypes.append(ctypes.c_void_p)
            else:
                ct = _c_scalar(p["dtype"])
                cargs.append(ct(a))
                argtypes.append(ct)
        for s in args[len(params):]:
            cargs.append(ctypes.c_int64(s))
            argtypes.append(ctypes.c_int64)
        fn = self.lib[name]          # a function object of this call's own (see `blocks`)
        fn.argtypes, fn.restype = argtypes, None
        fn(*cargs)

    def args_array(self, name, *args):
        """The int64 args array of the runtime ABI for (params..., symbols..., workspaces...)."""
        k = self.kernel(name)
        slots = []
        for i, a in enumerate(args):
            p = k["params"][i] if i < len(k["params"]) else None
            if isinstance(a, np.ndarray):
                slots.append(a.ctypes.data)
            elif p is not None and p["kind"] == "scalar" and dtypes.is_float(p["dtype"]):
                slots.append(int(np.array(a, np.float64).view(np.int64)))
            else:
                slots.append(int(a))
        return (ctypes.c_int64 * max(1, len(slots)))(*slots)

    def num_blocks(self, name, args):
        return _NUM_BLOCKS((f"{name}__num_blocks", self.lib))(args)

    def blocks(self, name, args, begin, end):
        """Run blocks [begin, end); safe from many threads at once. The signature is the
        prototype's, fixed: assigning `argtypes` on a function object that another
        thread is calling frees the converters that call is still reading, and the call
        then raises or passes garbage (a whole block range lost)."""
        _BLOCKS((f"{name}__blocks", self.lib))(args, begin, end)


_BLOCKS = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
_NUM_BLOCKS = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)


def _c_scalar(dtype):
    return {"float64": ctypes.c_double, "int64": ctypes.c_int64, "int32": ctypes.c_int32,
            "int8": ctypes.c_int8, "uint8": ctypes.c_uint8, "bool": ctypes.c_bool}.get(
        dtype, ctypes.c_float)


_TMP = tempfile.mkdtemp(prefix="tl-codegen-test-")
_COUNT = [0]


def build(*funcs, **opts) -> Built:
    from tilelang.codegen.llvm import compile_module, link_shared
    compiled = compile_module(Module(tuple(funcs)), **opts)
    _COUNT[0] += 1
    path = os.path.join(_TMP, f"k{_COUNT[0]}_{os.getpid()}.so")
    link_shared(compiled.object, path)
    return Built(compiled, ctypes.CDLL(path), path)
