"""The `T` namespace: `import tilelang.language as T`.

In a .tl file these names are read by the compiler. In a Python file they are real
objects, so that a kernel's signature evaluates when the function is defined
(`A: T.Tensor((M, K), "float16")`, `M = T.dynamic("M")`) and `@T.prim_func` /
`@T.macro` mark functions for the compiler. Kernel bodies are compiled, never
executed: calling `T.copy` and friends from Python raises `KernelBodyError`.
"""
from __future__ import annotations

from .names import (DTYPE_NAMES, DTYPE_ALIASES, EXPR_FUNCS, TILE_OPS, ALLOCS, LOOP_ITERS,
                    HINTS, HINT_VALUES, THREAD_LEVEL, EAGER, HOST_FUNCS, ALL_NAMES,
                    SUB_BYTE_DTYPES, BIT_ATOMICS)
from . import host as _host


class KernelBodyError(RuntimeError):
    """A T.<function> was called by Python instead of being compiled."""


class SizeArith:
    """Arithmetic on symbolic sizes in Python (`T.Tensor((N * 2,), ...)` in an
    annotation): it builds a `SizeExpr`, which the compiler reads back from the source."""

    def _op(self, op, other, swap=False):
        a, b = (other, self) if swap else (self, other)
        return SizeExpr(f"({a!r} {op} {b!r})")

    def __add__(self, o): return self._op("+", o)
    def __radd__(self, o): return self._op("+", o, True)
    def __sub__(self, o): return self._op("-", o)
    def __rsub__(self, o): return self._op("-", o, True)
    def __mul__(self, o): return self._op("*", o)
    def __rmul__(self, o): return self._op("*", o, True)
    def __floordiv__(self, o): return self._op("//", o)
    def __rfloordiv__(self, o): return self._op("//", o, True)
    def __mod__(self, o): return self._op("%", o)
    def __rmod__(self, o): return self._op("%", o, True)


class SizeExpr(SizeArith):
    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


class Symbol(SizeArith):
    """A symbolic size (`T.dynamic("M")`), bound from argument shapes at launch."""

    def __init__(self, name: str, dtype: str = "int32"):
        self.name = name
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"T.dynamic({self.name!r})"


def dynamic(name: str, dtype: str = "int32") -> Symbol:
    return Symbol(name, dtype)


symbolic = dynamic


class TensorType:
    """The annotation `T.Tensor(shape, dtype)`: ints and `Symbol`s, and a dtype (checked
    by the compiler, which reports a misspelt dtype at its position in the file)."""

    def __init__(self, shape, dtype="float32"):
        self.shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        self.dtype = str(dtype)

    def __repr__(self) -> str:
        return f"T.Tensor({self.shape!r}, {self.dtype!r})"


class _TensorSpelling:
    """`T.Tensor(shape, dtype)` and TileLang's `T.Tensor[shape, dtype]`, both evaluated
    by Python where they annotate a `@T.prim_func`'s parameter."""

    def __call__(self, shape, dtype="float32") -> TensorType:
        return TensorType(shape, dtype)

    def __getitem__(self, item) -> TensorType:
        shape, dtype = item if isinstance(item, tuple) and len(item) == 2 else (item, "float32")
        return TensorType(shape, dtype)


Tensor = _TensorSpelling()
Buffer = Tensor


class DTypeName(str):
    """`T.float32` and friends: equal to their name ("float32"), usable as dtype
    arguments and as scalar parameter annotations."""

    def __call__(self, *args, **kwargs):
        raise KernelBodyError(f"T.{self}(...) is part of a kernel body; kernel bodies are "
                              "compiled by tilelang, not executed by Python")


for _name in DTYPE_NAMES:
    globals()[_name] = DTypeName(_name)
for _name, _canonical in DTYPE_ALIASES.items():
    globals()[_name] = DTypeName(_canonical)
for _name in SUB_BYTE_DTYPES:           # for Python code only: not a dtype of a kernel
    globals()[_name] = DTypeName(_name)


def dtype(name) -> DTypeName:
    """`T.dtype("float16")` / `T.dtype(T.float16)`: the dtype by any of its spellings
    (also the annotation of a dtype parameter: `dtype: T.dtype = T.float16`)."""
    from ..dtypes import canonical
    found = canonical(str(name))
    if found is None:
        raise ValueError(f"unknown dtype {name!r}")
    return DTypeName(found)


def _mark(kind: str):
    def decorator(func):
        func.__tilelang_kind__ = kind
        return func
    decorator.__name__ = kind
    decorator.__doc__ = f"Marks a function as a tile-language {kind} (compiled, not run)."
    return decorator


prim_func = _mark("prim_func")
macro = _mark("macro")


def _compiled_only(name: str):
    def function(*args, **kwargs):
        raise KernelBodyError(f"T.{name} is part of a kernel body; kernel bodies are "
                              "compiled by tilelang, not executed by Python")
    function.__name__ = name
    function.__qualname__ = name
    function.__doc__ = f"T.{name}: compiled by tilelang (see the language reference)."
    return function


for _name in (EXPR_FUNCS + TILE_OPS + ALLOCS + LOOP_ITERS + HINTS + HINT_VALUES
              + THREAD_LEVEL + EAGER + BIT_ATOMICS + ("Kernel", "reshape", "view")):
    globals()[_name] = _compiled_only(_name)
for _name in HOST_FUNCS:
    globals()[_name] = _host.numeric(_name, globals()[_name])

del _name

__all__ = list(ALL_NAMES) + ["KernelBodyError", "Symbol", "TensorType", "DTypeName"]
