"""`parse_function`: the kernel of a decorated Python function.

The function's source is parsed with the .tl grammar (its body is never run); free
names resolve from `constants`, the closure and the globals; positions are those of
the user's .py file.
"""
from __future__ import annotations

import builtins
import inspect
import re
import textwrap

from ..diagnostics import TileLangError, SourceMap, Diagnostic
from ..diagnostics import codes_syntax as CS, codes_tileops as C3
from ..ir.nodes import Module
from .errors import Fail, Spans
from .function import FunctionBuilder
from .pyvalues import python_value
from .scope import Globals
from .values import Macro


def _source(func):
    """(dedented text, Spans mapping it back to the file)."""
    lines, start = inspect.getsourcelines(func)
    file = inspect.getsourcefile(func) or func.__code__.co_filename
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    first = next((l for l in lines if l.strip()), "")
    first_dedented = next((l for l in dedented.splitlines() if l.strip()), "")
    indent = len(first) - len(first.lstrip()) - (len(first_dedented) - len(first_dedented.lstrip()))
    return dedented, Spans(file, start - 1, indent), file


def _lambda_source(func):
    """A lambda as the text `def <lambda>(params):\n    return body` (Spans placing its
    body where the lambda's is): the lambda of the source lines holding it whose
    parameters are func's; its body ends at the first comma or closing bracket outside
    brackets of its own."""
    lines, start = inspect.getsourcelines(func)
    file = inspect.getsourcefile(func) or func.__code__.co_filename
    text = "".join(lines)
    names = func.__code__.co_varnames[:func.__code__.co_argcount]
    for m in re.finditer(r"\blambda\b", text):
        colon = text.find(":", m.end())
        params = [p.strip() for p in text[m.end():colon].split(",") if p.strip()]
        if tuple(p.split("=")[0].strip() for p in params) != names:
            continue
        body_at = colon + 1 + (len(text[colon + 1:]) - len(text[colon + 1:].lstrip(" ")))
        body = _until_top_level_end(text[body_at:])
        line = text.count("\n", 0, body_at)
        col = body_at - (text.rfind("\n", 0, body_at) + 1)
        src = f"def __lambda({', '.join(params)}):\n    return {body}\n"
        return src, Spans(file, start - 1 + line - 1, col - len("    return ")), file
    raise Fail(Diagnostic(C3.BAD_FUNCTION, "cannot find the source of a lambda called in "
                          "the kernel", notes=[f"defined at {file}:{start}"],
                          help="write it as a `def` function"))


def _until_top_level_end(text: str) -> str:
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}" and depth == 0 or ch in ",\n" and depth == 0:
            return text[:i].rstrip()
        elif ch in ")]}":
            depth -= 1
    return text.rstrip()


def _funcdef(tree):
    for item in tree.children:
        data = getattr(item, "data", None)
        if data == "decorated":
            return item.children[-1]
        if data == "funcdef":
            return item
    return None


class _PyGlobals:
    """Name lookup for one Python function: constants, closure, globals."""

    def __init__(self, func, constants, loader):
        self.func = func
        self.constants = dict(constants or {})
        closure = inspect.getclosurevars(func)
        self.nonlocals = dict(closure.nonlocals)
        self.loader = loader

    def __call__(self, name):
        if name in self.constants and isinstance(self.constants[name], str):
            # text from the command line (-D BLOCK=64): a number, bool or dtype
            from .module import parse_define
            return parse_define(name, self.constants[name])
        for space in (self.constants, self.nonlocals, self.func.__globals__):
            if name in space:
                return python_value(space[name], self.loader)
        if name in ("range", "max", "min", "abs") or not hasattr(builtins, name):
            return None
        return python_value(getattr(builtins, name), self.loader)

    def names(self):
        return list(self.constants) + list(self.nonlocals) + [
            n for n in self.func.__globals__ if not n.startswith("__")]


def _defaults(func) -> dict:
    """Parameter name -> default value of a Python function."""
    sig = inspect.signature(func)
    return {n: p.default for n, p in sig.parameters.items()
            if p.default is not inspect.Parameter.empty}


class _Loader:
    """Parses the functions the kernel refers to (macros) once each."""

    def __init__(self):
        self.cache = {}
        self.sources = SourceMap()

    def globals_for(self, func, constants=None) -> Globals:
        lookup = _PyGlobals(func, constants, self.macro)
        return Globals({}, lookup, lookup.names())

    def parse(self, func):
        from .parser import parse_tree
        text, spans, file = _lambda_source(func) if func.__name__ == "<lambda>" else \
            _source(func)
        tree = parse_tree(text, spans)
        funcdef = _funcdef(tree)
        if funcdef is None:
            raise Fail(Diagnostic(C3.BAD_FUNCTION, f"no function definition found in the "
                                  f"source of {func.__qualname__}"))
        return funcdef, spans

    def macro(self, func):
        key = id(func)
        if key not in self.cache:
            funcdef, spans = self.parse(func)
            self.cache[key] = Macro(func.__name__, funcdef, self.globals_for(func), spans,
                                    spans.of(funcdef.children[0]),
                                    defaults=_defaults(func), loader=self.macro,
                                    python=getattr(func, "__tilelang_kind__", None) is None)
        return self.cache[key]


def build_function(pyfunc, constants=None) -> Module:
    func = inspect.unwrap(getattr(pyfunc, "func", pyfunc))
    loader = _Loader()
    try:
        try:
            funcdef, spans = loader.parse(func)
        except (OSError, TypeError) as err:
            raise Fail(Diagnostic(C3.BAD_FUNCTION, f"cannot read the source of "
                                  f"{getattr(func, '__qualname__', func)!s}: {err}")) from None
        builder = FunctionBuilder(loader.globals_for(func, constants), spans)
        builder.overrides = set(constants or {})
        annotations = dict(getattr(func, "__annotations__", {}) or {})
        prim = builder.build(funcdef, annotations)
        return Module((prim,), span=prim.span)
    except Fail as err:
        raise TileLangError(err.diag, loader.sources) from None
    except RecursionError:
        raise TileLangError(Diagnostic(CS.UNSUPPORTED_SYNTAX, "expression nested too deeply"),
                            loader.sources) from None
