"""Tile operations as statements: T.copy, T.gemm, T.fill, T.clear, T.reduce_*, atomics;
and the allocations `buf = T.alloc_*(...)`."""
from __future__ import annotations

from lark import Tree

from .. import dtypes
from ..diagnostics import codes_tileops as C3, codes_types as CT
from ..ir.nodes import (Const, Buffer, Alloc, Copy, Gemm, Fill, Reduce, Atomic, TileAtomic,
                        Load, Prefetch, Region, Store, EVICTION_POLICIES)
from .callargs import Sig, REQUIRED, bind
from .errors import fail
from .intrinsics import dtype_of
from .nanreduce import nan_propagating
from .regions import RegionAlias, region_arg, pair, fmt_extents
from .promotion import is_strict
from .values import (Lit, BufRef, Tup, Var, Str, NoneVal, as_expr, kind_of, lit_to,
                     const_int, const_value, describe, span_of, cast_value, convert_to)

# T.alloc_reducer: a fragment whose elements T.Parallel iterations accumulate into
# (`r[i] += x[i, j]`); both targets run such an update in order, so it needs no replicas
_ALLOC_SCOPE = {"alloc_shared": "shared", "alloc_fragment": "fragment",
                "alloc_local": "local", "alloc_global": "global",
                "alloc_reducer": "fragment"}

_BUFFER_SCOPES = {"global": "alloc_global", "shared": "alloc_shared",
                  "shared.dyn": "alloc_shared", "local.fragment": "alloc_fragment",
                  "local": "alloc_local"}


class TileOpMixin:
    def tile_op(self, name, tree, span) -> list:
        if not self.in_kernel:
            raise fail(C3.TILEOP_OUTSIDE_KERNEL, f"`T.{name}` outside `T.Kernel`", span,
                       "tile operation outside the kernel",
                       help="move it inside the `with T.Kernel(...)` body")
        if name.startswith("reduce_"):
            return self._reduce(name[len("reduce_"):], tree, span)
        if name in ("atomic_addx2", "atomic_addx4", "atomic_store", "reducer_init",
                    "reducer_update"):
            result = getattr(self, f"_op_{name}")(tree, span)   # atomics.py, reducers.py
            return result if isinstance(result, list) else [result]
        if name.startswith("atomic_"):
            return [self._atomic(name[len("atomic_"):], tree, span)]
        result = getattr(self, f"_op_{name}")(tree, span)
        return result if isinstance(result, list) else [result]     # expansions: several

    def const_arg(self, value_or_tree, what, kind=int, minimum=None):
        """A compile-time constant argument (`num_stages`, `dim`, `transpose_A`...);
        `minimum`: the least value an integer argument may take (TL0390 below it)."""
        if value_or_tree is None or isinstance(value_or_tree, (bool, int, float)):
            return value_or_tree
        v = self.eval(value_or_tree)
        c = const_value(v)
        ok = c is not None and (isinstance(c, bool) if kind is bool else
                                isinstance(c, int) and not isinstance(c, bool))
        if not ok:
            want = "True or False" if kind is bool else "an integer constant"
            raise fail(CT.NOT_CONSTANT, f"{what} must be {want}", span_of(v),
                       f"{describe(v)}, not a constant" if c is None else "wrong kind")
        if minimum is not None and c < minimum:
            raise fail(C3.OUT_OF_RANGE_ARG, f"{what} must be at least {minimum}, got {c}",
                       span_of(v), "out of range")
        return c

    # ------------------------------------------------------------------ copy / fill
    def _op_copy(self, tree, span):
        args = bind(Sig("T.copy", (("src", REQUIRED), ("dst", REQUIRED),
                                   ("eviction_policy", None)),
                        ignored=("coalesced_width", "disable_tma"), positional=2),
                    tree, self.spans)      # TileLang's: the hints are keyword-only
        src = region_arg(self, args["src"], "the source of T.copy", dynamic=True)
        dst = region_arg(self, args["dst"], "the destination of T.copy", dynamic=True)
        if src.extents is None and dst.extents is None and \
                len(src.starts) == src.buffer.ndim and len(dst.starts) == dst.buffer.ndim:
            # two elements (`T.copy(A[i], B[i])`): TileLang stores the one element
            value = Load(src.buffer, tuple(src.starts), src.buffer.dtype, span=src.span)
            return Store(dst.buffer, tuple(dst.starts), self.value_for(dst.buffer, value),
                         span=span)
        s, d = pair(src, dst, "T.copy")
        policy = self.eviction_policy(args["eviction_policy"], "T.copy")
        return Copy(s, d, eviction_policy=policy or "evict_normal", span=span)

    def eviction_policy(self, tree, what: str) -> str | None:
        """The value of an `eviction_policy=` argument (None when not given)."""
        if tree is None:
            return None
        v = self.eval(tree)
        if isinstance(v, NoneVal):
            return None
        if not isinstance(v, Str) or v.value not in EVICTION_POLICIES:
            choices = ", ".join(f'"{p}"' for p in EVICTION_POLICIES)
            raise fail(C3.BAD_EVICTION_POLICY, f"eviction_policy of {what} must be one of "
                       f"{choices}", self.spans.of(tree), "unknown cache hint"
                       if isinstance(v, Str) else f"{describe(v)}, not a string constant")
        return v.value

    def _op_fill(self, tree, span):
        args = bind(Sig("T.fill", (("buffer", REQUIRED), ("value", REQUIRED))), tree,
                    self.spans)
        var = self._var_buffer(args["buffer"])
        if var is not None:                 # a T.alloc_var scalar: a plain store
            return Store(var, (), self.value_for(var, self.eval(args["value"])), span=span)
        region = self._whole_or_element(args["buffer"], "T.fill")
        value = self.value_for(region.buffer, self.eval(args["value"]))
        return Fill(region, value, span=span)

    def _op_clear(self, tree, span):
        args = bind(Sig("T.clear", (("buffer", REQUIRED),)), tree, self.spans)
        var = self._var_buffer(args["buffer"])
        if var is not None:                 # a T.alloc_var scalar: a plain store
            zero = lit_to(Lit(False if var.dtype == "bool" else 0, span), var.dtype)
            return Store(var, (), zero, span=span)
        region = self._whole_or_element(args["buffer"], "T.clear")
        zero = lit_to(Lit(False if region.buffer.dtype == "bool" else 0, span),
                      region.buffer.dtype)
        return Fill(region, zero, span=span)

    def _op_finalize_reducer(self, tree, span):
        """TileLang combines a reducer's per-thread replicas here; this compiler keeps
        one copy, already final (the argument is still checked)."""
        args = bind(Sig("T.finalize_reducer", (("reducer", REQUIRED), ("dst", None),
                                                ("batch", 1))), tree, self.spans)
        src = region_arg(self, args["reducer"], "the reducer of T.finalize_reducer")
        self.const_arg(args["batch"], "batch", minimum=1)     # as T.reduce_*'s `batch`
        if args["dst"] is not None:         # `T.finalize_reducer(acc, result)`: a copy
            dst = region_arg(self, args["dst"], "the destination of T.finalize_reducer")
            s, d = pair(src, dst, "T.finalize_reducer")
            return Copy(s, d, span=span)
        return []

    def _var_buffer(self, tree):
        """The T.alloc_var buffer `tree` names, or None."""
        if isinstance(tree, Tree) and tree.data == "name":
            v, _ = self.scope.lookup(str(tree.children[0]))
            if isinstance(v, Buffer) and v.scope == "var":
                return v
        return None

    def _whole_or_element(self, tree, op) -> Region:
        spec = region_arg(self, tree, f"the buffer of {op}")
        if spec.extents is None:
            if isinstance(tree, Tree) and tree.data == "getitem":
                return spec.region((1,) * spec.buffer.ndim)
            raise fail(CT.NOT_CONSTANT_SHAPE, f"{op} of `{spec.name}` needs a constant shape",
                       spec.span, "dynamic shape", help="give the region with slices")
        return spec.region()

    def value_for(self, buf: Buffer, v, what="value"):
        """A value stored into `buf`: literals adapt; another dtype is converted to the
        buffer's, as TVM does (an error under the strict option)."""
        if isinstance(v, Lit):
            # a float literal into an integer buffer converts (TVM); one of the buffer's
            # own kind must fit it (1e39 is no float32: TL0216)
            if not is_strict() and v.kind == "float" and kind_of(buf.dtype) == "int":
                return Const(cast_value(v.value, buf.dtype), buf.dtype, span=v.span)
            return lit_to(v, buf.dtype, buf.span)
        e = as_expr(v)
        if e.dtype != buf.dtype:
            if is_strict():
                raise fail(CT.STORE_DTYPE, f"{what} has dtype {e.dtype} but `{buf.name}` is "
                           f"{buf.dtype}", e.span, e.dtype,
                           help=f'convert explicitly: T.cast(..., "{buf.dtype}")')
            return convert_to(e, buf.dtype)
        return e

    # ------------------------------------------------------------------ prefetch
    def _op_prefetch(self, tree, span):
        args = bind(Sig("T.prefetch", (("region", REQUIRED), ("part", 0), ("parts", 1))),
                    tree, self.spans)
        spec = region_arg(self, args["region"], "the region of T.prefetch")
        if spec.buffer.scope != "global":
            raise fail(C3.BAD_PREFETCH, f"T.prefetch of `{spec.name}`, a {spec.buffer.scope} "
                       "buffer", spec.span, "not a global tensor",
                       help="prefetch a region of a kernel argument or global workspace")
        if spec.extents is None:
            raise fail(C3.BAD_PREFETCH, f"T.prefetch cannot infer the size of `{spec.name}`",
                       spec.span, "start corner", help="give the region with slices")
        parts = self.const_arg(args["parts"], "parts")
        if parts < 1:
            raise fail(C3.BAD_PREFETCH, f"T.prefetch needs parts >= 1, got {parts}",
                       self.spans.of(args["parts"]), "not positive")
        part = args["part"]
        part = Const(0, "int32", span=span) if part == 0 else self.eval_int(part, "part")
        return Prefetch(spec.region(), part, parts, span=span)

    # ------------------------------------------------------------------ gemm
    def _op_gemm(self, tree, span):
        sig = Sig("T.gemm", (("A", REQUIRED), ("B", REQUIRED), ("C", REQUIRED),
                             ("transpose_A", False), ("transpose_B", False),
                             ("clear_accum", False)),
                  ignored=("policy", "k_pack", "wg_wait"))
        args = bind(sig, tree, self.spans)
        specs = [region_arg(self, args[k], f"operand {k} of T.gemm") for k in "ABC"]
        for s in specs:
            if s.extents is None:
                raise fail(C3.COPY_NO_EXTENT, f"T.gemm cannot infer the size of `{s.name}`",
                           s.span, "start corner", help="pass a whole buffer or slices")
        ta = self.const_arg(args["transpose_A"], "transpose_A", bool)
        tb = self.const_arg(args["transpose_B"], "transpose_B", bool)
        clear = self.const_arg(args["clear_accum"], "clear_accum", bool)
        a, b, c = specs
        _check_gemm(a, b, c, ta, tb)
        return Gemm(a.region(), b.region(), c.region(), ta, tb, clear, span=span)

    # ------------------------------------------------------------------ reduce / atomics
    def _reduce(self, kind, tree, span):
        if kind in ("bitand", "bitor", "bitxor"):
            return self.bitwise_reduce(kind, tree, span)             # tileops_ext.py
        sig = Sig(f"T.reduce_{kind}", (("buffer", REQUIRED), ("out", REQUIRED), ("dim", -1),
                                       ("clear", True), ("batch", 1), ("nan_propagate", False)))
        args = bind(sig, tree, self.spans)
        src = self._whole_buffer(args["buffer"], f"T.reduce_{kind}")
        dst = self._whole_buffer(args["out"], f"T.reduce_{kind}")
        dim = self.const_arg(args["dim"], "dim")
        clear = self.const_arg(args["clear"], "clear", bool)
        # TileLang's `batch`: how many rows one CUDA all-reduce combines; the reduction
        # is the same for any count, which is checked and otherwise has no effect here
        self.const_arg(args["batch"], "batch", minimum=1)
        nan_propagate = self.const_arg(args["nan_propagate"], "nan_propagate", bool)
        n = src.ndim
        if not -n <= dim < n:
            dim_span = self.spans.of(args["dim"]) if isinstance(args["dim"], Tree) or hasattr(
                args["dim"], "type") else span
            raise fail(CT.REDUCE_DIM, f"dim {dim} is out of range for {n}-d `{src.name}`",
                       dim_span, "out of range", help=f"valid: {-n} <= dim < {n}")
        dim %= n
        want = src.shape[:dim] + src.shape[dim + 1:]
        ok = dst.shape == want or (want == () and len(dst.shape) == 1
                                   and const_int(dst.shape[0]) == 1)
        if not ok:
            raise fail(CT.REDUCE_SHAPE, f"T.reduce_{kind} of {_shape(src.shape)} along dim "
                       f"{dim} gives {_shape(want)}, but `{dst.name}` is {_shape(dst.shape)}",
                       self.spans.of(args["out"]), f"{_shape(dst.shape)}",
                       secondary=[(self.spans.of(args["buffer"]), _shape(src.shape))])
        reduce = Reduce(kind, src, dst, dim, clear, span=span)
        return nan_propagating(self, reduce) if nan_propagate else [reduce]

    def _whole_buffer(self, tree, op) -> Buffer:
        v = self.eval(tree)
        if isinstance(v, BufRef) and v.buffer.scope != "var":
            return v.buffer
        raise fail(CT.NOT_SCALAR, f"{op} takes whole buffers, found {describe(v)}",
                   span_of(v) if not isinstance(v, BufRef) else v.span, "not a buffer")

    def _atomic(self, op, tree, span):
        name = f"T.atomic_{op}"
        args = bind(Sig(name, (("dst", REQUIRED), ("value", REQUIRED)),
                        ignored=("memory_order", "return_prev", "use_tma")), tree, self.spans)
        value_tree = args["value"]
        if self._is_tile(value_tree):
            src = region_arg(self, value_tree, f"the value of {name}", dynamic=True)
            dst = region_arg(self, args["dst"], f"the destination of {name}", dynamic=True)
            s, d = pair(src, dst, name)
            return TileAtomic(op, d, s, span=span)
        dst_tree = args["dst"]
        if self._is_tile(dst_tree):         # a scalar into every element (atomics.py)
            dst = region_arg(self, dst_tree, f"the destination of {name}")
            return self.tile_atomic_scalar(op, dst, self.eval(value_tree), span)
        buf = self.element_buffer(dst_tree, name, C3.BAD_ATOMIC, "C[i, j]")
        idx = self.indices(buf, dst_tree.children[1].children, self.spans.of(dst_tree))
        value = self.value_for(buf, self.eval(value_tree))
        return Atomic(op, buf, idx, value, span=span)

    def _is_tile(self, tree) -> bool:
        if isinstance(tree, Tree) and tree.data == "getitem":
            return any(isinstance(s, Tree) and s.data == "slice"
                       for s in tree.children[1].children)
        if isinstance(tree, Tree) and tree.data == "name":
            v, _ = self.scope.lookup(str(tree.children[0]))
            return isinstance(v, Buffer) and v.scope != "var" or isinstance(v, RegionAlias)
        return False

    # ------------------------------------------------------------------ allocations
    def alloc(self, name, target_name, tree, span) -> Alloc:
        if name == "alloc_buffer":
            name = self._buffer_alloc(tree)
        if name == "alloc_global":
            if self.in_kernel:
                raise fail(C3.GLOBAL_ALLOC_IN_KERNEL, "`T.alloc_global` inside `T.Kernel`",
                           span, "inside the kernel", help="allocate workspaces before "
                           "`with T.Kernel(...)`")
        elif not self.in_kernel:
            raise fail(C3.ALLOC_OUTSIDE_KERNEL, f"`T.{name}` outside `T.Kernel`", span,
                       "block-local allocation", help="move it inside `with T.Kernel(...)`, "
                       "or use T.alloc_global for a workspace in global memory")
        if name == "alloc_var":
            args = bind(Sig("T.alloc_var", (("dtype", REQUIRED), ("init", None)),
                            ignored=("scope",)), tree, self.spans)
            dtype = dtype_of(self.eval(args["dtype"]))
            buf = Buffer(target_name, (), dtype, "var", span=span)
            init = None if args["init"] is None else \
                self.value_for(buf, self.eval(args["init"]), "init")
            return Alloc(buf, init, span=span)
        # TileLang's third argument, the GPU memory scope, is accepted and changes nothing
        params = (("shape", REQUIRED), ("dtype", REQUIRED), ("scope", None))
        if name != "alloc_global":      # the placement the memory_reuse pass prints
            params += (("offset", None), ("align", None))
        if name == "alloc_reducer":
            params += (("op", "sum"),)
        args = bind(Sig(f"T.{name}", params, ignored=("replication",)), tree, self.spans)
        dtype = dtype_of(self.eval(args["dtype"]))
        shape = self.shape_of(args["shape"], allow_symbols=(name == "alloc_global"))
        offset, align = self.placement(args, span)
        if name == "alloc_reducer":     # many T.Parallel iterations may update an element
            self.reducers = getattr(self, "reducers", frozenset()) | {target_name}
            self.reducer_op(target_name, args["op"])                  # reducers.py
        return Alloc(Buffer(target_name, shape, dtype, _ALLOC_SCOPE[name], span=span),
                     offset=offset, align=align, span=span)

    def _buffer_alloc(self, tree) -> str:
        """TVM's `T.alloc_buffer(shape, dtype, scope=...)` as the allocation of its scope
        (global, the default: a workspace)."""
        from .callargs import split_call
        _, kws = split_call(tree, self.spans)
        scope = "global"
        for tok, t in kws:
            if str(tok) == "scope":
                v = self.eval(t)
                scope = getattr(v, "value", scope)
                if scope not in _BUFFER_SCOPES:
                    raise fail(C3.OUT_OF_RANGE_ARG, f"T.alloc_buffer in scope {scope!r}",
                               self.spans.of(t), "unknown scope",
                               help=f"scopes: {', '.join(_BUFFER_SCOPES)}")
        return _BUFFER_SCOPES[scope]

    def placement(self, args, span) -> tuple:
        """`offset=` / `align=` of a planned buffer: given together, align a power of
        two, offset a non-negative multiple of it."""
        trees = (args.get("offset"), args.get("align"))
        if trees == (None, None):
            return None, None
        if None in trees:
            given = trees[0] if trees[0] is not None else trees[1]
            raise fail(C3.BAD_PLACEMENT, "`offset=` and `align=` go together",
                       self.spans.of(given), "only one of them given")
        offset, align = (const_int(self.eval(t)) for t in trees)
        if align is None or align <= 0 or align & (align - 1):
            raise fail(C3.BAD_PLACEMENT, "`align=` must be a power of two",
                       self.spans.of(trees[1]), "here")
        if offset is None or offset < 0 or offset % align:
            raise fail(C3.BAD_PLACEMENT, f"`offset=` must be a non-negative multiple of "
                       f"align={align}", self.spans.of(trees[0]), "here")
        return offset, align

    def _size_expr(self, item) -> bool:
        """A workspace dim given as arithmetic over sizes and prologue lets."""
        from ..ir.nodes import Expr
        if not isinstance(item, Expr):
            return False
        names = set(self.symbol_names) | self.prologue_lets
        return _size_expr_ok(item, names)

    def shape_of(self, tree, allow_symbols: bool) -> tuple:
        v = self.eval(tree)
        items = v.items if isinstance(v, Tup) else (v,)
        shape = []
        for item in items:
            c = const_int(item)
            if c is not None and c > 0:
                shape.append(Const(c, "int32", span=span_of(item)))
            elif allow_symbols and isinstance(item, Var) and item.name in self.symbol_names:
                shape.append(item)
            elif allow_symbols and self._size_expr(item):
                shape.append(item)               # e.g. `B + NUM_PARTS`: split slots
            elif allow_symbols:
                raise fail(CT.BAD_SHAPE_ENTRY, f"shape entry must be a positive integer or a "
                           f"T.dynamic size, found {describe(item)}", span_of(item), "here")
            else:
                raise fail(CT.NOT_CONSTANT_SHAPE, "the shape of a block-local buffer must be "
                           "positive compile-time constants", span_of(item),
                           "not a positive constant" if c is None or c <= 0 else "",
                           help="use integers or module-level constants")
        return tuple(shape)


_SIZE_OPS = ("+", "-", "*", "//", "%", "min", "max")


def _size_expr_ok(e, names) -> bool:
    """Integer arithmetic over symbolic sizes / prologue lets (`names`) and constants:
    what the runtime can evaluate from the manifest to size a workspace."""
    from ..ir.nodes import Binary, Call
    if isinstance(e, Const):
        return isinstance(e.value, int) and not isinstance(e.value, bool)
    if isinstance(e, Var):
        return e.name in names and e.dtype in ("int32", "int64")
    if isinstance(e, Binary) and e.op in _SIZE_OPS:
        return _size_expr_ok(e.lhs, names) and _size_expr_ok(e.rhs, names)
    if isinstance(e, Call) and e.name == "ceildiv":
        return all(_size_expr_ok(a, names) for a in e.args)
    return False


def _shape(shape) -> str:
    return fmt_extents([getattr(s, "value", getattr(s, "name", "?")) for s in shape])


def _matrix(spec):
    """The 2-d (rows, cols) of a gemm operand region (leading unit dims dropped)."""
    ext = list(spec.extents)
    while len(ext) > 2 and ext[0] == 1:
        ext.pop(0)
    if len(ext) != 2:
        raise fail(CT.GEMM_SHAPE, f"T.gemm operands must be 2-d, `{spec.name}` is "
                   f"{fmt_extents(spec.extents)}", spec.span, "not a matrix")
    return ext


def _check_gemm(a, b, c, ta, tb):
    am, bm, cm = _matrix(a), _matrix(b), _matrix(c)
    m, k = (am[1], am[0]) if ta else am
    k2, n = (bm[1], bm[0]) if tb else bm
    shapes = f"{a.name} is {fmt_extents(am)} but {b.name} is {fmt_extents(bm)}"
    if k != k2:
        raise fail(CT.GEMM_SHAPE, f"shape mismatch in T.gemm: {shapes}", a.span,
                   f"K = {k} here", secondary=[(b.span, f"K = {k2} here")],
                   help="the K extents of A and B must agree (check transpose_A / transpose_B)")
    if (m, n) != tuple(cm):
        bad, other, what = (a, m, "M") if m != cm[0] else (b, n, "N")
        raise fail(CT.GEMM_SHAPE, f"shape mismatch in T.gemm: {c.name} is {fmt_extents(cm)} "
                   f"but A @ B is ({m}, {n})", c.span, f"{fmt_extents(cm)} here",
                   secondary=[(bad.span, f"{what} = {other} here")],
                   help="C must be (M, N) for A (M, K) and B (K, N)")
    fa, fb = dtypes.is_float(a.buffer.dtype), dtypes.is_float(b.buffer.dtype)
    cdt = c.buffer.dtype
    if fa != fb or (fa and not dtypes.is_float(cdt)) or (not fa and cdt != "int32"):
        want = "a float dtype (usually float32)" if fa else "int32"
        raise fail(CT.GEMM_ACCUM_DTYPE, f"T.gemm accumulator `{c.name}` is {cdt}; with "
                   f"{a.buffer.dtype} x {b.buffer.dtype} operands it must be {want}", c.span,
                   cdt, secondary=[(a.span, a.buffer.dtype)] if fa == fb else
                   [(a.span, a.buffer.dtype), (b.span, b.buffer.dtype)])
