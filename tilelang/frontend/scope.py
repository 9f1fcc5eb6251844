"""Name scopes of the builder: module globals below a stack of block-local frames."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Local:
    """A name bound inside a function. `kind`: "let", "loop", "block", "param",
    "buffer", "alloc", "const" (compile-time value bound in the body) or "macro_arg"."""
    value: object
    kind: str


class Globals:
    """Module-level names: a dict, plus an optional fallback resolver (for Python
    functions: their globals and closure, looked up on demand)."""

    def __init__(self, names: dict | None = None, fallback=None, fallback_names=()):
        self.names = dict(names or {})
        self.fallback = fallback
        self.fallback_names = tuple(fallback_names)

    def get(self, name: str):
        if name in self.names:
            return self.names[name]
        if self.fallback is not None:
            value = self.fallback(name)
            if value is not None:
                self.names[name] = value
            return value
        return None

    def known(self) -> list[str]:
        return list(self.names) + list(self.fallback_names)


class Scope:
    def __init__(self, globals_: Globals):
        self.globals = globals_
        self.frames: list[dict[str, Local]] = [{}]
        self.ended: dict[str, Local] = {}     # names of blocks that have ended (for hints)

    @contextmanager
    def block(self):
        self.frames.append({})
        try:
            yield
        finally:
            self.ended.update(self.frames.pop())

    def local(self, name: str) -> Local | None:
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        return None

    def lookup(self, name: str):
        """(value, Local or None); value None when the name is unknown."""
        loc = self.local(name)
        if loc is not None:
            return loc.value, loc
        return self.globals.get(name), None

    def bind(self, name: str, value, kind: str) -> None:
        self.frames[-1][name] = Local(value, kind)

    def known(self) -> list[str]:
        names = [n for f in self.frames for n in f]
        return names + self.globals.known() + ["range", "max", "min"]
