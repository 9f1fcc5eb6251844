"""A .tl module: imports, constants (with -D overrides), T.dynamic sizes, macros and
prim_funcs."""
from __future__ import annotations

from lark import Tree

from .. import dtypes
from ..diagnostics import codes_names as CN, codes_tileops as C3
from ..diagnostics import codes_types as CT
from ..ir.nodes import Module, Span, Var
from .callargs import Sig, REQUIRED, bind
from .errors import fail, did_you_mean
from .exprs import ExprMixin
from .function import FunctionBuilder
from .intrinsics import call_value, dtype_of
from .scope import Scope, Globals
from .values import Lit, DType, Str, TRef, TModule, OpaqueModule, Macro, describe, span_of


class ModuleEvaluator(ExprMixin):
    """Evaluates module-level expressions: constants, `T.dynamic(...)`, decorators."""

    def __init__(self, globals_, spans):
        self.scope = Scope(globals_)
        self.spans = spans

    def check_symbol(self, var, span):
        pass

    def _e_call(self, tree):
        callee = self.eval(tree.children[0])
        if isinstance(callee, TRef) and callee.name in ("dynamic", "symbolic"):
            args = bind(Sig(f"T.{callee.name}", (("name", REQUIRED), ("dtype", "int32"))),
                        tree, self.spans)
            name = self.eval(args["name"])
            if not isinstance(name, Str) or not name.value.isidentifier():
                raise fail(CT.NOT_CONSTANT, f"T.{callee.name} takes the size's name as a "
                           "string", span_of(name), "not a name string")
            if args["dtype"] != "int32" and dtype_of(self.eval(args["dtype"])) != "int32":
                raise fail(CT.BAD_DTYPE, "symbolic sizes are int32", self.spans.of(tree),
                           "only int32 is supported")
            return Var(name.value, "int32", span=self.spans.of(tree))
        return call_value(self, callee, tree)


def parse_define(name: str, value):
    """A -D value: int, float, bool or dtype string (text from the CLI, or a Python value)."""
    if isinstance(value, bool):
        return Lit(value)
    if isinstance(value, (int, float)):
        return Lit(value)
    text = str(value).strip()
    if text in ("True", "False", "true", "false"):
        return Lit(text.lower() == "true")
    for conv in (lambda t: int(t, 0), float):
        try:
            return Lit(conv(text))
        except ValueError:
            pass
    canon = dtypes.canonical(text.strip("\"'"))
    if canon is not None:
        return Str(canon)
    raise fail(CT.BAD_DTYPE, f"-D {name}={text}: not an int, float, bool or dtype", None,
               help=did_you_mean(text, dtypes.DTYPES, '"{}"'))


class ModuleBuilder:
    def __init__(self, spans, defines=None):
        self.spans = spans
        self.globals = Globals()
        self.defines = dict(defines or {})
        self.seen_defines: set[str] = set()
        self.eval = ModuleEvaluator(self.globals, spans)
        self.funcs: list = []
        self.defined: dict[str, Span] = {}

    def build(self, tree, text: str) -> Module:
        for stmt in tree.children:
            if isinstance(stmt, Tree):
                self.statement(stmt)
        unknown = [n for n in self.defines if n not in self.seen_defines]
        if unknown:
            consts = [n for n, v in self.globals.names.items() if isinstance(v, (Lit, Str, DType))]
            raise fail(CN.UNKNOWN_DEFINE, f"-D {unknown[0]}: the module has no constant "
                       f"`{unknown[0]}`", None, help=did_you_mean(unknown[0], consts) or
                       (f"constants: {', '.join(consts)}" if consts else "the module defines no constants"))
        funcs = [FunctionBuilder(self.globals, self.spans).build(f) for f in self.funcs]
        nlines = max(text.count("\n"), 1)
        return Module(tuple(funcs), span=Span(self.spans.file, 1, 1, nlines, 1))

    def define(self, name: str, span: Span, value) -> None:
        if name in self.defined:
            raise fail(CN.DUPLICATE_DEFINITION, f"`{name}` is defined twice", span,
                       "defined again", secondary=[(self.defined[name], "first defined here")])
        self.defined[name] = span
        self.globals.names[name] = value

    def statement(self, stmt) -> None:
        method = getattr(self, f"_m_{stmt.data}", None)
        if method is None:
            raise fail(CN.BAD_MODULE_USE, "only imports, constants, T.dynamic sizes and "
                       "function definitions are allowed at module level",
                       self.spans.of(stmt), "not allowed here")
        method(stmt)

    def _m_pass_stmt(self, stmt):
        pass

    def _m_expr_stmt(self, stmt):
        if getattr(stmt.children[0], "data", "") != "string":   # a docstring is fine
            self.statement(Tree("unsupported", [], stmt.meta))

    def _m_import_stmt(self, stmt):
        dotted, alias = stmt.children
        parts = [str(t) for t in dotted.children]
        full = ".".join(parts)
        if alias is not None:
            value = TModule() if full == "tilelang.language" else OpaqueModule(full)
            self.globals.names[str(alias)] = value
        else:
            self.globals.names[parts[0]] = OpaqueModule(parts[0])

    def _m_import_from(self, stmt):
        dotted, *items = stmt.children
        module = ".".join(str(t) for t in dotted.children)
        for item in items:
            name, alias = item.children
            full = f"{module}.{name}"
            value = TModule() if full == "tilelang.language" else OpaqueModule(full)
            self.globals.names[str(alias or name)] = value

    def _m_assign(self, stmt):
        target, value_tree = stmt.children
        if not (isinstance(target, Tree) and target.data == "name"):
            raise fail(CN.BAD_MODULE_USE, "module-level assignments bind a single name",
                       self.spans.of(target), "not a name")
        name, span = str(target.children[0]), self.spans.of(target)
        if name in self.defines:
            self.seen_defines.add(name)
            value = parse_define(name, self.defines[name])
            self.eval.eval(value_tree)          # still check the original text
        else:
            value = self.eval.eval(value_tree)
        if isinstance(value, Lit):
            value = Lit(value.value, span)
        if not isinstance(value, (Lit, DType, Str, Var, TModule)):
            raise fail(CN.BAD_MODULE_USE, f"a module-level constant must be a number, bool, "
                       f"dtype or T.dynamic size, found {describe(value)}",
                       self.spans.of(value_tree), "not a constant")
        self.define(name, span, value)

    def _m_decorated(self, stmt):
        *decorators, funcdef = stmt.children
        kinds = []
        for dec in decorators:
            value = self.eval.eval(dec.children[0])
            if not (isinstance(value, TRef) and value.name in ("prim_func", "macro")):
                raise fail(C3.BAD_FUNCTION, "functions in a .tl file are decorated with "
                           "@T.prim_func or @T.macro", self.spans.of(dec), "unknown decorator")
            kinds.append(value.name)
        name_tok = funcdef.children[0]
        span = self.spans.of(name_tok)
        if "macro" in kinds:
            self._check_macro(funcdef)
            self.define(str(name_tok), span, Macro(str(name_tok), funcdef, self.globals,
                                                   self.spans, span))
        else:
            self.define(str(name_tok), span, TRef("prim_func", span))
            self.funcs.append(funcdef)

    def _check_macro(self, funcdef):
        params = funcdef.children[1]
        for p in ([] if params is None else params.children):
            if p.children[2] is not None:
                raise fail(C3.BAD_FUNCTION, "macro parameters cannot have defaults",
                           self.spans.of(p.children[2]), "default value")

    def _m_funcdef(self, stmt):
        raise fail(C3.BAD_FUNCTION, f"function `{stmt.children[0]}` needs @T.prim_func or "
                   "@T.macro", self.spans.of(stmt.children[0]), "undecorated function")
