"""One `@T.prim_func`: parameters, the prologue (lets, global workspaces) and its
grids: one or more `with T.Kernel(...)` blocks, run one after another (a split pass,
then a combine), written directly or inside `@T.macro`s called at the top level."""
from __future__ import annotations

from lark import Tree

from ..diagnostics import codes_names as CN, codes_tileops as C3, codes_types as CT
from ..ir.nodes import Const, Var, Buffer, Let, Alloc, Kernel, PrimFunc, Seq, Expr
from .callargs import Sig, REQUIRED, bind
from .errors import fail
from .exprs import ExprMixin
from .intrinsics import dtype_of
from .loops import LoopMixin
from .rankops import RankOpMixin
from .scope import Scope
from .stmts import StmtMixin
from .stmts_ext import StmtExtMixin
from .tileops_ext import TileOpExtMixin
from .tileops import TileOpMixin
from .atomics import AtomicExtMixin
from .reducers import ReducerMixin
from .values import Lit, DType, Str, Tup, TRef, describe, span_of, const_int, const_value

_BLOCK_NAMES = ("bx", "by", "bz")


class FunctionBuilder(ExprMixin, StmtMixin, StmtExtMixin, LoopMixin, TileOpMixin,
                      TileOpExtMixin, RankOpMixin, AtomicExtMixin, ReducerMixin):
    def __init__(self, globals_, spans):
        self.scope = Scope(globals_)
        self.spans = spans
        self.used: set[str] = set()
        self.symbols: list[Var] = []
        self.symbol_names: set[str] = set()
        self.collecting_params = False
        self.in_kernel = False
        self.kernel_node = None                # the first grid, once built
        self.nesting = 0
        self.macro_stack: list[str] = []
        self.overrides: set[str] = set()      # names given by `constants` (parse_function)
        self.prologue_lets: set[str] = set()  # lets before the grids that are sizes

    # ------------------------------------------------------------------ names
    def fresh(self, name: str) -> str:
        """A name not yet used in this function (sibling loops may reuse `i`)."""
        candidate, k = name, 0
        while candidate in self.used:
            k += 1
            candidate = f"{name}_{k}"
        self.used.add(candidate)
        return candidate

    def check_symbol(self, var: Var, span) -> None:
        if self.collecting_params:
            if var.name not in self.symbol_names:
                self.symbols.append(Var(var.name, var.dtype, span=span))
                self.symbol_names.add(var.name)
                self.used.add(var.name)          # no loop variable may take its name
            return
        if var.name not in self.symbol_names:
            raise fail(CN.UNBOUND_SYMBOL, f"symbolic size `{var.name}` is not in the shape of "
                       "any tensor parameter", span, "cannot be bound at launch",
                       help=f"use `{var.name}` in a parameter's T.Tensor shape")

    # ------------------------------------------------------------------ the function
    def build(self, funcdef, annotations=None) -> PrimFunc:
        name_tok, params_tree, _ret, body = funcdef.children
        params = self.params(params_tree, annotations or {})
        for p in params:
            self.scope.bind(p.name, p, "param")
        stmts = self.prologue_and_kernel(body, name_tok)
        return PrimFunc(str(name_tok), tuple(params), tuple(self.symbols),
                        Seq(tuple(stmts), span=self.spans.of(body)), span=self.spans.of(funcdef))

    def params(self, params_tree, annotations) -> list:
        trees = [] if params_tree is None else params_tree.children
        out, seen = [], {}
        self.collecting_params = True
        try:
            for p in trees:
                out.append(self._param(p, annotations))
                name = str(p.children[0])
                if name in seen:
                    raise fail(CN.DUPLICATE_DEFINITION, f"duplicate parameter `{name}`",
                               self.spans.of(p.children[0]), "defined again",
                               secondary=[(seen[name], "first defined here")])
                seen[name] = self.spans.of(p.children[0])
        finally:
            self.collecting_params = False
        self.used.update(seen)
        self.used.update(self.symbol_names)
        return out

    def _param(self, p, annotations):
        name_tok, ann_tree, default = p.children
        name, span = str(name_tok), self.spans.of(name_tok)
        if default is not None:
            raise fail(C3.BAD_FUNCTION, f"kernel parameter `{name}` cannot have a default",
                       self.spans.of(default), "default value")
        if name in annotations and ann_tree is not None and not self._overridden(ann_tree):
            return self._param_from_python(name, annotations[name], span, ann_tree)
        if ann_tree is None:
            raise fail(CT.BAD_PARAM_TYPE, f"parameter `{name}` has no type annotation", span,
                       "annotation missing",
                       help=f'write `{name}: T.Tensor((M, N), "float32")` or `{name}: T.int32`')
        return self._param_from_tree(name, ann_tree, span)

    def _overridden(self, ann_tree) -> bool:
        """An annotation that mentions an overridden constant is evaluated from the
        source (Python evaluated it with the original value)."""
        if not self.overrides or not isinstance(ann_tree, Tree):
            return False
        return any(str(tok) in self.overrides for tok in ann_tree.scan_values(
            lambda t: getattr(t, "type", None) == "NAME"))

    def _param_from_tree(self, name, ann, span):
        if isinstance(ann, Tree) and ann.data == "call":
            callee = self.eval(ann.children[0])
            if isinstance(callee, TRef) and callee.name in ("Tensor", "Buffer"):
                args = bind(Sig(f"T.{callee.name}", (("shape", REQUIRED),
                                                     ("dtype", "float32"))), ann, self.spans)
                dtype = "float32" if args["dtype"] == "float32" else \
                    dtype_of(self.eval(args["dtype"]))
                shape = self._tensor_shape(self.eval(args["shape"]))
                return Buffer(name, shape, dtype, "global", span=span)
        value = self.eval(ann)
        if isinstance(value, (DType, Str)):
            return Var(name, dtype_of(value), span=span)
        raise fail(CT.BAD_PARAM_TYPE, f"parameter `{name}` is annotated with "
                   f"{describe(value)}", span_of(value) or span, "not a tensor or scalar type",
                   help='use T.Tensor(shape, dtype) for tensors or a dtype such as T.int32')

    def _tensor_shape(self, value) -> tuple:
        items = value.items if isinstance(value, Tup) else (value,)
        shape = []
        for item in items:
            if isinstance(item, Var) and item.name in self.symbol_names:
                shape.append(Var(item.name, item.dtype, span=item.span))
                continue
            if self._size_expression(item):          # `N * 2`, `T.ceildiv(K, 128)`
                shape.append(item)
                continue
            c = const_int(item)
            if c is None or c <= 0:
                raise fail(CT.BAD_SHAPE_ENTRY, "a tensor shape entry must be a positive "
                           f"integer or a T.dynamic size, found {describe(item)}",
                           span_of(item), "bad shape entry",
                           help='declare a size with `N = T.dynamic("N")` at module level')
            shape.append(Const(c, "int32", span=item.span))
        return tuple(shape)

    eager_shape = _tensor_shape

    def _size_expression(self, item) -> bool:
        """An integer expression of symbolic sizes (each registered as the kernel's)."""
        from ..ir.visitor import free_vars
        from .. import dtypes
        if not isinstance(item, Expr) or isinstance(item, Const) or \
                not dtypes.is_int(item.dtype):
            return False
        names = free_vars(item)
        if not names or not self.collecting_params:
            return False
        for var in names:
            self.check_symbol(var, item.span)
        return True

    def _param_from_python(self, name, obj, span, ann_tree):
        """Annotations already evaluated by Python (`@tilelang.kernel`)."""
        from .pyvalues import annotation_param
        return annotation_param(self, name, obj, span, ann_tree)

    # ------------------------------------------------------------------ body
    def prologue_and_kernel(self, body, name_tok) -> list:
        out = []
        for t in body.children:
            for s in self.stmt(t):
                if not isinstance(s, (Let, Alloc, Kernel)):
                    raise fail(C3.STMT_OUTSIDE_KERNEL, "this statement must be inside "
                               "`T.Kernel`", self.spans.of(t), "outside the kernel",
                               help="only lets and T.alloc_global may precede the kernel")
                if isinstance(s, Kernel) and self.kernel_node is None:
                    self.kernel_node = s
                out.append(s)
        if self.kernel_node is None:
            raise fail(C3.KERNEL_MISSING, f"kernel `{name_tok}` has no `with T.Kernel(...)`",
                       self.spans.of(name_tok), "no grid launched",
                       help="wrap the body in `with T.Kernel(grid_x, grid_y) as (bx, by):`")
        self._check_grid_order(out)
        return out

    def _check_grid_order(self, stmts) -> None:
        """Lets and workspaces come before the first grid; after it, only grids."""
        kernels = [i for i, s in enumerate(stmts) if isinstance(s, Kernel)]
        for i in range(kernels[0], len(stmts)):
            s = stmts[i]
            if isinstance(s, Kernel):
                continue
            if i < kernels[-1]:
                raise fail(C3.KERNEL_TWICE, "statement between two `T.Kernel` grids", s.span,
                           "between the grids",
                           secondary=[(self.kernel_node.span, "first grid")],
                           help="lets and T.alloc_global go before the first grid; the "
                                "grids follow one another")
            raise fail(C3.STMT_OUTSIDE_KERNEL, "statement after `T.Kernel`", s.span,
                       "outside the kernel",
                       help="a prim_func ends with its `with T.Kernel(...)` grids")

    def kernel(self, ctx, targets, body_tree, span) -> Kernel:
        """One grid. Several may follow each other at the top level of the prim_func
        (also from a macro called there); each finishes before the next starts."""
        if self.in_kernel or self.nesting > 0:
            raise fail(C3.KERNEL_NESTED, "`T.Kernel` inside another statement", span,
                       "nested kernel", help="T.Kernel must be a top-level statement of the "
                       "prim_func")
        args = bind(Sig("T.Kernel", (("threads", 128),), varargs="grid", min_varargs=0,
                        max_varargs=3, ignored=("is_cpu", "prelude")), ctx, self.spans)
        grid = tuple(self.eval_int(t, "an integer grid size") for t in args["grid"]) or \
            (Const(1, "int32", span=span),)         # `T.Kernel(threads=1)`: one block
        for g in grid:
            size = const_value(g)
            if size is not None and size < 1:
                raise fail(C3.OUT_OF_RANGE_ARG, f"grid size {size}: a constant grid size "
                           f"must be at least 1", g.span, "runs no block")
        threads = self.threads_arg(args["threads"])
        with self.scope.block():
            block_vars = self._block_vars(targets, len(grid), self.spans.of(ctx))
            self.block_vars = block_vars         # T.get_block_binding(dim) in macros
            self.in_kernel = True
            self.raster = 0                     # T.use_swizzle(panel) in the body sets it
            try:
                body = self.block(body_tree)
            finally:
                self.in_kernel = False
        return Kernel(grid, block_vars, threads, body, self.raster, span=span)

    def threads_arg(self, tree) -> int:
        """`threads=128`, or TileLang's `threads=(32, 4)` (their product: the CPU ignores
        it, tcsim sizes the block's registers by it)."""
        if tree is None or isinstance(tree, int):
            return tree
        value = self.eval(tree)
        if isinstance(value, Tup):
            total = 1
            for item in value.items:
                n = const_int(item)
                if n is None:
                    raise fail(CT.NOT_CONSTANT, "threads must be integer constants",
                               span_of(item), describe(item))
                if n < 1:
                    raise fail(C3.OUT_OF_RANGE_ARG, f"threads {n}: must be at least 1",
                               span_of(item), "no thread")
                total *= n
            return total
        return self.const_arg(tree, "threads", minimum=1)

    def _block_vars(self, targets, n, ctx_span):
        if targets is None:
            names = [(_BLOCK_NAMES[i], ctx_span) for i in range(n)]
        else:
            names = [(str(t), self.spans.of(t)) for t in targets.children]
            if len(names) != n:
                raise fail(C3.TARGET_COUNT, f"T.Kernel has {n} grid dimension"
                           f"{'s' if n != 1 else ''} but {len(names)} block "
                           f"ind{'ices are' if len(names) != 1 else 'ex is'} bound",
                           self.spans.of(targets), f"{len(names)} names",
                           help=f"bind one block index per grid dimension")
        out = []
        for name, span in names:
            self.check_new_name(name, span, "block index")
            var = Var(self.fresh(name), "int32", span=span)
            self.scope.bind(name, var, "block")
            out.append(var)
        return tuple(out)

