"""Statements of kernel bodies: blocks, assignments, stores, if/elif/else, the
T.Kernel `with`, expression statements (tile ops, macro calls)."""
from __future__ import annotations

from dataclasses import replace

from lark import Tree

from ..diagnostics import codes_names as CN, codes_syntax as CS, codes_tileops as C3
from ..diagnostics import codes_types as CT
from ..ir.canon import make_body
from ..ir.nodes import Stmt, Seq, Let, Store, If, Var, Buffer, Load, Expr, Const
from ..language.names import TILE_OPS, ALLOCS, HINTS
from .callargs import Sig, bind
from .errors import fail
from .scope import Scope
from .starargs import DictVal, spread_call
from .values import (Lit, DType, Str, Tup, NoneVal, BufRef, TRef, Macro, Opaque, PyFunc,
                     as_expr, describe, span_of)

_AUG = {"+=": "+", "-=": "-", "*=": "*", "/=": "/", "//=": "//", "%=": "%", "&=": "&",
        "|=": "|", "^=": "^", "<<=": "<<", ">>=": ">>"}
# values bound by `name = value` at compile time (Python values in TileLang's parser)
_COMPILE_TIME = (Lit, DType, Str, Tup, NoneVal, DictVal, TRef)     # TRef: `scan = T.cumsum`
MAX_MACRO_DEPTH = 32


class StmtMixin:
    def block(self, suite) -> Stmt:
        """The statements of an indented suite, in a new scope."""
        with self.scope.block():
            return make_body(self.stmts(suite.children), self.spans.of(suite))

    def stmts(self, trees) -> list:
        out = []
        for t in trees:
            if t is None:
                continue
            out.extend(self.stmt(t))
        return out

    def stmt(self, tree) -> list:
        method = getattr(self, f"_s_{tree.data}", None)
        if method is None:
            raise fail(CS.UNSUPPORTED_SYNTAX, "this statement is not supported in a kernel",
                       self.spans.of(tree), "unsupported")
        # statements of macros used as values in this statement come first
        saved, self.pending = getattr(self, "pending", []), []
        try:
            out = method(tree)
            return self.pending + out
        finally:
            self.pending = saved

    def eval_cond(self, tree) -> Expr:
        v = self.eval(tree)
        if isinstance(v, Lit) and v.kind == "bool":
            return Const(v.value, "bool", span=v.span)
        e = as_expr(v, "a condition")
        if e.dtype != "bool":
            raise fail(CT.NOT_BOOL, f"condition must be bool, found {e.dtype}", e.span,
                       e.dtype, help="compare explicitly, e.g. `x != 0`")
        return e

    # ------------------------------------------------------------------ simple statements
    def _s_pass_stmt(self, tree):
        return []

    def _s_return_stmt(self, tree):
        raise fail(C3.RETURN_IN_KERNEL, "`return` in a kernel", self.spans.of(tree),
                   "kernels do not return values",
                   help="write results into a tensor parameter (out_idx returns it in Python)")

    def _s_import_stmt(self, tree):
        raise fail(CN.BAD_MODULE_USE, "imports belong at module level", self.spans.of(tree),
                   "import inside a function")

    _s_import_from = _s_import_stmt

    def _s_funcdef(self, tree):
        raise fail(C3.BAD_FUNCTION, "nested function definitions are not supported",
                   self.spans.of(tree), "nested def", help="define macros at module level")

    _s_decorated = _s_funcdef

    def _s_expr_stmt(self, tree):
        expr = tree.children[0]
        if isinstance(expr, Tree) and expr.data == "string":
            return []                                   # docstring
        if isinstance(expr, Tree) and expr.data == "call":
            expr = spread_call(self, expr)                  # f(*args, **kwargs)
            callee = self.eval(expr.children[0])
            span = self.spans.of(expr)
            if isinstance(callee, TRef) and callee.name in TILE_OPS:
                return self.tile_op(callee.name, expr, span)
            if isinstance(callee, Macro):
                return self.inline_macro(callee, expr, span)
            if isinstance(callee, PyFunc):          # a helper writing kernel statements
                from .intrinsics import python_call
                if python_call(self, callee, expr, span) is not None:
                    return []                       # Python ran it on constants
                return self.inline_macro(callee.loader(callee.func), expr, span)
            if isinstance(callee, TRef) and callee.name == "use_swizzle":
                return self.use_swizzle(expr)                      # stmts_ext.py
            if isinstance(callee, TRef) and callee.name in HINTS:
                return []                   # GPU scheduling hint: nothing to do here
            if isinstance(callee, TRef) and callee.name in ALLOCS:
                raise fail(CS.UNSUPPORTED_SYNTAX, f"the result of `T.{callee.name}` must be "
                           "assigned to a name", span, "allocation is discarded")
            self.eval(expr)
        raise fail(CS.UNSUPPORTED_SYNTAX, "this expression has no effect",
                   self.spans.of(tree), "value is discarded",
                   help="assign it to a name or store it into a buffer")

    # ------------------------------------------------------------------ assignments
    def _s_assign(self, tree):
        if len(tree.children) > 2:
            return self.assign_chain(tree)                       # stmts_ext.py
        target, value_tree = tree.children
        span = self.spans.of(tree)
        declared = self.declare(target, value_tree, span)        # stmts_ext.py
        if declared is not None:
            return declared
        if isinstance(target, Tree) and target.data == "getitem":
            lanes = self.lanes_fetch_assign(target, value_tree, span)   # atomics.py
            if lanes is not None:
                return lanes
            return [self._store(target, lambda cur: self.eval(value_tree), span)]
        if isinstance(target, Tree) and target.data == "tuple":
            return self.assign_tuple(target, self.eval(value_tree), span)
        if not (isinstance(target, Tree) and target.data == "name"):
            raise fail(CN.ASSIGN_NOT_VARIABLE, f"cannot assign to "
                       f"{_target_words(target)}", self.spans.of(target), "not assignable")
        name = str(target.children[0])
        tspan = self.spans.of(target)
        fetched = self.fetch_assign(name, tspan, value_tree, span)   # old = T.atom_add(..)
        if fetched is not None:
            return fetched
        alloc = self._alloc_call(value_tree)
        if alloc is not None:
            self._check_new_buffer(name, tspan)
            node = self.alloc(alloc, self.fresh(name), value_tree, tspan)
            node = replace(node, span=span)
            self.scope.bind(name, node.buffer, "alloc")
            return [node]
        existing, local = self.scope.lookup(name)
        if isinstance(existing, Buffer) and existing.scope == "var" and local is not None:
            return [self._store_var(existing, self.eval(value_tree), span)]
        return self.assign_name(name, tspan, self.eval(value_tree), span)

    def assign_name(self, name, tspan, value, span) -> list:
        """`name = value`: a compile-time value (number, dtype, tuple...) is bound as a
        constant, as Python binds it; anything else becomes a let."""
        existing, local = self.scope.lookup(name)
        if isinstance(existing, Buffer) and existing.scope == "var" and local is not None:
            return [self._store_var(existing, value, span)]
        if isinstance(value, _COMPILE_TIME) and local is not None and local.kind == "const":
            self.scope.bind(name, value, "const")           # Python rebinding
            return []
        self._check_fresh_local(name, tspan)
        if isinstance(value, _COMPILE_TIME) or self.is_size_alias(value):
            self.scope.bind(name, value, "const")
            return []
        e = as_expr(value, "a scalar value to bind")
        var = Var(self.fresh(name), e.dtype, span=tspan)
        self.scope.bind(name, var, "let")
        if not self.in_kernel and self._size_expr(e):
            self.prologue_lets.add(var.name)     # may size a workspace
        return [Let(var, e, span=span)]

    def _alloc_call(self, tree):
        if isinstance(tree, Tree) and tree.data == "call":
            callee = self.eval(tree.children[0])
            if isinstance(callee, TRef) and callee.name in ALLOCS:
                return callee.name
        return None

    def _check_new_buffer(self, name, span):
        local = self.scope.local(name)
        if local is not None and local.kind in ("alloc", "let", "const"):
            raise fail(CN.DUPLICATE_DEFINITION, f"`{name}` is already defined", span,
                       "defined again", secondary=[(span_of(local.value), "first defined here")],
                       help="give the new buffer its own name")
        self._check_fresh_local(name, span)

    def _check_fresh_local(self, name, span):
        existing, local = self.scope.lookup(name)
        if local is not None and local.kind == "let" and getattr(self, "python_names", False) \
                and self.scope.frames[-1].get(name) is local:
            return      # a Python helper's `e = ...; e = e + 1`: a new let shadows the old
        if local is not None and local.kind == "let":
            raise fail(CN.LET_REBOUND, f"`{name}` is already bound and cannot be reassigned",
                       span, "assigned again", secondary=[(span_of(local.value), "bound here")],
                       help=f'to update a scalar, declare it with `{name} = T.alloc_var('
                            f'"float32", init=...)`')
        if local is not None and isinstance(local.value, Buffer):
            raise fail(CN.ASSIGN_NOT_VARIABLE, f"cannot assign to buffer `{name}`", span,
                       "a buffer, not a variable",
                       secondary=[(span_of(local.value), "declared here")],
                       help=f"store elements with `{name}[i, j] = ...`, or use T.fill / T.copy")
        if local is not None:
            self.check_new_name(name, span, "assignment to")
        # a module-level constant (which `-D` overrides) or symbolic size stays fixed;
        # any other host name (`x = np.zeros(...)` in the script) is shadowed, as Python
        # makes an assigned name local to the function
        if existing is not None and local is None and isinstance(existing, (Lit, Var)):
            raise fail(CN.ASSIGN_NOT_VARIABLE, f"cannot assign to `{name}`, which is "
                       f"{describe(existing) if not isinstance(existing, Var) else 'a symbolic size'}"
                       " defined at module level", span, "module-level name",
                       help="choose another name for the local value")

    def _store_var(self, buf: Buffer, value, span):
        if not self.in_kernel:
            raise fail(C3.TILEOP_OUTSIDE_KERNEL, "store outside `T.Kernel`", span, "store")
        return Store(buf, (), self.value_for(buf, value), span=span)

    def _store(self, target, make_value, span):
        base = self.eval(target.children[0])
        if not isinstance(base, BufRef):
            raise fail(CN.ASSIGN_NOT_VARIABLE, f"cannot store into {describe(base)}",
                       span_of(base), "not a buffer", help="only buffer elements can be stored")
        if not self.in_kernel:
            raise fail(C3.TILEOP_OUTSIDE_KERNEL, "store outside `T.Kernel`", span,
                       "store outside the kernel")
        buf = base.buffer
        idx = self.indices(buf, target.children[1].children, self.spans.of(target))
        current = Load(buf, idx, buf.dtype, span=self.spans.of(target))
        return Store(buf, idx, self.value_for(buf, make_value(current)), span=span)

    def _s_aug_assign(self, tree):
        target, op_tok, value_tree = tree.children
        op = _AUG[str(op_tok)]
        span = self.spans.of(tree)
        op_span = self.spans.of(op_tok)

        def combine(current):
            return self.binop(op, current, self.eval(value_tree), span, op_span)

        if isinstance(target, Tree) and target.data == "getitem":
            return [self._store(target, combine, span)]
        if isinstance(target, Tree) and target.data == "name":
            name = str(target.children[0])
            existing, local = self.scope.lookup(name)
            if local is not None and local.kind == "const":
                return self.aug_const(name, existing, op, value_tree, span, op_span)
            if isinstance(existing, Buffer) and existing.scope == "var":
                cur = Load(existing, (), existing.dtype, span=self.spans.of(target))
                return [self._store_var(existing, combine(cur), span)]
            if local is not None and local.kind == "let":
                raise fail(CN.LET_REBOUND, f"`{name}` is a let-binding and cannot be updated",
                           self.spans.of(target), "updated here",
                           secondary=[(span_of(local.value), "bound here")],
                           help=f'declare it with `{name} = T.alloc_var("float32", init=...)`')
            if existing is None:
                self.resolve(name, self.spans.of(target))
        raise fail(CN.ASSIGN_NOT_VARIABLE, f"cannot update {_target_words(target)}",
                   self.spans.of(target), "not a variable")

    # ------------------------------------------------------------------ control flow
    def _s_if_stmt(self, tree):
        kids = tree.children
        cond_tree, body_tree, elifs, else_tree = kids[0], kids[1], kids[2:-1], kids[-1]
        branches = [(cond_tree, body_tree, self.spans.of(tree))]
        branches += [(e.children[0], e.children[1], self.spans.of(e)) for e in elifs]
        static = self.static_if(branches, else_tree)             # stmts_ext.py
        if static is not None and static[0] == "taken":
            return static[1]
        if static is not None:
            branches = static[1]
        self.nesting += 1
        try:
            built = [(self.eval_cond(c), self.block(b), s) for c, b, s in branches]
            else_body = self.block(else_tree.children[0]) if else_tree is not None else None
        finally:
            self.nesting -= 1
        for cond, body, span in reversed(built):
            else_body = If(cond, body, else_body, span=span)
        return [else_body]

    def _s_with_stmt(self, tree):
        ctx, targets, body_tree = tree.children
        callee = self.eval(ctx.children[0]) if isinstance(ctx, Tree) and ctx.data == "call" \
            else None
        if not (isinstance(callee, TRef) and callee.name == "Kernel"):
            raise fail(C3.BAD_WITH, "the only `with` statement is `with T.Kernel(...)`",
                       self.spans.of(ctx), "not T.Kernel")
        return [self.kernel(ctx, targets, body_tree, self.spans.of(tree))]

    # ------------------------------------------------------------------ macros
    def default_value(self, obj, macro, span):
        """A macro parameter's Python default as a kernel value."""
        from .pyvalues import python_value
        value = python_value(obj, macro.loader) if macro.loader else None
        if value is None or isinstance(value, Opaque):
            raise fail(CN.BAD_MACRO_USE, f"the default of a parameter of `{macro.name}` "
                       f"({obj!r}) is not a value a kernel can use", span, "default used")
        return value

    def inline_macro(self, macro: Macro, call, span, want_value: bool = False):
        """The macro's statements (a trailing `return` dropped); with `want_value`,
        (statements, the returned value) — a macro used in an expression."""
        if macro.name in self.macro_stack or len(self.macro_stack) >= MAX_MACRO_DEPTH:
            raise fail(CN.BAD_MACRO_USE, f"macro `{macro.name}` calls itself", span,
                       "recursive call", help="macros are inlined and cannot recurse")
        params = [str(p.children[0]) for p in _params(macro.tree)]
        sig = Sig(macro.name, tuple((p, _Default(macro.defaults[p]) if p in macro.defaults
                                     else _REQ) for p in params))
        args = bind(sig, call, self.spans)
        values = {p: self.default_value(args[p].value, macro, span)
                  if isinstance(args[p], _Default) else self.eval(args[p]) for p in params}
        saved = self.scope, self.spans, getattr(self, "python_names", False)
        self.scope, self.spans = Scope(macro.globals), macro.spans
        self.python_names = macro.python
        self.macro_stack.append(macro.name)
        try:
            for p in params:
                v = values[p]
                self.scope.bind(p, v.buffer if isinstance(v, BufRef) else v, "macro_arg")
            body = [t for t in macro.tree.children[-1].children if t is not None]
            ret = body.pop() if body and getattr(body[-1], "data", "") == "return_stmt" \
                else None
            out = self.stmts(body)
            if not want_value:
                return out
            if ret is None or ret.children[0] is None:
                raise fail(CN.BAD_MACRO_USE, f"macro `{macro.name}` returns no value", span,
                           "used as a value", help="end the macro with `return <value>`")
            return out, self.eval(ret.children[0])
        finally:
            self.macro_stack.pop()
            self.scope, self.spans, self.python_names = saved


class _Default:
    """A macro parameter's default (a Python value), as `bind` hands it back."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return repr(self.value)


def _params(funcdef):
    params = funcdef.children[1]
    return [] if params is None else params.children


from .callargs import REQUIRED as _REQ  # noqa: E402


def _target_words(target) -> str:
    kind = getattr(target, "data", "")
    return {"call": "a function call", "tuple": "a tuple (tuple assignment is not supported)",
            "getattr": "an attribute", "number": "a literal"}.get(kind, "this expression")
