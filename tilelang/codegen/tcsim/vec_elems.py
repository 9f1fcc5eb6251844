"""Element accesses that tcsim's tile-granular engines do not address directly, lowered
with whole tiles (more instructions than the CPU needs, same results):

* a store `G[i0 + i, j] = v` to a global tensor inside `T.Parallel`: `v` is computed into a
  tile of the iteration domain and written with one DMA.ST of the box the indices cover;
  an element atomic `T.atomic_add(G[...], v)` is the same DMA.ST with `reduce=`;
* a guarded store (`if cond: X[i, j] = v`): on chip `X = select(cond, v, X)`; to a global
  tensor, a guard `i < C` on a loop variable shrinks the box, another guard reads the box
  first and writes back `select(cond, v, old)`; a guarded atomic adds the op's identity
  where the guard is false;
* an on-chip element at a constant index (`m[0]`, `acc[i, 0]`): copied into a tile
  without that dim, which the domain then broadcasts;
* element stores and atomics outside `T.Parallel` (`G[b, h] = x`, `lse[0] = ...`): a
  one-element domain;
* global loads at other indices, and stores and atomics at indices that are not a box
  of the domain: gathered and scattered (vec_gather).
"""
from __future__ import annotations

from ... import dtypes
from ...diagnostics import TileLangError
from ...ir.nodes import Atomic, Binary, Const, If, Let, Load, Select, Seq, Store, Unary, Var
from ...targets.tcsim.isa import Glob, Tile
from . import vec_gather
from .scalar import unsupported



def flatten(stmts, guard=None):
    """[(statement, guard or None)] of a T.Parallel body: an `if` puts its condition on
    each store of its branches (its lets are computed unconditionally)."""
    out = []
    for s in stmts:
        if isinstance(s, Seq):
            out += flatten(s.stmts, guard)
        elif isinstance(s, If):
            then_g = _and(guard, s.cond)
            out += flatten(_stmts(s.then_body), then_g)
            if s.else_body is not None:
                out += flatten(_stmts(s.else_body),
                               _and(guard, Unary("not", s.cond, "bool", span=s.cond.span)))
        else:
            out.append((s, guard))
    return out


def _stmts(body):
    return body.stmts if isinstance(body, Seq) else (body,)


def _and(a, b):
    return b if a is None else Binary("and", a, b, "bool", span=b.span)


# ----------------------------------------------------------------------------- loads

def is_unit_access(v, indices) -> bool:
    """An on-chip access with an index that no loop variable of the nest reaches."""
    return any(not v.depends(ix) for ix in indices)


def unit_load(v, e: Load) -> Tile:
    """`m[0]`, `acc[i, 0]`: the element row as a tile without the constant dims."""
    name = e.buffer.name
    shape = v.em.buffers[name].shape
    box, dims, kept = [], [], []
    for ix, n in zip(e.indices, shape):
        if v.depends(ix):
            var, off = v._var_offset(ix)
            if var is None:
                raise unsupported(e, "on-chip indices inside T.Parallel other than "
                                     "`loop variable [+ constant]`")
            ext = v.shape[v.dom[var]]
            box.append((off, ext))
            dims.append(v.dom[var])
            kept.append(ext)
        else:
            if not isinstance(ix, Const):
                raise unsupported(e, f"on-chip element of `{name}` at an index computed at "
                                     "run time inside T.Parallel")
            box.append((int(ix.value), 1))
    if any(o < 0 or o + x > n for (o, x), n in zip(box, shape)):
        raise unsupported(e, f"T.Parallel access outside `{name}`")
    temp = f"__u{len(v.em.buffers)}"
    v.em.declare(temp, v.st.plan.fragment, e.buffer.dtype, kept or [1])
    base = v.em.tile(name)
    v.em.engine_op("VEC", "COPY", (v.em.tile(temp), Tile(base.buf, base.stage, None,
                                                         tuple(box))),
                   reads=(name,), writes=(temp,))
    return Tile(temp, None, tuple(dims) if dims else (0,))


def needs_gather(v, e: Load) -> bool:
    """An index the vector unit cannot address as a box: neither `loop var [+ c]` inside
    the buffer nor a constant (`j * 2`, `j // 2`, a loaded index, `x[i - 1]` guarded
    by `i >= 1`)."""
    shape = v.em.buffers[e.buffer.name].shape
    for ix, n in zip(e.indices, shape):
        if not v.depends(ix):
            if not isinstance(ix, Const):
                return True
            continue
        var, off = v._var_offset(ix)
        if var is None or off < 0 or off + v.shape[v.dom[var]] > n:
            return True
    return False


def gather(v, e: Load) -> Tile:
    """`x[i, j * 2]`: the flat element offset of each domain point, computed by the
    vector unit, then one VEC.GATHER."""
    name = e.buffer.name
    shape = v.em.buffers[name].shape
    flat, stride = None, 1
    for ix, n in reversed(list(zip(e.indices, shape))):
        term = ix if stride == 1 else Binary("*", ix, Const(stride, "int32"), "int32")
        flat = term if flat is None else Binary("+", term, flat, "int32")
        stride *= n
    idx = v.operand(flat)
    base = v.em.tile(name)
    src = Tile(base.buf, base.stage)
    if v.em.buffers[name].level not in v.st.plan.vec:
        staged, _ = v._reachable((name, None))
        src = Tile(staged)
    temp = v.temp(e.buffer.dtype)
    v._vec(temp, "VEC.GATHER", (Tile(temp), src, idx))
    return Tile(temp)


def affine(v, ix):
    """`ix` as (base, domain var, coefficient): base + coef * var, base independent of
    the domain (None: no base; var None: no var); None when `ix` is not of that form."""
    if not v.depends(ix):
        return ix, None, 0
    if isinstance(ix, Var) and ix in v.dom:
        return None, ix, 1
    if isinstance(ix, Binary) and ix.op in ("+", "-"):
        a, b = affine(v, ix.lhs), affine(v, ix.rhs)
        if a is None or b is None or (a[1] is not None and b[1] is not None):
            return None
        sign = 1 if ix.op == "+" else -1
        var, coef = (a[1], a[2]) if a[1] is not None else (b[1], sign * b[2])
        if a[0] is None:
            base = b[0] if b[0] is None or sign > 0 else \
                Binary("-", Const(0, ix.dtype), b[0], ix.dtype)
        else:
            base = a[0] if b[0] is None else Binary(ix.op, a[0], b[0], ix.dtype)
        return base, var, coef
    if isinstance(ix, Binary) and ix.op == "*":
        for x, k in ((ix.lhs, ix.rhs), (ix.rhs, ix.lhs)):
            if isinstance(k, Const):
                r = affine(v, x)
                if r is None:
                    return None
                base = None if r[0] is None else Binary("*", r[0], k, ix.dtype)
                return base, r[1], r[2] * int(k.value)
    return None


def global_load(v, e: Load) -> Tile:
    """One DMA of the box a T.Parallel nest reads of a global tensor; with a stride
    (`X[2 * i]`) the box covers the strided elements and a VEC.GATHER picks them; other
    indices are bounded and gathered (vec_gather)."""
    splits = [affine(v, ix) for ix in e.indices]
    used = [s[1] for s in splits if s is not None and s[1] is not None]
    if any(s is None or (s[1] is not None and s[2] <= 0) for s in splits) or \
            len(set(used)) != len(used):
        return vec_gather.gathered_load(v, e)         # im2col, X[i, i], X[N - 1 - i]
    starts, box, kept, dims, coefs = [], [], [], [], []
    for base, var, coef in splits:
        starts.append(v.st.scalar.operand(base if base is not None else Const(0, "int32")))
        if var is None:
            box.append(1)
            continue
        ext = v.shape[v.dom[var]]
        box.append(coef * (ext - 1) + 1)
        kept.append(box[-1])
        dims.append(v.dom[var])
        coefs.append(coef)
    name = f"__g{len(v.em.buffers)}"
    v.em.declare(name, v.st.plan.fragment, e.buffer.dtype, kept or [1])
    v.em.engine_op("DMA_IN", "DMA.LD", (v.em.tile(name), Glob(e.buffer.name, tuple(starts))),
                   reads=(v.st.tensor_key(e.buffer.name),), writes=(name,), box=tuple(box))
    if all(c == 1 for c in coefs):
        return Tile(name, None, tuple(dims) if dims else None)
    flat, stride = None, 1              # offsets of the strided elements in the box
    for d, coef, n in reversed(list(zip(dims, coefs, kept))):
        var = next(x for x, i in v.dom.items() if i == d)
        term = Binary("*", var, Const(coef * stride, "int32"), "int32")
        flat = term if flat is None else Binary("+", term, flat, "int32")
        stride *= n
    temp = v.temp(e.buffer.dtype)
    v._vec(temp, "VEC.GATHER", (Tile(temp), Tile(name), v.operand(flat)))
    return Tile(temp)


# ----------------------------------------------------------------------------- stores

_REDUCE = {"+": "SUM", "max": "MAX", "min": "MIN"}


def _accumulated(s):
    """(op, the added value) of `X[idx] = X[idx] op e` (either order), else None."""
    v = s.value
    if not isinstance(v, Binary) or v.op not in _REDUCE:
        return None
    for mine, other in ((v.lhs, v.rhs), (v.rhs, v.lhs)):
        if isinstance(mine, Load) and mine.buffer == s.buffer and \
                tuple(mine.indices) == tuple(s.indices):
            return v.op, other
    return None


def _identity(op, dtype) -> Const:
    """The value that leaves an accumulation unchanged."""
    return Const(dtypes.reduction_identity(op, dtype), dtype)


def is_accumulation(v, s) -> bool:
    """`o[i] += x[i, j]` on chip: the store misses loop variables (whose iterations all
    update one element, in order on the CPU), each index `loop var [+ c]` in domain
    order."""
    if _accumulated(s) is None:
        return False
    dims = []
    for ix in s.indices:
        var, _ = v._var_offset(ix)
        if var is None and isinstance(ix, Const):
            continue                        # `acc[0]`: a constant index (a unit dim)
        if var is None:
            return False
        dims.append(v.dom[var])
    return dims == sorted(set(dims)) and len(dims) < len(v.shape)


def accumulate(v, s, guard) -> None:
    """The added values over the domain, reduced over the dims the store misses (the
    innermost first), the last reduction accumulating into the store's box (`acc=1`);
    under a guard the op's identity stands in where it is false."""
    op, value = _accumulated(s)
    name = s.buffer.name
    if guard is not None:
        value = Select(guard, value, _identity(op, value.dtype), value.dtype)
    if v.em.buffers[name].level not in v.st.plan.vec:
        raise unsupported(s, f"element stores to `{name}`, which the vector unit of "
                             f"{v.st.plan.cfg.name} cannot reach")
    box, kept = v._access(s, name, s.indices, constants=True)
    src = v.temp(s.buffer.dtype)
    v.compute(Tile(src), src, value)
    shape = list(v.shape)
    missing = [d for d in range(len(shape)) if d not in kept]
    base = v.em.tile(name)
    for n, d in enumerate(reversed(missing)):
        last = n == len(missing) - 1
        del shape[d]
        if last:
            dst, dst_name = Tile(base.buf, base.stage, None, box), name
        else:
            dst_name = f"__r{len(v.em.buffers)}"
            v.em.declare(dst_name, v.st.plan.fragment, s.buffer.dtype, shape)
            dst = Tile(dst_name)
        v.em.engine_op("VEC", f"VEC.RED.{_REDUCE[op]}", (dst, Tile(src)),
                       reads=(src,) + ((name,) if last else ()), writes=(dst_name,),
                       dim=d, acc=1 if last else 0)
        src = dst_name



def store_local_unit(v, s: Store, value) -> None:
    """A store to an on-chip element row with constant indices: computed into a tile of
    the domain, then copied in."""
    dims = [v.dom[v._var_offset(ix)[0]] for ix in s.indices if v.depends(ix)]
    if sorted(dims) != list(range(len(dims))) or len(dims) != len(v.dom):
        raise unsupported(s, "a store inside T.Parallel must use every loop variable once")
    temp = _value_tile(v, s, value, dims)
    box = []
    for ix, n in zip(s.indices, v.em.buffers[s.buffer.name].shape):
        if v.depends(ix):
            var, off = v._var_offset(ix)
            box.append((off, v.shape[v.dom[var]]))
        elif isinstance(ix, Const):
            box.append((int(ix.value), 1))
        else:
            raise unsupported(s, "on-chip store at an index computed at run time")
    base = v.em.tile(s.buffer.name)
    v.em.engine_op("VEC", "COPY", (Tile(base.buf, base.stage, None, tuple(box)),
                                   v.em.tile(temp)),
                   reads=(temp,), writes=(s.buffer.name,))


def store_global(v, s, guard) -> None:
    """A store or element atomic to a global tensor over the whole domain."""
    reduce = s.op if isinstance(s, Atomic) else None
    if not _covers_domain(v, s.indices):
        return vec_gather.scatter(v, s, guard, _value_tile)   # Y[N - 1 - i], hist[x[i] % 4]
    starts, dims = _global_box(v, s)
    if sorted(dims) != list(range(len(v.dom))):      # no loop variable: one element
        raise unsupported(s, "a store to a global tensor inside T.Parallel must use every "
                             "loop variable once")
    limits, guard = _box_limits(v, guard)
    value = s.value
    if guard is not None and reduce is not None:      # the op's identity: no effect
        value = Select(guard, value, _identity(_ATOMIC_BIN[reduce], value.dtype),
                       value.dtype)
    elif guard is not None:                           # read the box, write it back
        value = Select(guard, value, Load(s.buffer, s.indices, s.buffer.dtype,
                                          span=s.span), value.dtype)
    temp = _value_tile(v, s, value, dims)
    ext = [min(v.shape[d], limits.get(d, v.shape[d])) for d in dims]
    it = iter(ext)
    box = tuple(next(it) if v.depends(ix) else 1 for ix in s.indices)
    sub = tuple((0, e) for e in ext) if limits else None
    v.em.engine_op("DMA_OUT", "DMA.ST", (Glob(s.buffer.name, tuple(starts)),
                                         Tile(temp, None, None, sub)),
                   reads=(temp,), writes=(v.st.tensor_key(s.buffer.name),), box=box,
                   reduce=reduce)


def _covers_domain(v, indices) -> bool:
    """Whether the indices are `offset + loop variable` or loop-free, with every loop
    variable once: a box of the domain's shape."""
    used = []
    for ix in indices:
        split = affine(v, ix)
        if split is None or split[2] not in (0, 1):
            return False
        if split[1] is not None:
            try:
                v._split_index(ix)          # `scalar + var`: the form a DMA box starts at
            except TileLangError:
                return False
            used.append(split[1])
    return sorted(v.dom[x] for x in used) == list(range(len(v.dom)))


def _global_box(v, s):
    """(start operands, the domain dim of each indexed global dim, in order)."""
    starts, dims = [], []
    for ix in s.indices:
        base, var = v._split_index(ix)
        starts.append(v.st.scalar.operand(base if base is not None else Const(0, "int32")))
        if var is not None:
            dims.append(v.dom[var])
    return starts, dims


def _box_limits(v, guard):
    """({domain dim: bound}, the rest of the guard) for the conjuncts `i < C`."""
    limits, rest = {}, []
    for c in _conjuncts(guard):
        bound = _var_bound(v, c)
        if bound is None:
            rest.append(c)
        else:
            d, n = bound
            limits[d] = min(n, limits.get(d, n))
    residual = None
    for c in rest:
        residual = _and(residual, c)
    return limits, residual


def _conjuncts(e):
    if e is None:
        return []
    if isinstance(e, Binary) and e.op == "and":
        return _conjuncts(e.lhs) + _conjuncts(e.rhs)
    return [e]


def _var_bound(v, c):
    if not isinstance(c, Binary) or c.op not in ("<", "<=", ">", ">="):
        return None
    lhs, op, rhs = c.lhs, c.op, c.rhs
    if isinstance(lhs, Const) and isinstance(rhs, Var):
        lhs, rhs, op = rhs, lhs, {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
    if not (isinstance(lhs, Var) and lhs in v.dom and isinstance(rhs, Const)):
        return None
    if op not in ("<", "<="):
        return None
    return v.dom[lhs], max(0, int(rhs.value) + (1 if op == "<=" else 0))


def _value_tile(v, s, value, dims) -> str:
    """A temporary tile holding `value` over the domain; tile dim t is domain dim
    dims[t] (a one-element tile when the domain has no loop variable)."""
    dims = tuple(dims)
    temp = f"__s{len(v.em.buffers)}"
    v.em.declare(temp, v.st.plan.fragment, s.buffer.dtype, [v.shape[d] for d in dims] or [1])
    dst = Tile(temp, None, dims or None)
    if not v.depends(value):
        v._vec(temp, "VEC.MOV", (dst, v.st.scalar.operand(value)))
    else:
        v.compute(dst, temp, value)
    return temp


# ----------------------------------------------------------------------------- outside

def lower_element(st, s) -> None:
    """A Store / Atomic outside T.Parallel: a one-element domain."""
    from .vec import VecLowering
    v = VecLowering(st, [], (1,))
    if s.buffer.name in st.local:
        if isinstance(s, Atomic):
            s = Store(s.buffer, s.indices, Binary(_ATOMIC_BIN[s.op], Load(
                s.buffer, s.indices, s.buffer.dtype, span=s.span), s.value, s.value.dtype,
                span=s.span), span=s.span)
        v.store(s)
    else:
        store_global(v, s, None)
    v.release()


_ATOMIC_BIN = {"add": "+", "max": "max", "min": "min"}

__all__ = ["flatten", "is_unit_access", "unit_load", "store_local_unit", "store_global",
           "lower_element"]
