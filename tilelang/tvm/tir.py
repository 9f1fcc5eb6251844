"""`tvm.tir` / `tvm.tirx` as kernel code sees it: the functions below are compiled where a
kernel (or a helper function it calls) uses them, never run by Python.

| function | meaning in a kernel |
|---|---|
| `const(value, dtype)` | a constant of `dtype` |
| `reinterpret(dtype, x)` | x's bits read as `dtype` (same width): `T.reinterpret` |
| `Cast(dtype, x)` | x converted to `dtype`: `T.Cast` |
| `Select(c, a, b)`, `if_then_else(c, a, b)` | `a if c else b` |
| `max`, `min`, `abs`, `floordiv`, `floormod`, `truncdiv`, `truncmod`, `exp`, ... | as `T.<name>` |
| `bitwise_and / or / xor / not`, `shift_left`, `shift_right` | as `T.<name>` |

`PrimExpr`, `Var`, `Buffer` are annotations only.
"""
from __future__ import annotations

from ..language.names import TIR_NAMES


class PrimExpr:
    """A scalar expression of a kernel (an annotation: `val: tir.PrimExpr`)."""


class Var(PrimExpr):
    """A scalar variable of a kernel (an annotation)."""


class Buffer:
    """A buffer of a kernel (an annotation)."""


def _kernel_only(name: str):
    def function(*args, **kwargs):
        from ..language import KernelBodyError
        raise KernelBodyError(f"tir.{name} is part of kernel code; it is compiled by "
                              "tilelang, not executed by Python")
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"tir.{name}: compiled where a kernel uses it."
    return function


for _name in TIR_NAMES:
    globals()[_name] = _kernel_only(_name)

__all__ = ["PrimExpr", "Var", "Buffer"] + list(TIR_NAMES)
