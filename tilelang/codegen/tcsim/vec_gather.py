"""Global loads inside `T.Parallel` at indices that are not `offset + stride * loop var`
(`T.im2col`'s `img[m // (OH * OW), h, w, k % C]`, `X[i, i]`, `X[N - 1 - i]`): one DMA of
a box that holds every element the indices can reach, then one VEC.GATHER.

The box comes from interval bounds of each index over the iteration domain: a base the
scalar unit computes (block indices, serial loop variables) and a static extent. An index
the bounds do not follow, or whose extent reaches the tensor's dim, takes the whole dim;
its elements outside the tensor are masked to read 0 (the DMA zero-fills the rest of the
box), so the gather never aliases a neighbouring row. The box can be much larger than the
elements used (a 3x3 im2col tile reads a band of image rows): slow and roomy, but the
same results as the CPU.

A store or element atomic at such an index (`Y[N - 1 - i] = x[i]`,
`T.atomic_add(hist[x[i] % 4], 1)`) scatters: the values over the domain go to a tile,
then one one-element DMA.ST per domain point (`reduce=` for atomics) at the index the
scalar unit computes for it — a guard false at that point moves the index outside the
tensor, where the DMA drops it. The domain is capped (_MAX_SCATTER).
"""
from __future__ import annotations

import itertools
import math

from ...ir.nodes import Atomic, Binary, Cast, Const, Load, Select, Var
from ...ir.visitor import substitute, walk
from ...targets.tcsim.isa import Glob, Tile
from .scalar import unsupported

_MAX_SCATTER = 1024         # domain points of a scatter (one DMA each, unrolled)


def index_range(v, ix):
    """(base, extent): over the domain, `ix` stays in [base, base + extent); base is a
    domain-free expression (None: 0). None when the bounds cannot follow `ix`."""
    if not v.depends(ix):
        return ix, 1
    if isinstance(ix, Var) and ix in v.dom:
        return None, v.shape[v.dom[ix]]
    if isinstance(ix, Var) and ix in v.let_values:
        return index_range(v, v.let_values[ix])
    if isinstance(ix, Cast) and ix.dtype.startswith(("int", "uint")):
        return index_range(v, ix.value)
    if not isinstance(ix, Binary):
        return None
    a = index_range(v, ix.lhs)
    if a is None:
        return None
    if ix.op in ("+", "-"):
        b = index_range(v, ix.rhs)
        if b is None:
            return None
        ext = a[1] + b[1] - 1
        if ix.op == "+":
            return _add(a[0], b[0], ix.dtype), ext
        top_b = _add(b[0], Const(b[1] - 1, ix.dtype), ix.dtype)    # a - max(b)
        return _sub(a[0], top_b, ix.dtype), ext
    if not isinstance(ix.rhs, Const) or isinstance(ix.rhs.value, float):
        return None
    k = int(ix.rhs.value)
    base, ext = a
    if ix.op == "*":
        if k >= 0:
            return _mul(base, k, ix.dtype), (ext - 1) * k + 1
        top = _add(base, Const(ext - 1, ix.dtype), ix.dtype)
        return _mul(top, k, ix.dtype), (ext - 1) * -k + 1
    if ix.op == "//" and k > 0:
        lo = _const(base)
        if lo is not None:                                  # exact
            return Const(lo // k, ix.dtype), (lo + ext - 1) // k - lo // k + 1
        return _div(base, k, ix.dtype), (ext + k - 2) // k + 1
    if ix.op == "%" and k > 0:
        lo = _const(base)
        if lo is not None and lo // k == (lo + ext - 1) // k:    # no wrap
            return Const(lo % k, ix.dtype), ext
        return None, k
    return None


def gathered_load(v, e: Load) -> Tile:
    """`e` (a global load) as a DMA of its reachable box and a VEC.GATHER in it."""
    shape = [_dim(n) for n in e.buffer.shape]
    starts, box, offsets, masks = [], [], [], []
    for ix, n in zip(e.indices, shape):
        r = index_range(v, ix)
        if r is not None and (n is None or r[1] < n):
            base, ext = r
        else:                                   # the whole dim
            base, ext = None, n if n is not None else _dim_of(v, e, ix)
            lo = None if r is None else (0 if r[0] is None else _const(r[0]))
            if lo is None or lo < 0 or lo + r[1] > ext:
                masks.append((ix, ext))
        starts.append(v.st.scalar.operand(base if base is not None else Const(0, "int32")))
        box.append(ext)
        offsets.append(ix if base is None else _sub(ix, base, "int32"))
    flat, stride = None, 1
    for off, ext in reversed(list(zip(offsets, box))):
        term = off if stride == 1 else Binary("*", off, Const(stride, "int32"), "int32")
        flat = term if flat is None else Binary("+", term, flat, "int32")
        stride *= ext
    inside = None
    for ix, n in masks:
        for c in (Binary(">=", ix, Const(0, "int32"), "bool"),
                  Binary("<", ix, Const(n, "int32"), "bool")):
            inside = c if inside is None else Binary("and", inside, c, "bool")
    if inside is not None:                      # outside the tensor: past the box, reads 0
        flat = Select(inside, flat, Const(-1, "int32"), "int32")
    name = f"__g{len(v.em.buffers)}"
    v.em.declare(name, v.st.plan.fragment, e.buffer.dtype, box)
    v.em.engine_op("DMA_IN", "DMA.LD", (v.em.tile(name), Glob(e.buffer.name, tuple(starts))),
                   reads=(v.st.tensor_key(e.buffer.name),), writes=(name,), box=tuple(box))
    temp = v.temp(e.buffer.dtype)
    v._vec(temp, "VEC.GATHER", (Tile(temp), Tile(name), v.operand(flat)))
    return Tile(temp)


def scatter(v, s, guard, value_tile) -> None:
    """A store or element atomic to a global tensor at indices that are not a box of
    the domain (`Y[N - 1 - i] = x[i]`, `T.atomic_add(hist[x[i] % 4], 1)`)."""
    points = math.prod(v.shape)
    if points > _MAX_SCATTER:
        raise unsupported(s, f"a store at an index computed per element over {points} "
                             f"elements (at most {_MAX_SCATTER}: each is one DMA)")
    temp = value_tile(v, s, s.value, tuple(range(len(v.shape))))
    order = sorted(v.dom, key=v.dom.get)
    ones = (1,) * len(s.indices)
    reduce = s.op if isinstance(s, Atomic) else None
    for point in itertools.product(*(range(n) for n in v.shape)):
        at = {var: Const(i, "int32") for var, i in zip(order, point)}
        indices = [substitute(_through_lets(v, ix), at) for ix in s.indices]
        if guard is not None:       # a false guard sends the element outside: dropped
            off = Const(-1, "int32")
            cond = substitute(_through_lets(v, guard), at)
            indices[0] = Select(cond, indices[0], off, indices[0].dtype)
        starts = tuple(v.st.scalar.operand(i) for i in indices)
        one = tuple((i, 1) for i in point) or ((0, 1),)
        v.em.engine_op("DMA_OUT", "DMA.ST", (Glob(s.buffer.name, starts),
                                             Tile(temp, None, None, one)),
                       reads=(temp,), writes=(v.st.tensor_key(s.buffer.name),), box=ones,
                       reduce=reduce)


def _through_lets(v, e):
    """`e` with the nest's let variables replaced by their expressions."""
    for _ in range(len(v.let_values) + 1):
        if not any(isinstance(n, Var) and n in v.let_values for n in walk(e)):
            return e
        e = substitute(e, v.let_values)
    return e


def _dim(n):
    return int(n.value) if isinstance(n, Const) else (n if isinstance(n, int) else None)


def _dim_of(v, e, ix):
    raise unsupported(ix, f"a gathered index into `{e.buffer.name}`, whose size is only "
                          "known at run time")


def _const(e):
    if e is None:
        return 0
    return int(e.value) if isinstance(e, Const) and not isinstance(e.value, float) else None


def _add(a, b, dt):
    if a is None or b is None:
        return b if a is None else a
    if _const(a) is not None and _const(b) is not None:
        return Const(_const(a) + _const(b), dt)
    return Binary("+", a, b, dt)


def _sub(a, b, dt):
    if b is None:
        return a
    if _const(a) is not None and _const(b) is not None:
        return Const(_const(a) - _const(b), dt)
    return Binary("-", a if a is not None else Const(0, dt), b, dt)


def _mul(a, k, dt):
    if a is None:
        return None
    if _const(a) is not None:
        return Const(_const(a) * k, dt)
    return Binary("*", a, Const(k, dt), dt)


def _div(a, k, dt):
    return Binary("//", a, Const(k, dt), dt)
