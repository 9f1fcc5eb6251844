"""Random programs as a small tree of their own, rendered to `.tl` text.

The generator (generate.py) builds a `Program`: its tensors, sizes and grid, and a body
of statements whose expressions are `E` trees. Keeping the structure (not only text)
is what lets a failing program shrink (shrink.py): a statement dropped, an expression
replaced by one of its operands, a size halved, and the text rendered again.
"""
from __future__ import annotations

from dataclasses import dataclass, replace


# ----------------------------------------------------------------------------- expressions

@dataclass(frozen=True)
class E:
    """An expression: `op` is "leaf" (text is the whole expression), "bin", "un", "call",
    "cast", "select", "cmp" (text: the operator / function / dtype), `args` its operands;
    `dtype` what it evaluates to."""
    op: str
    text: str
    dtype: str
    args: tuple = ()

    def render(self) -> str:
        if self.op == "leaf":
            return self.text
        a = [x.render() for x in self.args]
        if self.op == "bin":
            if self.text in ("min", "max"):
                return f"T.{self.text}({a[0]}, {a[1]})"
            return f"({a[0]} {self.text} {a[1]})"
        if self.op == "cmp":
            return f"({a[0]} {self.text} {a[1]})"
        if self.op == "un":
            return f"(-{a[0]})"
        if self.op == "call":
            return f"T.{self.text}({', '.join(a)})"
        if self.op == "cast":
            return f'T.cast({a[0]}, "{self.dtype}")'
        if self.op == "select":
            return f"T.if_then_else({a[0]}, {a[1]}, {a[2]})"
        raise ValueError(self.op)

    def subexprs(self):
        yield self
        for x in self.args:
            yield from x.subexprs()


def leaf(text: str, dtype: str) -> E:
    return E("leaf", text, dtype)


# ----------------------------------------------------------------------------- statements

@dataclass(frozen=True)
class S:
    """A statement: `kind` picks the rendering; `text` holds what is fixed (a line or a
    loop header), `exprs` the expressions it stores (Parallel: one per target in
    `targets`), `body` the nested statements of a loop."""
    kind: str                 # line | parallel | assign | loop
    text: str = ""
    targets: tuple = ()       # parallel: the stored element of each assignment
    exprs: tuple = ()
    body: tuple = ()
    essential: bool = False   # dropping it cannot give a valid program (allocations)

    def render(self, indent: int) -> list[str]:
        pad = " " * indent
        if self.kind == "line":
            return [pad + self.text]
        if self.kind in ("parallel", "assign"):
            header = [pad + self.text] if self.kind == "parallel" else []
            inner = pad + ("    " if self.kind == "parallel" else "")
            return header + [inner + f"{target} = {e.render()}"
                             for target, e in zip(self.targets, self.exprs)]
        lines = [pad + self.text]
        for s in self.body:
            lines += s.render(indent + 4)
        if not self.body:
            lines.append(pad + "    pass")
        return lines


def line(text: str, essential: bool = False) -> S:
    return S("line", text, essential=essential)


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple              # ints or size names
    dtype: str


@dataclass(frozen=True)
class Program:
    """One kernel: `sizes` gives each symbolic size its value for the run, `consts` the
    module-level constants (block sizes), `grid` the T.Kernel line's arguments."""
    family: str
    tensors: tuple
    sizes: tuple              # ((name, value), ...) of the T.dynamic sizes
    consts: tuple             # ((name, value), ...)
    grid: tuple               # grid extents (text)
    block_vars: tuple
    body: tuple
    threads: int = 128
    targets: tuple = ("cpu", "tcsim:tiny")    # where the family's constructs compile
    ranges: tuple = ()        # ((tensor, lo, hi), ...): integer inputs drawn in [lo, hi)
    more_grids: tuple = ()    # ((grid, block_vars, body), ...): grids run after the first


    @property
    def size_dict(self) -> dict:
        return dict(self.sizes)

    def render(self) -> str:
        out = ["import tilelang.language as T", ""]
        for name, lo, hi in self.ranges:       # read by the differential check's inputs
            out.insert(0, f"# input {name} in [{lo}, {hi})")
        for name, _ in self.sizes:
            out.append(f'{name} = T.dynamic("{name}")')
        for name, value in self.consts:
            out.append(f"{name} = {value}")
        out += ["", "", "@T.prim_func"]
        params = ", ".join(f'{t.name}: T.Tensor({_tuple(t.shape)}, "{t.dtype}")'
                           for t in self.tensors)
        out.append(f"def fuzz({params}):")
        for grid, block_vars, body in ((self.grid, self.block_vars, self.body),
                                       *self.more_grids):
            out += _kernel(grid, block_vars, body, self.threads)
        return "\n".join(out) + "\n"

    def with_body(self, body) -> "Program":
        return replace(self, body=tuple(body))


def _kernel(grid, block_vars, body, threads: int) -> list[str]:
    """One `with T.Kernel(...)` block of the prim_func (grids run in order)."""
    bv = block_vars[0] if len(block_vars) == 1 else "(" + ", ".join(block_vars) + ")"
    lines = [f"    with T.Kernel({', '.join(grid)}, threads={threads}) as {bv}:"]
    return lines + ([ln for s in body for ln in s.render(8)] or ["        pass"])


def _tuple(items) -> str:
    items = [str(x) for x in items]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


__all__ = ["E", "S", "Tensor", "Program", "leaf", "line"]
