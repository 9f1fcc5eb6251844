"""Compile-time dicts and `f(*args, **kwargs)` in kernel code.

A helper that builds the keywords of a tile op in Python
(`kwargs = {} if batch == 1 else {"batch": batch}` then `T.reduce_sum(src, dst,
**kwargs)`) works as in Python: a dict literal with string keys is a compile-time value,
and a call's `*tuple` / `**dict` arguments are spread into positional and keyword
arguments before the callee sees the call. The spread call is an ordinary call tree
whose spread arguments are `value` leaves holding what was already evaluated, so every
tile op, macro and intrinsic binds it as if the arguments had been written out.
"""
from __future__ import annotations

from dataclasses import dataclass

from lark import Token, Tree
from lark.tree import Meta

from ..diagnostics import codes_syntax as CS
from ..ir.nodes import NO_SPAN, Span
from .errors import fail
from .values import Str, Tup, describe


@dataclass(frozen=True)
class DictVal:
    """A dict literal with string keys: (key, value) pairs in the order written."""
    items: tuple
    span: Span = NO_SPAN
    WHAT = "a dict"


def eval_dict(b, tree) -> DictVal:
    items = []
    for item in tree.children:
        if item is None:
            continue
        key_tree, value_tree = item.children
        key = b.eval(key_tree)
        if not isinstance(key, Str):
            raise fail(CS.UNSUPPORTED_SYNTAX, "a dict in a kernel has string keys",
                       b.spans.of(key_tree), f"{describe(key)}, not a string",
                       help="a dict here holds keyword arguments for a `**` call")
        items = [(k, v) for k, v in items if k != key.value]
        items.append((key.value, b.eval(value_tree)))
    return DictVal(tuple(items), b.spans.of(tree))


def dict_item(b, d: DictVal, subs, span):
    """`ops["max"]` of a compile-time dict (a Python dict of helpers a kernel calls)."""
    key = b.eval(subs[0]) if len(subs) == 1 else None
    found = [v for k, v in d.items if isinstance(key, Str) and k == key.value]
    if not found:
        raise fail(CS.UNSUPPORTED_SYNTAX, "a dict is indexed by one of its keys, a string "
                   "known at compile time", span, "no such key" if isinstance(key, Str)
                   else "not a string constant",
                   help="keys: " + ", ".join(repr(k) for k, _ in d.items))
    return found[0]


def has_spread(call_tree) -> bool:
    args = call_tree.children[1]
    return args is not None and any(getattr(a, "data", None) in ("spread_args", "spread_kwargs")
                                    for a in args.children)


def spread_call(b, call_tree):
    """`call_tree` with its `*x` / `**x` arguments written out (unchanged without them)."""
    if not has_spread(call_tree):
        return call_tree
    out = []
    for arg in call_tree.children[1].children:
        kind = getattr(arg, "data", None)
        if kind not in ("spread_args", "spread_kwargs"):
            out.append(arg)
            continue
        value = b.eval(arg.children[0])
        want = Tup if kind == "spread_args" else DictVal
        if not isinstance(value, want):
            star = "*" if kind == "spread_args" else "**"
            raise fail(CS.UNSUPPORTED_SYNTAX, f"`{star}` spreads "
                       f"{'a tuple' if want is Tup else 'a dict'} known at compile time, "
                       f"found {describe(value)}", b.spans.of(arg), "cannot be spread")
        if kind == "spread_args":
            out.extend(_leaf(v, arg.meta) for v in value.items)
        else:
            out.extend(Tree("kwarg", [_name(k, arg.meta), _leaf(v, arg.meta)], arg.meta)
                       for k, v in value.items)
    return Tree("call", [call_tree.children[0], Tree("arguments", out, call_tree.children[1].meta)],
                call_tree.meta)


def _leaf(value, meta: Meta) -> Tree:
    return Tree("value", [value], meta)


def _name(key: str, meta: Meta) -> Token:
    return Token("NAME", key, line=meta.line, column=meta.column, end_line=meta.end_line,
                 end_column=meta.end_column)


class SpreadMixin:
    """The evaluator's side: dict literals and the leaves of a spread call."""

    def _e_dict(self, tree):
        return eval_dict(self, tree)

    def _e_value(self, tree):
        return tree.children[0]


__all__ = ["DictVal", "SpreadMixin", "spread_call", "has_spread", "dict_item"]
