"""The tcsim instruction set: operands, instructions, the opcode table and programs.

A program is one kernel: a tile-granular instruction stream that the core's scalar unit
dispatches in order to four asynchronous engines (DMA_IN, DMA_OUT, MMA, VEC). Operands:

* `Reg(i)`    a scalar register r<i> (int or float value);
* `Imm(v)`    an immediate number;
* `Tile`      an on-chip buffer (optionally one stage of a ring, `A_s[r3]`, and a static
              sub-box of it, `A_s[r3]<0:64,32:64>`), with an optional map `{d0,d1}` from
              the VEC iteration domain's dims to its own dims (broadcast and transpose
              for elementwise ops);
* `Glob`      a global tensor (a kernel parameter or workspace) at a start corner;
* `SemRef`    a semaphore of an array (`full[r2]`); a wait names a phase: `full[r2]@r5`.

Instruction attributes (`box=`, `wait=`, `signal=`, `shape=`, ...) are kept as a sorted
tuple of (key, value) so instructions compare and hash structurally.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Reg:
    index: int


@dataclass(frozen=True)
class Imm:
    value: int | float


Scalar = Reg | Imm


@dataclass(frozen=True)
class Tile:
    buf: str
    stage: Scalar | None = None
    dims: tuple[int, ...] | None = None     # VEC: domain dim feeding each buffer dim
    box: tuple[tuple[int, int], ...] | None = None    # (start, extent) per buffer dim

    def shape(self, decl) -> tuple[int, ...]:
        """The shape of the tile this operand names: the box's, or the buffer's."""
        return tuple(e for _, e in self.box) if self.box is not None else tuple(decl.shape)


@dataclass(frozen=True)
class Glob:
    tensor: str
    starts: tuple[Scalar, ...]


@dataclass(frozen=True)
class SemRef:
    name: str
    index: Scalar | None = None


@dataclass(frozen=True)
class Wait:
    sem: SemRef
    phase: Scalar


# ----------------------------------------------------------------------------- opcodes

SCALAR_BINARY = ("ADD", "SUB", "MUL", "DIV", "FDIV", "MOD", "MIN", "MAX",
                 "LT", "LE", "GT", "GE", "EQ", "NE", "AND", "OR")
SCALAR_UNARY = ("MOV", "NEG", "NOT", "CVTI", "CVTF", "EXP", "EXP2", "LOG", "LOG2", "SQRT",
                "RSQRT", "TANH", "SIGMOID", "ABS", "FLOOR", "CEIL", "ERF")
VEC_UNARY = ("MOV", "NEG", "NOT", "ABS", "EXP", "EXP2", "LOG", "LOG2", "SQRT", "RSQRT",
             "TANH", "SIGMOID", "ERF", "FLOOR", "CEIL")
VEC_BINARY = SCALAR_BINARY
# bit operations (integers) and further float functions, on both units; their opcodes
# are numbered after all of the above
EXT_BINARY = ("BAND", "BOR", "BXOR", "SHL", "SHR", "POW")
EXT_UNARY = ("BNOT", "SIN", "COS", "TAN", "ROUND", "TRUNC")
RED_KINDS = ("SUM", "MAX", "MIN", "ABSSUM", "ABSMAX")


@dataclass(frozen=True)
class OpInfo:
    engine: str        # "SCALAR" | "DMA_IN" | "DMA_OUT" | "MMA" | "VEC"
    operands: str      # one letter per operand: r reg, s scalar, t tile, g glob, m sem
    attrs: tuple[str, ...] = ()


_ASYNC = ("wait", "signal")


def _build_table() -> dict[str, OpInfo]:
    t: dict[str, OpInfo] = {}
    for op in SCALAR_BINARY:
        t[op] = OpInfo("SCALAR", "rss")
    for op in SCALAR_UNARY:
        t[op] = OpInfo("SCALAR", "rs")
    t["ADDI"] = OpInfo("SCALAR", "rrs")
    t["MULI"] = OpInfo("SCALAR", "rrs")
    t["SEL"] = OpInfo("SCALAR", "rsss")
    for op in ("LOOP", "IF"):
        t[op] = OpInfo("SCALAR", "s")
    for op in ("ENDLOOP", "ELSE", "ENDIF", "FENCE", "HALT"):
        t[op] = OpInfo("SCALAR", "")
    t["LDG"] = OpInfo("SCALAR", "rg")              # scalar load of one global element
    t["SEM.INIT"] = OpInfo("SCALAR", "ms")
    t["SEM.EXPECT"] = OpInfo("SCALAR", "ms")
    t["SEM.ARRIVE"] = OpInfo("SCALAR", "m")
    t["SEM.WAIT"] = OpInfo("SCALAR", "ms")
    # mcast=1: one transfer for every block of a cluster; stop=: per box dim, None or an
    # exclusive bound on the tensor index (a masked ragged tail: read as zero / not
    # written); gather=1: the start was loaded from another tensor (a data-dependent
    # box), counted in the report
    t["DMA.LD"] = OpInfo("DMA_IN", "tg", ("box", "mcast", "stop", "gather") + _ASYNC)
    t["DMA.ST"] = OpInfo("DMA_OUT", "gt", ("box", "reduce", "stop") + _ASYNC)
    t["MMA"] = OpInfo("MMA", "ttt", ("ta", "tb") + _ASYNC)
    t["COPY"] = OpInfo("VEC", "tt", ("shape",) + _ASYNC)
    t["ACC.ZERO"] = OpInfo("MMA", "t", _ASYNC)      # in order with the MMAs it precedes
    t["ACC.READ"] = OpInfo("VEC", "tt", ("scale",) + _ASYNC)
    t["VEC.IOTA"] = OpInfo("VEC", "t", ("shape", "dim") + _ASYNC)
    t["VEC.SEL"] = OpInfo("VEC", "tsss", ("shape",) + _ASYNC)
    for op in VEC_UNARY:
        t[f"VEC.{op}"] = OpInfo("VEC", "ts", ("shape",) + _ASYNC)
    for op in VEC_BINARY:
        t[f"VEC.{op}"] = OpInfo("VEC", "tss", ("shape",) + _ASYNC)
    for kind in RED_KINDS:
        t[f"VEC.RED.{kind}"] = OpInfo("VEC", "tt", ("dim", "acc") + _ASYNC)
    for op in EXT_BINARY:
        t[op] = OpInfo("SCALAR", "rss")
        t[f"VEC.{op}"] = OpInfo("VEC", "tss", ("shape",) + _ASYNC)
    for op in EXT_UNARY:
        t[op] = OpInfo("SCALAR", "rs")
        t[f"VEC.{op}"] = OpInfo("VEC", "ts", ("shape",) + _ASYNC)
    # dst[p] = src.flat[idx[p]] over the domain (0 where idx is outside src): an on-chip
    # element at a computed index (`x[i, j * 2]`, `w[j // 2]`)
    t["VEC.GATHER"] = OpInfo("VEC", "tts", ("shape",) + _ASYNC)
    # rd = g[...]; g[...] += value, atomically across blocks (`T.atomic_add(...,
    # return_prev=True)`); runs once the block's earlier work has reached memory
    t["ATOM.ADD"] = OpInfo("SCALAR", "rgs")
    # rd = tile.flat[i]: one element of an on-chip buffer, read by the scalar unit (after
    # SEM.WAITs on the engines that wrote it): `if mask[k]:`, `x[0] * 2` outside T.Parallel
    t["LDS"] = OpInfo("SCALAR", "rts")
    # leave the innermost LOOP (past its ENDLOOP) when the operand is zero: a `while`
    # loop is `LOOP <most>; <condition>; BREAKZ cond; <body>; ENDLOOP`
    t["BREAKZ"] = OpInfo("SCALAR", "s")
    # dst = the bits of src (of dtype `src`) read as dst's dtype, of the same width
    # (`T.reinterpret`): exact, no conversion
    t["VEC.BITCAST"] = OpInfo("VEC", "ts", ("shape", "src") + _ASYNC)
    # rd = the bits of the operand, of dtype `src`, read as dtype `dst` of the same width
    # (`T.reinterpret` of a run-time scalar): the registers carry no dtype, so both are
    # named; exact, no conversion. Last, so earlier opcodes keep their numbers
    t["BITCAST"] = OpInfo("SCALAR", "rs", ("dst", "src"))
    return t


OPCODES: dict[str, OpInfo] = _build_table()
OPCODE_LIST: tuple[str, ...] = tuple(OPCODES)        # binary encoding: index in this list


@dataclass(frozen=True)
class Instr:
    op: str
    args: tuple = ()
    attrs: tuple[tuple[str, object], ...] = ()
    line: int = field(default=0, compare=False)      # .tcasm line, for messages

    def attr(self, key: str, default=None):
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    @property
    def engine(self) -> str:
        return OPCODES[self.op].engine


def make(op: str, *args, **attrs) -> Instr:
    """An instruction with attributes given as keywords (None values dropped); checks the
    operand kinds against the opcode table."""
    info = OPCODES.get(op)
    if info is None:
        raise ValueError(f"unknown opcode {op}")
    check_operands(op, args)
    for k in attrs:
        if k not in info.attrs:
            raise ValueError(f"{op} takes no attribute {k}=")
    clean = tuple(sorted((k, _freeze(v)) for k, v in attrs.items() if v is not None))
    return Instr(op, tuple(args), clean)


def _freeze(v):
    return tuple(_freeze(x) for x in v) if isinstance(v, list) else v


_KIND = {"r": (Reg,), "s": (Reg, Imm), "t": (Tile,), "g": (Glob,), "m": (SemRef,)}


def check_operands(op: str, args) -> None:
    kinds = OPCODES[op].operands
    if len(args) != len(kinds):
        raise ValueError(f"{op} takes {len(kinds)} operands, got {len(args)}")
    for i, (k, a) in enumerate(zip(kinds, args)):
        ok = _KIND[k]
        if op.startswith("VEC.") and k == "s":
            ok = (Reg, Imm, Tile)                  # elementwise operands may be tiles
        if not isinstance(a, ok):
            raise ValueError(f"{op}: operand {i + 1} must be {k!r}-kind, got {a!r}")


# ----------------------------------------------------------------------------- program

@dataclass(frozen=True)
class BufferDecl:
    name: str
    level: str
    dtype: str
    shape: tuple[int, ...]
    stages: int = 1
    offset: int | None = None      # byte offset in its level's arena (None: own memory)
    # a temporary of an elementwise expression: a GPU computes it element by element in
    # a few registers per thread, so it takes no room of its level (residency, fit)
    transient: bool = False

    @property
    def stage_elems(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def nbytes(self) -> int:
        from ...dtypes import nbytes
        return self.stage_elems * nbytes(self.dtype) * self.stages


@dataclass(frozen=True)
class Param:
    """A kernel parameter: a tensor (shape of ints / symbol names / size expressions) or
    a scalar; scalars are preloaded into register `reg`. A `view` is no argument: the
    memory of tensor `source` seen with `shape` (`T.Tensor(shape, dtype, src.data)`)."""
    name: str
    kind: str                      # "tensor" | "scalar" | "workspace" | "view"
    dtype: str
    shape: tuple = ()
    reg: int | None = None
    source: str | None = None


@dataclass(frozen=True)
class Program:
    """One kernel. `grid` holds three expressions over the symbols (see grid.py);
    `block_regs` the registers that receive (bx, by, bz); `symbol_regs` (name, reg) the
    registers preloaded with symbolic sizes. `raster` orders blocks for L2 reuse:
    0 = row-major, P > 0 = panels of P rows of by."""
    name: str
    params: tuple[Param, ...]
    symbols: tuple[tuple[str, int], ...]
    grid: tuple[str, ...]
    block_regs: tuple[int, ...]
    buffers: tuple[BufferDecl, ...]
    sems: tuple[tuple[str, int], ...]
    code: tuple[Instr, ...]
    raster: int = 0
    num_regs: int = 64
    threads: int = 0               # the kernel's `threads=`: their registers take RF
    # thread-block cluster (blocks along x, y, z launched together on neighbouring
    # cores); a `DMA.LD ... mcast=1` is read once per cluster and lands in every block
    cluster: tuple[int, int, int] = (1, 1, 1)

    def buffer(self, name: str) -> BufferDecl:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def resources(self) -> dict[str, int]:
        """Bytes of each on-chip level the program needs, plus semaphore and register
        counts. Placed buffers (an arena plan, where buffers with disjoint lifetimes
        share bytes) take the arena's extent; unplaced ones are added on top of it."""
        out: dict[str, int] = {}
        for b in self.buffers:
            if b.offset is not None and not b.transient:
                out[b.level] = max(out.get(b.level, 0), b.offset + b.nbytes())
        for b in self.buffers:
            if b.offset is None and not b.transient:
                out[b.level] = out.get(b.level, 0) + b.nbytes()
        out["semaphores"] = sum(n for _, n in self.sems)
        out["registers"] = self.num_regs
        return out
