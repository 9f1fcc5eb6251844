"""Matching the arguments of a call against a signature (positional names, keyword-only
names and defaults), with arity / keyword diagnostics."""
from __future__ import annotations

from dataclasses import dataclass

from ..diagnostics import codes_syntax as CS
from ..diagnostics import codes_tileops as C3
from .errors import fail, did_you_mean

REQUIRED = object()


@dataclass(frozen=True)
class Sig:
    """`params`: ((name, default or REQUIRED), ...) taken positionally or by keyword;
    `varargs`: name of a *args parameter (collects extra positionals), if any."""
    name: str
    params: tuple = ()
    varargs: str | None = None
    min_varargs: int = 0
    max_varargs: int | None = None
    ignored: tuple = ()        # TileLang's GPU scheduling hints: accepted, no meaning here
    positional: int | None = None   # how many params may be positional (the rest keyword-only)

    def text(self) -> str:
        parts = [f"*{self.varargs}"] if self.varargs else []
        for i, (p, d) in enumerate(self.params):
            if i == self.positional and not self.varargs:
                parts.append("*")
            parts.append(p if d is REQUIRED else f"{p}={d!r}" if not isinstance(d, str)
                         else f"{p}={d}")
        return f"{self.name}({', '.join(parts)})"


def split_call(call_tree, spans):
    """(positional trees, [(name token, tree)]) of a `call` tree."""
    args = call_tree.children[1]
    pos, kws = [], []
    if args is None:
        return pos, kws
    for arg in args.children:
        if getattr(arg, "data", None) == "kwarg":
            kws.append((arg.children[0], arg.children[1]))
        elif kws:
            raise fail(CS.UNEXPECTED_TOKEN, "positional argument after keyword argument",
                       spans.of(arg), "positional argument")
        else:
            pos.append(arg)
    return pos, kws


def bind(sig: Sig, call_tree, spans) -> dict:
    """name -> argument tree (or the default value) for the call `call_tree`. With
    `varargs` the positionals are collected and the named params are keyword-only."""
    pos, kws = split_call(call_tree, spans)
    call_span = spans.of(call_tree)
    names = [p for p, _ in sig.params]
    out: dict = {}
    if sig.varargs:
        out[sig.varargs] = tuple(pos)
        _check_varargs(sig, len(pos), call_span)
        pos = []
    most = len(names) if sig.positional is None else sig.positional
    if len(pos) > most:
        raise fail(C3.WRONG_ARITY, f"{sig.name} takes {most} positional arguments but "
                   f"{len(pos)} were given", spans.of(pos[most]), "unexpected argument",
                   help=f"signature: {sig.text()}")
    for name, tree in zip(names, pos):
        out[name] = tree
    for tok, tree in kws:
        key = str(tok)
        if key in sig.ignored:
            continue
        if key not in names:
            hint = did_you_mean(key, names) or (f"accepted keywords: {', '.join(names)}"
                                                 if names else f"{sig.name} takes no keywords")
            raise fail(C3.UNKNOWN_KEYWORD, f"{sig.name} got an unexpected keyword argument "
                       f"`{key}`", spans.of(tok), "unknown keyword", help=hint)
        if key in out:
            raise fail(C3.UNKNOWN_KEYWORD, f"{sig.name} got multiple values for argument "
                       f"`{key}`", spans.of(tok), "given again here")
        out[key] = tree
    for name, default in sig.params:
        if name not in out:
            if default is REQUIRED:
                raise fail(C3.WRONG_ARITY, f"{sig.name} is missing the argument `{name}`",
                           call_span, f"`{name}` missing", help=f"signature: {sig.text()}")
            out[name] = default
    return out


def _check_varargs(sig: Sig, n: int, span) -> None:
    lo, hi = sig.min_varargs, sig.max_varargs
    if n < lo or (hi is not None and n > hi):
        want = f"{lo}" if lo == hi else f"{lo} to {hi}" if hi else f"at least {lo}"
        raise fail(C3.WRONG_ARITY, f"{sig.name} takes {want} positional arguments but "
                   f"{n} were given", span, f"{n} given", help=f"signature: {sig.text()}")
