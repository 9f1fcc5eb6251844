"""Regions of tile operations: `A` (whole buffer), `A[i, j]` (start corner, extents
from the other operand) and `A[a:b, :]` (slices). The IR Region has constant extents.

In `T.copy` (and tile atomics) a slice may also have bounds whose difference is not a
constant (`KV[start:end, :]`, `end` loop-carried or loaded): its extent then comes from
the other operand (the tile it fills or empties) and its stop becomes the Region's
limit: elements at or past it are masked, read as 0 and never written."""
from __future__ import annotations

from dataclasses import dataclass, replace

from lark import Tree

from ..diagnostics import codes_tileops as C3, codes_types as CT
from ..ir.nodes import Span, Expr, Const, Buffer, Binary, Unary, Region
from .errors import fail
from .values import BufRef, const_int, describe, span_of


@dataclass
class RegionSpec:
    buffer: Buffer
    starts: tuple
    extents: tuple | None      # None: a start corner, extents come from the other side;
    span: Span                 # an entry None: a dynamic slice, sized by the other side
    limits: tuple | None = None    # per dim: None or the stop of a dynamic slice

    def region(self, extents=None) -> Region:
        return Region(self.buffer, tuple(self.starts), tuple(extents or self.extents),
                      self.limits, span=self.span)

    @property
    def known(self) -> bool:
        """Whether every extent is known (no corner, no dynamic slice)."""
        return self.extents is not None and None not in self.extents

    @property
    def name(self) -> str:
        return self.buffer.name


def simplify_sub(stop: Expr, start: Expr) -> Expr:
    """stop - start, simplified so that `a:a + 32` has extent 32 (printed regions and
    loops round-trip) and `bx * 64:(bx + 1) * 64` has extent 64."""
    if isinstance(stop, Binary) and stop.op == "+" and stop.lhs == start:
        return stop.rhs
    diff = _linear_difference(stop, start)
    if diff is not None:
        return Const(diff, "int32", span=stop.span)
    if const_int(start) == 0:
        return stop
    return Binary("-", stop, start, stop.dtype, span=stop.span)


def _linear(e: Expr, scale: int, acc: dict) -> bool:
    """Accumulate `scale * e` as {atom: coefficient} (key None: the constant)."""
    c = const_int(e)
    if c is not None:
        acc[None] = acc.get(None, 0) + scale * c
        return True
    if isinstance(e, Binary) and e.op in ("+", "-"):
        return _linear(e.lhs, scale, acc) and _linear(
            e.rhs, scale if e.op == "+" else -scale, acc)
    if isinstance(e, Binary) and e.op == "*":
        for k, other in ((const_int(e.lhs), e.rhs), (const_int(e.rhs), e.lhs)):
            if k is not None:
                return _linear(other, scale * k, acc)
    if isinstance(e, Unary) and e.op == "-":
        return _linear(e.operand, -scale, acc)
    acc[e] = acc.get(e, 0) + scale          # an atom: variable, load, product, call...
    return True


def _linear_difference(stop: Expr, start: Expr) -> int | None:
    acc: dict = {}
    if not (_linear(stop, 1, acc) and _linear(start, -1, acc)):
        return None
    if any(k is not None and v != 0 for k, v in acc.items()):
        return None
    return acc.get(None, 0)


@dataclass(frozen=True)
class RegionAlias:
    """A name bound to a region (`X_shared = A_shared[:block_M, :block_K]`): a tile op
    given the name works on the region."""
    WHAT = "a region (a name for a tile op's operand, not a value)"
    spec: RegionSpec

    @property
    def span(self) -> Span:
        return self.spec.span


def region_arg(b, tree, what: str, dynamic: bool = False) -> RegionSpec:
    """The region named by an argument of a tile op; `dynamic`: slices of non-constant
    extent are allowed (masked past their stop)."""
    span = b.spans.of(tree)
    if isinstance(tree, Tree) and tree.data == "getitem":
        base = b.eval(tree.children[0])
        buf = _buffer_of(base, what)
        return _subscript_region(b, buf, tree.children[1].children, span, dynamic)
    value = b.eval(tree)
    if isinstance(value, RegionAlias):
        return replace(value.spec, span=span)
    buf = _buffer_of(value, what)
    zeros = tuple(Const(0, "int32", span=span) for _ in buf.shape)
    extents = tuple(const_int(s) for s in buf.shape)
    if any(e is None for e in extents):
        return RegionSpec(buf, zeros, None, span)   # dynamic shape: inferred like a corner
    return RegionSpec(buf, zeros, extents, span)


def _buffer_of(value, what) -> Buffer:
    if isinstance(value, BufRef) and value.buffer.scope != "var":
        return value.buffer
    raise fail(CT.NOT_SCALAR, f"expected a buffer or region for {what}, found "
               f"{describe(value)}", span_of(value), "not a buffer region")


def _subscript_region(b, buf: Buffer, subs, span, dynamic: bool) -> RegionSpec:
    if len(subs) != buf.ndim:
        raise fail(CT.INDEX_COUNT, f"`{buf.name}` has {buf.ndim} dimensions but the region "
                   f"gives {len(subs)}", span, f"{len(subs)} given")
    starts, extents, limits, all_scalar = [], [], [], True
    for d, sub in enumerate(subs):
        limit = None
        if isinstance(sub, Tree) and sub.data == "slice":
            all_scalar = False
            start, extent, limit = _slice(b, buf, d, sub, dynamic)
        else:
            start, extent = b.eval_int(sub, "an integer index"), 1
        starts.append(start)
        extents.append(extent)
        limits.append(limit)
    return RegionSpec(buf, tuple(starts), None if all_scalar else tuple(extents), span,
                      tuple(limits) if any(x is not None for x in limits) else None)


def _slice(b, buf: Buffer, d: int, sub, dynamic: bool):
    """(start, extent, limit) of a slice; a dynamic one has extent None and its stop as
    the limit."""
    lo, hi = sub.children
    span = b.spans.of(sub)
    start = b.eval_int(lo, "an integer slice bound") if lo is not None else Const(0, "int32", span=span)
    stop = b.eval_int(hi, "an integer slice bound") if hi is not None else buf.shape[d]
    extent = const_int(simplify_sub(stop, start))
    if extent is None and dynamic:
        # the stop of an open slice is the tensor's edge, masked already
        return start, None, (stop if hi is not None else None)
    if extent is None:
        raise fail(CT.NOT_CONSTANT, "the extent of a region slice must be a compile-time "
                   "constant", span, "extent not constant",
                   help="write the slice as `start:start + SIZE` with a constant SIZE "
                        "(T.copy also takes `start:stop` of any extent, sized by the "
                        "other operand and masked past `stop`)")
    if extent <= 0:
        raise fail(CT.REGION_BOUNDS, f"empty slice (extent {extent})", span, "empty")
    s0, dim = const_int(start), const_int(buf.shape[d])
    if buf.scope != "global" and s0 is not None and dim is not None and s0 + extent > dim:
        raise fail(CT.REGION_BOUNDS, f"slice {s0}:{s0 + extent} is outside dimension {d} of "
                   f"`{buf.name}` (size {dim})", span, "out of bounds")
    return start, extent, None


def squeeze(extents) -> tuple:
    return tuple(e for e in extents if e != 1)


def fit(spec: RegionSpec, other: tuple, other_span: Span) -> tuple:
    """Extents for a start-corner region, taken from the other operand's extents: the
    same when the ranks agree, otherwise its non-unit extents right-aligned."""
    n = spec.buffer.ndim
    if len(other) == n:
        return tuple(other)
    core = squeeze(other)
    if len(core) > n:
        raise fail(CT.COPY_EXTENTS, f"a region of {n}-d `{spec.name}` cannot hold a "
                   f"{_fmt(other)} tile", spec.span, f"{n}-d buffer",
                   secondary=[(other_span, f"{_fmt(other)} here")])
    return (1,) * (n - len(core)) + core


def _resolve(spec: RegionSpec, other: tuple, other_span: Span) -> tuple:
    """The extents of `spec` given the other operand's (known) extents: a corner is
    fitted, a dynamic slice takes the other side's extent in its place."""
    if spec.extents is None:
        return fit(spec, other, other_span)
    if spec.known:
        return spec.extents
    sized = [i for i, e in enumerate(spec.extents) if e != 1]
    core = squeeze(other)
    if len(sized) != len(core):
        raise fail(CT.COPY_EXTENTS, f"cannot size the dynamic slice of `{spec.name}` from a "
                   f"{_fmt(other)} tile", spec.span, "dynamic extent",
                   secondary=[(other_span, f"{_fmt(other)} here")],
                   help="the other operand must have one non-unit dim for each sliced dim")
    out = list(spec.extents)
    for i, e in zip(sized, core):
        out[i] = e if out[i] is None else out[i]
    return tuple(out)


def pair(src: RegionSpec, dst: RegionSpec, op: str) -> tuple[Region, Region]:
    """Resolve the extents of two regions that must agree (T.copy, tile atomics)."""
    if not src.known and not dst.known:
        raise fail(C3.COPY_NO_EXTENT, f"{op} cannot infer the size of the region: both "
                   "sides are start corners, dynamic slices or buffers of dynamic shape",
                   dst.span, "size unknown", secondary=[(src.span, "size unknown")],
                   help="give one side as a whole buffer or with slices, e.g. A[i:i + 32, :]")
    if src.known:
        src_ext = src.extents
        dst_ext = _resolve(dst, src_ext, src.span)
    else:
        dst_ext = dst.extents
        src_ext = _resolve(src, dst_ext, dst.span)
    if squeeze(src_ext) != squeeze(dst_ext):
        raise fail(CT.COPY_EXTENTS, f"regions of {op} do not match: {src.name} is "
                   f"{_fmt(src_ext)} but {dst.name} is {_fmt(dst_ext)}", dst.span,
                   f"{_fmt(dst_ext)} here", secondary=[(src.span, f"{_fmt(src_ext)} here")],
                   help="the extents must agree once unit dimensions are dropped")
    return src.region(src_ext), dst.region(dst_ext)


def _fmt(extents) -> str:
    return "(" + ", ".join(str(e) for e in extents) + ("," if len(extents) == 1 else "") + ")"


fmt_extents = _fmt
