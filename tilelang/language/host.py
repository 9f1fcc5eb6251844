"""`T.ceildiv(N, 128)` and friends called by Python (a factory computing a shape): on
plain numbers they compute; anything else is kernel code, which is compiled, not run."""
from __future__ import annotations

import numbers


def _ceildiv(a, b):
    return -(-a // b)


def _truncdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_FUNCS = {
    "ceildiv": _ceildiv,
    "align_up": lambda a, b: _ceildiv(a, b) * b,
    "floordiv": lambda a, b: a // b,
    "floormod": lambda a, b: a % b,
    "truncdiv": _truncdiv,
    "truncmod": lambda a, b: a - _truncdiv(a, b) * b,
    "max": max,
    "min": min,
    "abs": abs,
    "clamp": lambda x, lo, hi: min(max(x, lo), hi),
}


def numeric(name: str, compiled_only):
    """`T.<name>` that computes on Python numbers and defers to `compiled_only`
    (which raises) for anything else."""
    fn = _FUNCS[name]

    def function(*args, **kwargs):
        if not kwargs and args and all(isinstance(a, numbers.Real) for a in args):
            return fn(*args)
        from . import SizeArith, SizeExpr
        if not kwargs and any(isinstance(a, SizeArith) for a in args) and \
                all(isinstance(a, (SizeArith, numbers.Integral)) for a in args):
            return SizeExpr(f"T.{name}({', '.join(map(repr, args))})")   # a shape
        return compiled_only(*args, **kwargs)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"T.{name}: computes on Python numbers (host code); in a kernel "
                        "it is compiled by tilelang.")
    return function
