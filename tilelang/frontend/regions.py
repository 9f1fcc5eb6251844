"""Regions of tile operations: `A` (whole buffer), `A[i, j]` (start corner, extents
from the other operand) and `A[a:b, :]` (slices). The IR Region has constant extents."""
from __future__ import annotations

from dataclasses import dataclass

from lark import Tree

from ..diagnostics import codes_tileops as C3, codes_types as CT
from ..ir.nodes import Span, Expr, Const, Buffer, Binary, Unary, Region
from .errors import fail
from .values import BufRef, const_int, describe, span_of


@dataclass
class RegionSpec:
    buffer: Buffer
    starts: tuple
    extents: tuple | None      # None: a start corner, extents come from the other side
    span: Span

    def region(self, extents=None) -> Region:
        return Region(self.buffer, tuple(self.starts), tuple(extents or self.extents),
                      span=self.span)

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


def region_arg(b, tree, what: str) -> RegionSpec:
    """The region named by an argument of a tile op."""
    span = b.spans.of(tree)
    if isinstance(tree, Tree) and tree.data == "getitem":
        base = b.eval(tree.children[0])
        buf = _buffer_of(base, what)
        return _subscript_region(b, buf, tree.children[1].children, span)
    buf = _buffer_of(b.eval(tree), what)
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


def _subscript_region(b, buf: Buffer, subs, span) -> RegionSpec:
    if len(subs) != buf.ndim:
        raise fail(CT.INDEX_COUNT, f"`{buf.name}` has {buf.ndim} dimensions but the region "
                   f"gives {len(subs)}", span, f"{len(subs)} given")
    starts, extents, all_scalar = [], [], True
    for d, sub in enumerate(subs):
        if isinstance(sub, Tree) and sub.data == "slice":
            all_scalar = False
            start, extent = _slice(b, buf, d, sub)
        else:
            start, extent = b.eval_int(sub, "an integer index"), 1
        starts.append(start)
        extents.append(extent)
    return RegionSpec(buf, tuple(starts), None if all_scalar else tuple(extents), span)


def _slice(b, buf: Buffer, d: int, sub):
    lo, hi = sub.children
    span = b.spans.of(sub)
    start = b.eval_int(lo, "an integer slice bound") if lo is not None else Const(0, "int32", span=span)
    stop = b.eval_int(hi, "an integer slice bound") if hi is not None else buf.shape[d]
    extent = const_int(simplify_sub(stop, start))
    if extent is None:
        raise fail(CT.NOT_CONSTANT, "the extent of a region slice must be a compile-time "
                   "constant", span, "extent not constant",
                   help="write the slice as `start:start + SIZE` with a constant SIZE")
    if extent <= 0:
        raise fail(CT.REGION_BOUNDS, f"empty slice (extent {extent})", span, "empty")
    s0, dim = const_int(start), const_int(buf.shape[d])
    if buf.scope != "global" and s0 is not None and dim is not None and s0 + extent > dim:
        raise fail(CT.REGION_BOUNDS, f"slice {s0}:{s0 + extent} is outside dimension {d} of "
                   f"`{buf.name}` (size {dim})", span, "out of bounds")
    return start, extent


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


def pair(src: RegionSpec, dst: RegionSpec, op: str) -> tuple[Region, Region]:
    """Resolve the extents of two regions that must agree (T.copy, tile atomics)."""
    if src.extents is None and dst.extents is None:
        raise fail(C3.COPY_NO_EXTENT, f"{op} cannot infer the size of the region: both "
                   "sides are start corners (or buffers of dynamic shape)", dst.span,
                   "size unknown", secondary=[(src.span, "size unknown")],
                   help="give one side as a whole buffer or with slices, e.g. A[i:i + 32, :]")
    src_ext = src.extents if src.extents is not None else fit(src, dst.extents, dst.span)
    dst_ext = dst.extents if dst.extents is not None else fit(dst, src_ext, src.span)
    if squeeze(src_ext) != squeeze(dst_ext):
        raise fail(CT.COPY_EXTENTS, f"regions of {op} do not match: {src.name} is "
                   f"{_fmt(src_ext)} but {dst.name} is {_fmt(dst_ext)}", dst.span,
                   f"{_fmt(dst_ext)} here", secondary=[(src.span, f"{_fmt(src_ext)} here")],
                   help="the extents must agree once unit dimensions are dropped")
    return src.region(src_ext), dst.region(dst_ext)


def _fmt(extents) -> str:
    return "(" + ", ".join(str(e) for e in extents) + ("," if len(extents) == 1 else "") + ")"


fmt_extents = _fmt
