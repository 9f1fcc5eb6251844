"""`tvm.target.Target`: a TVM target description, as TileLang programs build one to pass
around (`Target("hip -mcpu=gfx950")`). Kernels given such a target compile for this
compiler's default target (docs/compat.md)."""
from __future__ import annotations


class TargetKind:
    def __init__(self, name: str):
        self.name = name

    def __str__(self) -> str:
        return self.name


class Target:
    """The spec's kind (`cuda`, `hip`, `llvm`, ...) and its `-key=value` attributes."""

    def __init__(self, spec, host=None):
        words = str(spec).split()
        if not words:
            raise ValueError("an empty target spec")
        self.spec = " ".join(words)
        self.kind = TargetKind(words[0])
        self.attrs = {}
        for w in words[1:]:
            key, _, value = w.lstrip("-").partition("=")
            self.attrs[key] = value if value else True
        self.host = host
        self.mcpu = self.attrs.get("mcpu", "")
        self.arch = self.attrs.get("arch", "")

    def __str__(self) -> str:
        return self.spec

    def __repr__(self) -> str:
        return f"Target({self.spec!r})"
