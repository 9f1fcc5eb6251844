"""The frontend: .tl source (or a decorated Python function) -> typed IR.

    parse_module(text, filename, defines=None, strict_dtypes=False) -> Module
    parse_function(pyfunc, constants=None, strict_dtypes=False) -> Module

Both raise `TileLangError` (never another exception) for a mistake in the source.
Operands of different dtypes follow TVM's promotion rules (promotion.py);
`strict_dtypes=True` makes each implicit conversion an error instead.
"""
from __future__ import annotations

from ..diagnostics import TileLangError, SourceMap
from ..ir.nodes import Module
from .errors import Fail, Spans


def parse_module(text: str, filename: str = "<string>", defines=None,
                 strict_dtypes: bool = False) -> Module:
    """Parse and type-check a .tl module; `defines` (name -> value or text) override its
    module-level constants, as `tilec compile -D NAME=VALUE` does."""
    from .parser import parse_tree
    from .module import ModuleBuilder
    from .promotion import strict_dtypes as strict
    spans = Spans(filename)
    text = text[1:] if text.startswith("\ufeff") else text      # a byte-order mark
    try:
        tree = parse_tree(text, spans)
        with strict(strict_dtypes):
            return ModuleBuilder(spans, defines).build(tree, text)
    except Fail as err:
        sources = SourceMap()
        sources.add(filename, text)
        raise TileLangError(err.diag, sources) from None
    except RecursionError:
        sources = SourceMap()
        sources.add(filename, text)
        from ..diagnostics import Diagnostic
        from ..diagnostics import codes_syntax as CS
        raise TileLangError(Diagnostic(CS.UNSUPPORTED_SYNTAX, "expression nested too deeply"),
                            sources) from None


def parse_function(pyfunc, constants=None, strict_dtypes: bool = False) -> Module:
    """The kernel of a `@tilelang.kernel` / `@T.prim_func` Python function: its source is
    parsed with the .tl grammar, free names come from its globals and closure (and
    `constants`, which take precedence), and spans point into its .py file."""
    from .pyfunc import build_function
    from .promotion import strict_dtypes as strict
    with strict(strict_dtypes):
        return build_function(pyfunc, constants)


__all__ = ["parse_module", "parse_function"]
