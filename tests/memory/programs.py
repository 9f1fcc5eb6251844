"""Random `.tl` kernels for the memory tests: block-local buffers of several scopes and
sizes, written whole or in part, read into a global output, inside serial, pipelined and
conditional loops — so that lifetimes start and end everywhere, cross back edges and
span pipelined loops.

Every read reads values that were written before on every path (a program that reads
uninitialised memory could print anything, with or without reuse): the generator tracks
which buffers are fully written on every path to each point.
"""
from __future__ import annotations

from hypothesis import strategies as st

SCOPES = ("shared", "shared", "fragment", "local")   # mostly one arena: more sharing
LENGTHS = (4, 8)
N_OUT = 16
HEADER = f'''import tilelang.language as T


@T.prim_func
def k(In: T.Tensor((8, 16), "float32"), Out: T.Tensor((2, {N_OUT}), "float32")):
    with T.Kernel(2, threads=1) as bx:
'''


class _Gen:
    def __init__(self, draw, buffers):
        self.draw, self.buffers = draw, buffers     # name -> length
        self.lines: list[str] = []
        self.loop_vars: list[str] = []
        self.read: set[str] = set()
        self.out = 0

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * (depth + 2) + text)

    def block(self, depth: int, defined: frozenset, budget: int) -> frozenset:
        """Statements at `depth`; returns the buffers fully written on every path."""
        for i in range(self.draw(st.integers(1, 4))):
            if budget <= 0 and i:        # a block holds one statement at least
                break
            budget -= 1
            defined = self.statement(depth, defined, budget)
        return defined

    def back_edge_read(self, depth, top, var, carried) -> None:
        """At the top of a loop body, read a buffer the body writes further down: from
        the second iteration on it holds the previous iteration's value, which must
        survive the back edge (the first iteration skips the read: nothing is there)."""
        src = self.draw(st.sampled_from(carried))
        i = self.draw(st.integers(0, self.buffers[src] - 1))
        slot = self.out % N_OUT
        self.out += 1
        self.read.add(src)
        pad = "    " * (depth + 2)
        self.lines[top:top] = [f"{pad}if {var} > 0:",
                               f"{pad}    Out[bx, {slot}] = Out[bx, {slot}] * 0.5 + {src}[{i}]"]

    def statement(self, depth, defined, budget) -> frozenset:
        names = sorted(self.buffers)
        kinds = ["fill", "load", "copy", "update", "read", "temp", "loop", "pipelined", "if"]
        if depth >= 3:
            kinds = kinds[:6]
        kind = self.draw(st.sampled_from(kinds))
        b = self.draw(st.sampled_from(names))
        n = self.buffers[b]
        ready = sorted(x for x in defined)
        if kind == "fill":
            self.emit(depth, f"T.fill({b}, {self.draw(st.integers(-30, 30)) / 8})")
            return defined | {b}
        if kind == "load":
            row = self.loop_vars[-1] if self.loop_vars else "bx"
            self.emit(depth, f"T.copy(In[{row} % 8, 0:{n}], {b})")
            return defined | {b}
        if kind == "copy" and ready:
            src = self.draw(st.sampled_from([r for r in ready if self.buffers[r] == n] or [b]))
            if src in defined and src != b:
                self.emit(depth, f"for i in T.Parallel({n}):")
                self.emit(depth + 1, f"{b}[i] = {src}[i] * 2.0 + 1.0")
                self.read.add(src)
                return defined | {b}
        if kind == "temp":             # a short-lived scratch value: written, read, dead
            slot = self.out % N_OUT
            self.out += 1
            self.read.add(b)
            self.emit(depth, f"T.fill({b}, {self.draw(st.integers(-30, 30)) / 8})")
            self.emit(depth, f"Out[bx, {slot}] = Out[bx, {slot}] * 0.5 + {b}[0]")
            return defined | {b}
        if kind == "update" and b in defined:
            i = self.draw(st.integers(0, n - 1))
            self.emit(depth, f"{b}[{i}] = {b}[{i}] + 1.0")
            return defined
        if kind in ("read", "copy", "update") and ready:
            src = self.draw(st.sampled_from(ready))
            i = self.draw(st.integers(0, self.buffers[src] - 1))
            slot = self.out % N_OUT
            self.out += 1
            self.emit(depth, f"Out[bx, {slot}] = Out[bx, {slot}] * 0.5 + {src}[{i}]")
            self.read.add(src)
            return defined
        if kind in ("loop", "pipelined"):
            extent = self.draw(st.integers(1, 4))
            head = f"range({extent})" if kind == "loop" else \
                f"T.Pipelined({extent}, num_stages={self.draw(st.integers(1, 3))})"
            var = f"t{len(self.loop_vars)}"
            self.emit(depth, f"for {var} in {head}:")
            top = len(self.lines)
            self.loop_vars.append(var)
            inner = self.block(depth + 1, defined, budget)
            self.loop_vars.pop()
            carried = sorted(inner - defined)
            if carried and self.draw(st.booleans()):
                self.back_edge_read(depth + 1, top, var, carried)
            return inner          # the loop runs at least once: its definitions hold
        if kind == "if" and self.loop_vars:
            self.emit(depth, f"if {self.loop_vars[-1]} % 2 == 0:")
            self.block(depth + 1, defined, budget)
            return defined        # the branch may not run
        self.emit(depth, f"T.fill({b}, 1.0)")
        return defined | {b}


@st.composite
def kernels(draw, max_statements: int = 14):
    """(source text, {buffer: (scope, length)})."""
    count = draw(st.integers(2, 6))
    buffers, decls = {}, []
    for i in range(count):
        scope = draw(st.sampled_from(SCOPES))
        n = draw(st.sampled_from(LENGTHS))
        name = f"b{i}"
        buffers[name] = n
        decls.append(f"        {name} = T.alloc_{scope}(({n},), \"float32\")")
    gen = _Gen(draw, buffers)
    gen.block(0, frozenset(), max_statements)
    if not gen.lines:
        gen.emit(0, "T.fill(b0, 1.0)")
    # every buffer is read somewhere, so none is dead code
    for name in sorted(set(buffers) - gen.read):
        gen.emit(0, f"T.fill({name}, 2.0)")
        gen.emit(0, f"Out[bx, 0] = Out[bx, 0] + {name}[0]")
    return HEADER + "\n".join(decls + gen.lines) + "\n"
