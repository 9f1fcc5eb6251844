"""TileLang's further tile operations, written as the loop nests they stand for (so every
target that runs `T.Parallel` runs them):

* `T.im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad)` (and its old name
  `T.c2d_im2col`): the (block_M, block_K) tile `col` of the im2col matrix of an NHWC
  image — row m = nhw_step * block_M + i is an output pixel (n, oh, ow), column
  k = c_step * block_K + j a kernel tap (kh, kw, c); padding reads 0;
* `T.cumsum(src, dst=None, dim=0, reverse=False)`: inclusive prefix sums along `dim` of
  an on-chip buffer, in log2(n) whole-tile steps (Hillis-Steele), in place without `dst`;
* `T.print(...)`: accepted; it prints nothing here (docs/compat.md).

`expand(template, bindings, span)` builds a statement template (tile-language text) with
names bound to values; its positions are the call's.
"""
from __future__ import annotations

import textwrap

from lark import Tree

from .. import dtypes
from ..diagnostics import codes_tileops as C3, codes_types as CT
from ..ir.nodes import Alloc, Buffer, Cast, Const, Let, Var
from .callargs import Sig, REQUIRED, bind
from .errors import fail, Spans
from .regions import region_arg
from .values import Lit, BufRef, as_expr, const_int, const_ints, describe, lit_to, span_of


class _OneSpan(Spans):
    """Every position is the expanded call's."""

    def __init__(self, span):
        super().__init__(span.file)
        self.span = span

    def of(self, item):
        return self.span

    def at(self, *args, **kwargs):
        return self.span


class TileOpExtMixin:
    def expand(self, template: str, bindings: dict, span) -> list:
        from .parser import parse_tree
        spans = _OneSpan(span)
        text = "def __expanded():\n" + textwrap.indent(textwrap.dedent(template), "    ")
        funcdef = parse_tree(text, spans).children[0]
        saved = self.spans
        self.spans = spans
        try:
            with self.scope.block():
                for name, value in bindings.items():
                    self.scope.bind(name, value.buffer if isinstance(value, BufRef) else value,
                                    "macro_arg")
                return self.stmts(funcdef.children[-1].children)
        finally:
            self.spans = saved

    # ------------------------------------------------------------------ im2col
    def _op_im2col(self, tree, span, name="T.im2col"):
        args = bind(Sig(name, (("img", REQUIRED), ("col", REQUIRED), ("nhw_step", REQUIRED),
                               ("c_step", REQUIRED), ("kernel", REQUIRED), ("stride", 1),
                               ("dilation", 1), ("pad", 0)),
                        ignored=("eviction_policy", "annotations")), tree, self.spans)
        img, col = (self._buffer_arg(args[k], name, k) for k in ("img", "col"))
        if img.ndim != 4 or col.ndim != 2:
            raise fail(CT.BAD_SHAPE_ENTRY, f"{name} takes an NHWC image and a 2-d tile, "
                       f"found {img.ndim}-d `{img.name}` and {col.ndim}-d `{col.name}`",
                       span, "wrong ranks")
        bm, bk = (const_int(d) for d in col.shape)
        kernel, stride, dil, pad = (self._int_arg(args[k], k) for k in
                                    ("kernel", "stride", "dilation", "pad"))
        n, h, w, c = img.shape
        oh = f"((__H + 2 * {pad} - {dil} * ({kernel} - 1) - 1) // {stride} + 1)"
        ow = f"((__W + 2 * {pad} - {dil} * ({kernel} - 1) - 1) // {stride} + 1)"
        template = f"""
        for __i, __j in T.Parallel({bm}, {bk}):
            __k = __cs * {bk} + __j
            __m = __ns * {bm} + __i
            __h = __m % ({oh} * {ow}) // {ow} * {stride} + __k // ({kernel} * __C) * {dil} - {pad}
            __w = __m % {ow} * {stride} + __k // __C % {kernel} * {dil} - {pad}
            __col[__i, __j] = T.if_then_else((__h >= 0) and (__w >= 0) and (__h < __H) and (__w < __W), __img[__m // ({oh} * {ow}), __h, __w, __k % __C], 0)
        """
        return self.expand(template, {"__img": BufRef(img), "__col": BufRef(col),
                                      "__ns": self.eval(args["nhw_step"]),
                                      "__cs": self.eval(args["c_step"]),
                                      "__H": _dim(h), "__W": _dim(w), "__C": _dim(c)}, span)

    def _op_c2d_im2col(self, tree, span):
        return self._op_im2col(tree, span, "T.c2d_im2col")

    # ------------------------------------------------------------------ cumsum
    def _op_cumsum(self, tree, span, name="cumsum"):
        """`T.cumsum` / `T.cummax(src, dst=None, dim=0, reverse=False)`: an inclusive scan
        along `dim`, by log2(n) doubling steps over the whole tile."""
        op = f"T.{name}"
        args = bind(Sig(op, (("src", REQUIRED), ("dst", None), ("dim", 0),
                             ("reverse", False)), ignored=("annotations",)), tree, self.spans)
        src = self._scan_region(args["src"], op, "src")
        dst = src if args["dst"] is None else self._scan_region(args["dst"], op, "dst")
        shape = [int(e) for e in src.extents]
        if src.buffer.scope == "global" or dst.buffer.scope == "global" or \
                shape != [int(e) for e in dst.extents]:
            raise fail(C3.BAD_FUNCTION, f"{op} scans an on-chip buffer into one of the "
                       "same shape", span, "global or mismatched buffers")
        dim = self.const_arg(args["dim"], "dim") % len(shape)
        reverse = self.const_arg(args["reverse"], "reverse", bool)
        tmp = Buffer(self.fresh("__scan"), tuple(Const(n, "int32") for n in shape),
                     dst.buffer.dtype, "fragment", span=span)
        idx = [f"__x{d}" for d in range(len(shape))]
        # a region's elements: its start corner plus the loop variables (__s / __d: the
        # corners of src and dst, bound below)
        at_src = ", ".join(f"__s{d} + {x}" for d, x in enumerate(idx))
        at = [f"__d{d} + {x}" for d, x in enumerate(idx)]
        corners = {f"__s{d}": st for d, st in enumerate(src.starts)}
        corners.update({f"__d{d}": st for d, st in enumerate(dst.starts)})
        loops = f"for {', '.join(idx)} in T.Parallel({', '.join(map(str, shape))}):"
        out = [Alloc(tmp, span=span)]
        if dst is not src:
            out += self.expand(f"{loops}\n    __dst[{', '.join(at)}] = __src[{at_src}]",
                               {"__src": BufRef(src.buffer), "__dst": BufRef(dst.buffer),
                                **corners}, span)
        step = 1
        while step < shape[dim]:
            near = list(at)
            near[dim] = f"{at[dim]} {'+' if reverse else '-'} {step}"
            inside = f"{idx[dim]} + {step} < {shape[dim]}" if reverse else \
                f"{idx[dim]} >= {step}"
            here, mine = ", ".join(at), ", ".join(idx)
            other = f"T.if_then_else({inside}, __dst[{', '.join(near)}], " + \
                ("0)" if name == "cumsum" else f"__dst[{here}])")
            combined = f"__dst[{here}] + {other}" if name == "cumsum" else \
                f"T.max(__dst[{here}], {other})"
            template = f"""
            {loops}
                __tmp[{mine}] = {combined}
            {loops}
                __dst[{here}] = __tmp[{mine}]
            """
            out += self.expand(template, {"__dst": BufRef(dst.buffer), "__tmp": BufRef(tmp),
                                          **corners}, span)
            step *= 2
        return out

    def bitwise_reduce(self, kind, tree, span):
        """`T.reduce_bitand / bitor / bitxor(src, dst, dim=-1, clear=True)` of an integer
        tile: halving steps over a copy of `src` (element j combines with j + half; past
        the end, the operation's identity), then dst takes (or, without clear, combines
        with) element 0 of the reduced dim."""
        op = f"T.reduce_{kind}"
        args = bind(Sig(op, (("buffer", REQUIRED), ("out", REQUIRED), ("dim", -1),
                             ("clear", True))), tree, self.spans)
        src = self._buffer_arg(args["buffer"], op, "buffer")
        dst = self._buffer_arg(args["out"], op, "out")
        if not dtypes.is_int(src.dtype) or src.dtype == "bool":
            raise fail(CT.BAD_OPERAND, f"{op} reduces an integer tile, `{src.name}` is "
                       f"{src.dtype}", span, src.dtype)
        shape = [const_int(d) for d in src.shape]
        dim = self.const_arg(args["dim"], "dim") % len(shape)
        if [const_int(d) for d in dst.shape] not in (shape[:dim] + shape[dim + 1:], [1]):
            raise fail(CT.REDUCE_SHAPE, f"{op} of `{src.name}` along dim {dim} does not give "
                       f"the shape of `{dst.name}`", span, "shape mismatch")
        clear = self.const_arg(args["clear"], "clear", bool)
        fn = {"bitand": "T.bitwise_and", "bitor": "T.bitwise_or", "bitxor": "T.bitwise_xor"}[kind]
        identity = -1 if kind == "bitand" else 0
        tmp = Buffer(self.fresh("__bits"), src.shape, src.dtype, "fragment", span=span)
        idx = [f"__x{d}" for d in range(len(shape))]
        every = f"for {', '.join(idx)} in T.Parallel({', '.join(map(str, shape))}):"
        out = [Alloc(tmp, span=span)]
        out += self.expand(f"{every}\n    __tmp[{', '.join(idx)}] = __src[{', '.join(idx)}]",
                           {"__src": BufRef(src), "__tmp": BufRef(tmp)}, span)
        width = shape[dim]
        while width > 1:
            half = (width + 1) // 2
            ext = list(shape)
            ext[dim] = half
            far = list(idx)
            far[dim] = f"{idx[dim]} + {half}"
            here = ", ".join(idx)
            template = f"""
            for {', '.join(idx)} in T.Parallel({', '.join(map(str, ext))}):
                __tmp[{here}] = {fn}(__tmp[{here}], T.if_then_else({far[dim]} < {width}, __tmp[{', '.join(far)}], {identity}))
            """
            out += self.expand(template, {"__tmp": BufRef(tmp)}, span)
            width = half
        kept = [x for d, x in enumerate(idx) if d != dim] or ["__x0"]
        first = list(idx)
        first[dim] = "0"
        kept_shape = [n for d, n in enumerate(shape) if d != dim] or [1]
        value = f"__tmp[{', '.join(first if len(shape) > 1 else ['0'])}]"
        if not clear:
            value = f"{fn}(__dst[{', '.join(kept)}], {value})"
        out += self.expand(f"for {', '.join(kept)} in T.Parallel({', '.join(map(str, kept_shape))}):"
                           f"\n    __dst[{', '.join(kept)}] = {value}",
                           {"__dst": BufRef(dst), "__tmp": BufRef(tmp)}, span)
        return out

    def _scan_region(self, tree, op, what):
        """The region a scan reads or writes: a whole buffer or a slice of constant
        extents (`big[0:M, 0:N]`, `A_shared[r0:r1, :]`)."""
        spec = region_arg(self, tree, f"the {what} of {op}")
        sizes = None if spec.extents is None else const_ints(spec.extents)
        if sizes is None or None in sizes:
            raise fail(C3.BAD_FUNCTION, f"the {what} of {op} is a buffer or a slice of "
                       "constant extents", spec.span, "extents not known")
        return spec.region(sizes)

    def _op_cummax(self, tree, span):
        return self._op_cumsum(tree, span, "cummax")

    # ------------------------------------------------------------------ let
    def _op_let(self, tree, span):
        """`T.let(x, value)` of an `x = T.int32()`: x is bound to the value (converted to
        x's dtype) for the rest of the enclosing block."""
        from .stmts_ext import UnboundScalar
        args = bind(Sig("T.let", (("var", REQUIRED), ("value", REQUIRED))), tree, self.spans)
        var_tree = args["var"]
        declared = self.eval(var_tree)
        if not (isinstance(var_tree, Tree) and var_tree.data == "name"
                and isinstance(declared, UnboundScalar)):
            raise fail(CT.NOT_SCALAR, f"T.let binds a name declared with `x = T.int32()`, "
                       f"found {describe(declared)}", self.spans.of(var_tree),
                       "not a declared scalar")
        value = self.eval(args["value"])
        e = lit_to(value, declared.dtype) if isinstance(value, Lit) else as_expr(value)
        if e.dtype != declared.dtype:
            e = Cast(e, declared.dtype, span=span)
        var = Var(self.fresh(declared.name), declared.dtype, span=declared.span)
        self.scope.bind(str(var_tree.children[0]), var, "let")
        return [Let(var, e, span=span)]

    # ------------------------------------------------------------------ transpose
    def _op_transpose(self, tree, span):
        """`T.transpose(src, dst)`: dst[i, j] = src[j, i] for 2-d buffers of transposed
        shapes, as a T.Parallel nest (each target lowers it as any other nest)."""
        args = bind(Sig("T.transpose", (("src", REQUIRED), ("dst", REQUIRED))), tree,
                    self.spans)
        src = self._buffer_arg(args["src"], "T.transpose", "src")
        dst = self._buffer_arg(args["dst"], "T.transpose", "dst")
        rows, cols = ([const_int(d) for d in b.shape] for b in (src, dst))
        if len(rows) != 2 or None in rows + cols or rows != cols[::-1]:
            raise fail(C3.BAD_FUNCTION, f"T.transpose needs two 2-d buffers of transposed "
                       f"constant shapes; `{src.name}` is {_shape(src)} and `{dst.name}` "
                       f"is {_shape(dst)}", span, "shapes do not transpose")
        template = f"for __i, __j in T.Parallel({cols[0]}, {cols[1]}):\n" \
                   "    __dst[__i, __j] = __src[__j, __i]"
        return self.expand(template, {"__src": BufRef(src), "__dst": BufRef(dst)}, span)

    # ------------------------------------------------------------------ print
    def _op_print(self, tree, span):
        for arg in (tree.children[1].children if tree.children[1] is not None else ()):
            if getattr(arg, "data", None) != "kwarg":
                self.eval(arg)              # still checked: names, dtypes
        return []

    # ------------------------------------------------------------------ helpers
    def _buffer_arg(self, arg, op, what) -> Buffer:
        v = self.eval(arg)
        if isinstance(v, BufRef) and v.buffer.scope != "var":
            return v.buffer
        raise fail(CT.NOT_SCALAR, f"{op} takes a buffer as `{what}`, found {describe(v)}",
                   span_of(v), "not a buffer")

    def _int_arg(self, arg, what) -> int:
        if isinstance(arg, int):
            return arg
        return self.const_arg(arg, what)


def _shape(b) -> str:
    return "(" + ", ".join(str(getattr(d, "value", d)) for d in b.shape) + ")"


def _dim(d):
    return Lit(int(d.value)) if isinstance(d, Const) else d


__all__ = ["TileOpExtMixin"]
