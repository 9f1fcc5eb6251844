"""`T.reduce_max / reduce_min / reduce_absmax(..., nan_propagate=True)`.

A float max or min here ignores a NaN operand (`maxnum`, docs/semantics.md), as
TileLang's reductions do by default; `nan_propagate=True` asks for NaN whenever the row
holds one (or, with `clear=False`, whenever dst held one). It is written with the
plain reduction and two helper fragments, so both targets run it as ordinary tile code:

    mark[...] = NaN where src is NaN, else 0         (T.Parallel over src)
    seen = dst's NaNs (clear=False) or 0; seen += sum of mark along dim   (T.reduce_sum)
    T.reduce_<kind>(src, dst, dim, clear)
    dst[...] = seen where seen is NaN, else dst      (T.Parallel over dst)

A sum carries a NaN by itself, so `seen` is NaN exactly where the result must be.
"""
from __future__ import annotations

import math

from .. import dtypes
from ..ir.nodes import Alloc, Binary, Buffer, Const, Load, Reduce, Select, Store
from .loops import parallel_nest


def nan_propagating(b, reduce: Reduce) -> list:
    """The statements for `reduce` with NaN propagation (itself alone for integer dtypes
    and sums, where nothing is lost)."""
    src, dst, span = reduce.src, reduce.dst, reduce.span
    if reduce.kind not in ("max", "min", "absmax") or not dtypes.is_float(src.dtype):
        return [reduce]
    mark = Buffer(b.fresh(f"{src.name}_nan"), src.shape, dst.dtype, "fragment", span=span)
    seen = Buffer(b.fresh(f"{dst.name}_nan"), dst.shape, dst.dtype, "fragment", span=span)
    out = [Alloc(mark, span=span), Alloc(seen, span=span)]
    zero = Const(0.0, dst.dtype, span=span)
    out.append(_over(b, seen, lambda ix: _nan_or(Load(dst, ix, dst.dtype, span=span), zero)
                     if not reduce.clear else zero, span))
    out.append(_over(b, mark, lambda ix: _nan_or(Load(src, ix, src.dtype, span=span), zero),
                     span))
    out.append(Reduce("sum", mark, seen, reduce.dim, False, span=span))
    out.append(reduce)
    out.append(_over(b, dst, lambda ix: _nan_or(Load(seen, ix, dst.dtype, span=span),
                                                Load(dst, ix, dst.dtype, span=span)), span))
    return out


def _nan_or(x, otherwise):
    """x where x is NaN (converted to otherwise's dtype), else `otherwise`."""
    dtype = otherwise.dtype
    nan = Const(math.nan, dtype, span=x.span)
    return Select(Binary("!=", x, x, "bool", span=x.span), nan, otherwise, dtype, span=x.span)


def _over(b, buf: Buffer, value_at, span):
    """`for ix in T.Parallel(*buf.shape): buf[ix] = value_at(ix)`."""
    return parallel_nest(b, buf.shape, lambda ix: Store(buf, ix, value_at(ix), span=span),
                         span)
