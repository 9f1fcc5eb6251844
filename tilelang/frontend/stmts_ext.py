"""Statements TileLang programs use beyond the core: tuple assignment (`KH, KW = K, K`),
annotated assignment (`x: T.float32 = 0.0`), `assert`, `if` on a compile-time condition
(only the branch taken is built, as Python runs only that branch in TileLang's parser),
compile-time `x += 1`, `while` loops with a run-time condition, and clear diagnostics for
`break` and `continue`.

`declare(target, value_tree, span)` is the hook `name = ...` calls first: the
declarations of a current-style `@tilelang.jit` body (`T.const`, `T.empty`, `T.dynamic`,
eager.py) are handled there; it returns None for an ordinary assignment.
"""
from __future__ import annotations

from dataclasses import dataclass

from lark import Tree

from .. import dtypes
from ..diagnostics import codes_names as CN, codes_syntax as CS, codes_types as CT
from ..diagnostics.codes_compat import ASSERTION
from ..ir.nodes import Alloc, Buffer, Cast, Const, Let, Var, While
from .callargs import Sig, REQUIRED, bind
from .errors import fail
from .exprs_ext import truth
from .values import (Lit, Str, Tup, TRef, BufData, BufRef, NoneVal, as_expr, const_int,
                     describe, span_of)


class StmtExtMixin:
    eager = None            # an eager.EagerState while building a current-style body

    def declare(self, target, value_tree, span):
        unbound = self.declare_unbound_scalar(target, value_tree)
        if unbound is not None:
            return unbound
        alias = self.declare_region_alias(target, value_tree)
        if alias is not None:
            return alias
        view = self.declare_view(target, value_tree, span)
        if view is not None:
            return view
        if self.eager is not None:
            return self.eager.declare(self, target, value_tree, span)
        return None

    # ------------------------------------------------------------------ x = T.int32()
    def declare_unbound_scalar(self, target, value_tree):
        """`x = T.int32()`: a scalar named now and given its value by `T.let(x, value)`."""
        if not (isinstance(target, Tree) and target.data == "name"
                and isinstance(value_tree, Tree) and value_tree.data == "call"
                and value_tree.children[1] is None):
            return None
        from .values import DType
        callee = self.eval(value_tree.children[0])
        if not isinstance(callee, DType):
            return None
        name, tspan = str(target.children[0]), self.spans.of(target)
        self._check_new_buffer(name, tspan)
        self.scope.bind(name, UnboundScalar(name, callee.name, tspan), "alloc")
        return []

    # ------------------------------------------------------------------ X = A[:m, :k]
    def declare_region_alias(self, target, value_tree):
        """`X = A_shared[:block_M, :block_K]`: X names that region of A (no copy); tile
        ops given X work on it, as TileLang's buffer regions."""
        if not (isinstance(target, Tree) and target.data == "name"
                and isinstance(value_tree, Tree) and value_tree.data == "getitem"):
            return None
        subs = value_tree.children[1].children
        if not any(isinstance(t, Tree) and t.data == "slice" for t in subs):
            return None
        base = self.eval(value_tree.children[0])
        if not isinstance(base, BufRef) or base.buffer.scope == "var":
            return None
        from .regions import RegionAlias, region_arg
        spec = region_arg(self, value_tree, "a region")
        name, tspan = str(target.children[0]), self.spans.of(target)
        self._check_new_buffer(name, tspan)
        self.scope.bind(name, RegionAlias(spec), "alloc")
        return []

    # ------------------------------------------------------------------ a = b = value
    def assign_chain(self, tree):
        """`A[i] = B[i] = value`: the value is computed once, then assigned to each
        target from left to right, as Python does."""
        *targets, value_tree = tree.children
        span = self.spans.of(tree)
        value = self.eval(value_tree)
        out = []
        if not isinstance(value, Lit):
            e = as_expr(value, "a value to assign")
            var = Var(self.fresh("__value"), e.dtype, span=e.span)
            out.append(Let(var, e, span=span))
            value = var
        for target in targets:
            if isinstance(target, Tree) and target.data == "getitem":
                out.append(self._store(target, lambda cur: value, span))
            elif isinstance(target, Tree) and target.data == "name":
                out += self.assign_name(str(target.children[0]), self.spans.of(target),
                                        value, span)
            else:
                raise fail(CN.ASSIGN_NOT_VARIABLE, "a chained assignment assigns to names "
                           "and elements", self.spans.of(target), "not assignable")
        return out

    # ------------------------------------------------------------------ V = T.Tensor(..., X.data)
    def declare_view(self, target, value_tree, span):
        """`V = T.Tensor(shape, dtype, X.data)`: V views the memory of global tensor X
        (same dtype, C-contiguous) with another shape."""
        if not (isinstance(value_tree, Tree) and value_tree.data == "call"
                and isinstance(target, Tree) and target.data == "name"):
            return None
        callee = self.eval(value_tree.children[0])
        if isinstance(callee, TRef) and callee.name in ("reshape", "view"):
            return self.reshape_view(callee.name, target, value_tree, span)
        if not (isinstance(callee, TRef) and callee.name in ("Tensor", "Buffer")):
            return None
        args = bind(Sig(f"T.{callee.name}", (("shape", REQUIRED), ("dtype", "float32"),
                                              ("data", None), ("pe", None))),
                    value_tree, self.spans)
        if args["data"] is None:
            return None
        data = self.eval(args["data"])
        if not isinstance(data, BufData) or data.buffer.scope != "global":
            raise fail(CT.BAD_PARAM_TYPE, f"the data of a T.{callee.name} view must be "
                       f"`X.data` of a global tensor X, found {describe(data)}",
                       span_of(data), "not a tensor's data")
        from .intrinsics import dtype_of
        dtype = "float32" if args["dtype"] == "float32" else dtype_of(self.eval(args["dtype"]))
        src = data.buffer
        if dtype != src.dtype:
            raise fail(CT.BAD_PARAM_TYPE, f"a view of `{src.name}` ({src.dtype}) must be "
                       f"{src.dtype}, not {dtype}", self.spans.of(args["dtype"]),
                       "another dtype", help="views reinterpret the shape, not the dtype")
        shape = self._view_shape(self.eval(args["shape"]))
        name, tspan = str(target.children[0]), self.spans.of(target)
        self._check_new_buffer(name, tspan)
        pe = self._view_rank(args["pe"])
        buf = Buffer(self.fresh(name), shape, dtype, "global", span=tspan)
        self.scope.bind(name, buf, "alloc")
        return [Alloc(buf, source=src, pe=pe, span=span)]

    def reshape_view(self, name, target, tree, span):
        """`V = T.reshape(X, shape)` / `V = T.view(X, shape)` of a global tensor X: V sees
        X's memory with another shape of as many elements (a view of X.data)."""
        sig = (("src", REQUIRED), ("shape", REQUIRED)) + ((("dtype", None),)
                                                           if name == "view" else ())
        args = bind(Sig(f"T.{name}", sig), tree, self.spans)
        src = self.eval(args["src"])
        if not isinstance(src, BufRef):
            raise fail(CT.BAD_PARAM_TYPE, f"T.{name} takes a buffer, found {describe(src)}",
                       span_of(src), "not a buffer")
        src = src.buffer
        if args.get("dtype") is not None:
            from .intrinsics import dtype_of
            value = self.eval(args["dtype"])
            if not isinstance(value, NoneVal) and dtype_of(value) != src.dtype:
                raise fail(CT.BAD_PARAM_TYPE, f"T.view of `{src.name}` as {dtype_of(value)}: "
                           "a view keeps the dtype of its buffer here",
                           self.spans.of(args["dtype"]), "another dtype",
                           help="convert the values instead (T.cast in a T.Parallel loop)")
        if src.scope != "global":
            raise fail(CT.BAD_PARAM_TYPE, f"T.{name} of `{src.name}`, a {src.scope} buffer: "
                       "only global tensors are reshaped here", self.spans.of(args["src"]),
                       f"{src.scope} buffer", help="copy the tile with T.Parallel indices "
                       "(`B[i // M, i % M] = A[i]`), or reshape the global tensor")
        shape = self._view_shape(self.eval(args["shape"]))
        have, want = _count(src.shape), _count(shape)
        if have is not None and want is not None and have != want:
            raise fail(CT.BAD_SHAPE_ENTRY, f"T.{name} of `{src.name}` ({have} "
                       f"elements) to a shape of {want} elements",
                       self.spans.of(args["shape"]), "another number of elements")
        vname, tspan = str(target.children[0]), self.spans.of(target)
        self._check_new_buffer(vname, tspan)
        buf = Buffer(self.fresh(vname), shape, src.dtype, "global", span=tspan)
        self.scope.bind(vname, buf, "alloc")
        return [Alloc(buf, source=src, span=span)]

    def _view_rank(self, tree):
        """`pe=r` of a view: the rank whose copy of the tensor it sees (a peer view)."""
        if tree is None:
            return None
        if not self.in_kernel:
            raise fail(CT.BAD_PARAM_TYPE, "a view of another rank's tensor (`pe=`) is "
                       "declared inside T.Kernel", self.spans.of(tree), "outside the kernel",
                       help="move the view into the kernel body")
        return self.eval_int(tree, "the rank of a view (pe=)")

    def _view_shape(self, value) -> tuple:
        items = value.items if isinstance(value, Tup) else (value,)
        shape = []
        for item in items:
            c = const_int(item)
            if c is not None and c > 0:
                shape.append(Const(c, "int32", span=span_of(item)))
                continue
            e = as_expr(item) if not isinstance(item, Lit) else None
            if e is None or not dtypes.is_int(e.dtype):
                raise fail(CT.BAD_SHAPE_ENTRY, "a view's shape entry must be a positive "
                           f"integer or an integer size expression, found {describe(item)}",
                           span_of(item), "bad shape entry")
            shape.append(e)
        return tuple(shape)

    def is_size_alias(self, value) -> bool:
        """In a current-style body, before the grids, a name bound to an expression of
        the T.const sizes names that expression (Python binds the value, and the sizes
        are compile-time values): `KH = K`, `OH = (H + 2 * P - K) // S + 1`."""
        from ..ir.visitor import free_vars
        from ..ir.nodes import Expr
        if self.eager is None or self.in_kernel or not isinstance(value, Expr):
            return False
        names = free_vars(value)
        return bool(names) and all(v.name in self.eager.const_names or
                                   v.name in self.symbol_names for v in names)

    def use_swizzle(self, call) -> list:
        """`T.use_swizzle(panel_size, order="row", enable=True)`: blocks launched in panels
        of `panel_size` grid rows (tcsim's raster; the CPU's result and speed do not
        depend on the launch order)."""
        args = bind(Sig("T.use_swizzle", (("panel_size", REQUIRED), ("order", "row"),
                                           ("enable", True)),
                        ignored=("device_func",)), call, self.spans)
        panel = self.const_arg(args["panel_size"], "panel_size")
        enable = self.const_arg(args["enable"], "enable", bool)
        if panel < 0:
            raise fail(CT.NOT_CONSTANT, "T.use_swizzle needs panel_size >= 0",
                       self.spans.of(args["panel_size"]), "negative")
        if self.in_kernel and enable:
            self.raster = panel
        return []

    # ------------------------------------------------------------------ a, b = ...
    def assign_tuple(self, target, value, span) -> list:
        names = target.children
        items = value.items if isinstance(value, Tup) else None
        if items is None or len(items) != len(names):
            got = f"{len(items)} values" if items is not None else describe(value)
            raise fail(CN.ASSIGN_NOT_VARIABLE, f"cannot unpack {got} into {len(names)} "
                       "names", self.spans.of(target), f"{len(names)} names",
                       secondary=[(span_of(value), got)])
        out = []
        for name_tree, item in zip(names, items):
            if not (isinstance(name_tree, Tree) and name_tree.data == "name"):
                raise fail(CN.ASSIGN_NOT_VARIABLE, "only names can be unpacked into",
                           self.spans.of(name_tree), "not a name")
            name = str(name_tree.children[0])
            out += self.assign_name(name, self.spans.of(name_tree), item, span)
        return out

    # ------------------------------------------------------------------ x: T = value
    def _s_ann_assign(self, tree):
        name_tok, ann, value_tree = tree.children
        span = self.spans.of(tree)
        if self.eager is not None and value_tree is None:
            return self.eager.annotate(self, str(name_tok), self.spans.of(name_tok), ann,
                                       span)
        if value_tree is None:
            raise fail(CS.UNSUPPORTED_SYNTAX, f"annotation of `{name_tok}` without a value",
                       self.spans.of(tree), "nothing assigned",
                       help="in a kernel, annotate an assignment: `x: T.float32 = 0.0`")
        from .intrinsics import dtype_of
        dtype = dtype_of(self.eval(ann))
        value = self.eval(value_tree)
        e = as_expr(value, "a scalar value to bind", dtype if isinstance(value, Lit) else None)
        if e.dtype != dtype:
            e = Cast(e, dtype, span=e.span)
        return self.assign_name(str(name_tok), self.spans.of(name_tok), e, span)

    # ------------------------------------------------------------------ assert
    def _s_assert_stmt(self, tree):
        cond_tree, msg_tree = tree.children
        known = truth(self.eval(cond_tree))
        if known is None:
            if self.eager is not None and self.eager.signature_only:
                return []                   # checked once the sizes are known
            raise fail(CT.NOT_CONSTANT, "`assert` needs a condition known at compile time",
                       self.spans.of(cond_tree), "known only at run time",
                       help="check run-time values with an `if` around the work instead")
        if not known:
            msg = self._assert_message(msg_tree)
            raise fail(ASSERTION, f"assertion failed{': ' + msg if msg else ''}",
                       self.spans.of(cond_tree), "false for these parameters")
        return []

    def _assert_message(self, tree) -> str:
        if tree is None:
            return ""
        try:
            value = self.eval(tree)
        except Exception:               # an f-string or a message we cannot evaluate
            return ""
        return value.value if isinstance(value, Str) else ""

    # ------------------------------------------------------------------ if <constant>:
    def static_if(self, branches, else_tree):
        """`if` / `elif` whose leading conditions are compile-time: the statements of the
        branch taken (in the enclosing scope, as in Python), or None when a condition is
        known only at run time (then `remaining` is built as an ordinary `if`)."""
        for i, (cond_tree, body_tree, _span) in enumerate(branches):
            known = True if self.first_thread_guard(cond_tree) else \
                truth(self.eval(cond_tree), python_only=True)
            if known is None:
                return None if i == 0 else ("rest", branches[i:])
            if known:
                return ("taken", self.stmts(_suite_stmts(body_tree)))
        if else_tree is None:
            return ("taken", [])
        return ("taken", self.stmts(_suite_stmts(else_tree.children[0])))

    def first_thread_guard(self, cond_tree) -> bool:
        """`if T.get_thread_binding() == 0:` outside T.Parallel: TileLang's "one thread
        does it" guard. A statement outside T.Parallel runs once per block here, so the
        guarded statements are those of the block (any other use of the thread index is
        thread-level code, TL0380)."""
        if getattr(self, "parallel_depth", 0) or not (
                isinstance(cond_tree, Tree) and cond_tree.data == "flat"
                and len(cond_tree.children) == 3 and str(cond_tree.children[1]) == "=="):
            return False
        a, b = cond_tree.children[0], cond_tree.children[2]
        return _zero(b) and self._thread_index_call(a) or _zero(a) and self._thread_index_call(b)

    def _thread_index_call(self, tree) -> bool:
        if not (isinstance(tree, Tree) and tree.data == "call"):
            return False
        callee = self.eval(tree.children[0])
        if not (isinstance(callee, TRef) and callee.name == "get_thread_binding"):
            return False
        args = tree.children[1]
        return args is None or (len(args.children) == 1 and _zero(args.children[0]))

    # ------------------------------------------------------------------ x += 1 (constant)
    def aug_const(self, name, value, op, value_tree, span, op_span):
        """`x += ...` on a compile-time constant rebinds it, as Python does."""
        new = self.binop(op, value, self.eval(value_tree), span, op_span)
        return self.assign_name(name, span, new, span)

    # ------------------------------------------------------------------ loops
    def _s_while_stmt(self, tree):
        """`while cond:` in a kernel: the condition is evaluated before each iteration
        (stream-K's `while start < last:`); a compile-time false one builds nothing."""
        cond_tree, body_tree = tree.children[0], tree.children[1]
        span = self.spans.of(tree)
        if not self.in_kernel:
            raise fail(CS.UNSUPPORTED_SYNTAX, "a `while` loop outside `T.Kernel`", span,
                       "while loop", help="loops of the prologue run at compile time: "
                       "compute the value in the factory, in Python")
        before = len(getattr(self, "pending", []))
        cond = self.eval_cond(cond_tree)
        if len(getattr(self, "pending", [])) != before:
            raise fail(CS.UNSUPPORTED_SYNTAX, "a macro call in a `while` condition",
                       self.spans.of(cond_tree), "evaluated once per iteration",
                       help="compute the condition in a T.alloc_var updated in the body")
        if isinstance(cond, Const) and not cond.value:
            return []
        if isinstance(cond, Const):
            raise fail(CS.UNSUPPORTED_SYNTAX, "`while True:` needs `break`, which the tile "
                       "language does not have", span, "never ends",
                       help="write the exit test as the loop's condition")
        self.nesting += 1
        try:
            body = self.block(body_tree)
        finally:
            self.nesting -= 1
        return [While(cond, body, span=span)]

    def _s_break_stmt(self, tree, word="break"):
        raise fail(CS.UNSUPPORTED_SYNTAX, f"`{word}` is not supported", self.spans.of(tree),
                   word, help="guard the rest of the loop body with an `if` instead, or "
                              "end a `while` loop through its condition")

    def _s_continue_stmt(self, tree):
        self._s_break_stmt(tree, "continue")


def _suite_stmts(suite) -> list:
    return [c for c in suite.children if isinstance(c, Tree)]


__all__ = ["StmtExtMixin"]


def _count(shape):
    """The number of elements of a constant shape (None if a dimension is symbolic)."""
    n = 1
    for d in shape:
        if not isinstance(d, Const):
            return None
        n *= int(d.value)
    return n


@dataclass(frozen=True)
class UnboundScalar:
    """A scalar declared by `x = T.int32()`, not given its value yet (`T.let(x, v)`)."""
    WHAT = "a scalar declared without a value (give it one with T.let)"
    name: str
    dtype: str
    span: object


def _zero(tree) -> bool:
    return isinstance(tree, Tree) and tree.data == "number" and str(tree.children[0]) == "0"
