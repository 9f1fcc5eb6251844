"""IR nodes: immutable dataclasses with structural equality.

Every node carries a source `span`, which is excluded from equality and hashing, so two
IRs that differ only in where they came from compare equal (this is what the
print -> parse round-trip tests rely on).

One IR, progressively lowered: tile ops (Copy, Gemm, Fill, Reduce, TileAtomic) at the
top; loops, loads, stores and intrinsic calls below. Conventions:

* Sequences are tuples. Scalar expressions carry their `dtype` (a canonical name from
  `tilelang.dtypes`).
* Variables compare by (name, dtype); the builder keeps names unique within a function.
* Loops run from `min` for `extent` iterations with step 1.
* Index arithmetic is int32 at the IR level; codegen widens addresses to int64.
* `//` and `%` are floor division / modulo (Python semantics).
* A `Load` of a buffer outside its shape is undefined; the `predicate` pass guards
  global accesses, and `Select` evaluates only the arm it picks.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Span:
    file: str
    line: int
    col: int
    end_line: int
    end_col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NO_SPAN = Span("<unknown>", 0, 0, 0, 0)


def _span():
    return field(default=NO_SPAN, compare=False, repr=False, kw_only=True)


class Node:
    """Base of all IR nodes."""
    __slots__ = ()


# ----------------------------------------------------------------------------- expressions

class Expr(Node):
    __slots__ = ()


@dataclass(frozen=True)
class Const(Expr):
    value: int | float | bool
    dtype: str
    span: Span = _span()


@dataclass(frozen=True)
class Var(Expr):
    """A scalar variable: loop variable, block index, let-binding, scalar parameter or
    symbolic size (`T.dynamic`)."""
    name: str
    dtype: str = "int32"
    span: Span = _span()


BINARY_OPS = ("+", "-", "*", "/", "//", "%", "min", "max",
              "<", "<=", ">", ">=", "==", "!=", "and", "or")
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")


@dataclass(frozen=True)
class Binary(Expr):
    op: str          # one of BINARY_OPS; comparisons and and/or have dtype "bool"
    lhs: Expr
    rhs: Expr
    dtype: str
    span: Span = _span()


@dataclass(frozen=True)
class Unary(Expr):
    op: str          # "-" | "not"
    operand: Expr
    dtype: str
    span: Span = _span()


# Intrinsic calls (printed T.<name>(...)): math on floats and a few integer helpers.
INTRINSICS = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "abs",
              "ceildiv", "floor", "ceil", "erf", "sin", "cos", "tan", "pow", "round",
              "trunc", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
              "shift_left", "shift_right", "get_rank", "get_num_ranks", "cycle_counter")
# intrinsics of two arguments; the bit functions take integers only (shifts by a count
# outside [0, bits) give 0, or -1 for a negative value shifted right)
BINARY_INTRINSICS = ("ceildiv", "pow", "bitwise_and", "bitwise_or", "bitwise_xor",
                     "shift_left", "shift_right")
BIT_INTRINSICS = ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left",
                  "shift_right")
# T.get_rank() / T.get_num_ranks(): int32, read from the launch's rank table
RANK_QUERIES = ("get_rank", "get_num_ranks")
# `T.cycle_counter()` (int64, no arguments) reads the CPU's cycle counter. Users cannot
# spell it: only the profiler's timers build puts it in a kernel (tilelang/profiler/timers.py).
CYCLE_COUNTER = "cycle_counter"


@dataclass(frozen=True)
class Call(Expr):
    name: str        # one of INTRINSICS
    args: tuple[Expr, ...]
    dtype: str
    span: Span = _span()


@dataclass(frozen=True)
class Cast(Expr):
    value: Expr
    dtype: str
    span: Span = _span()


@dataclass(frozen=True)
class BitCast(Expr):
    """T.reinterpret(dtype, value): the bits of `value` read as `dtype`, a dtype of the
    same width (uint16 -> float16, uint8 -> int8); no conversion of the value."""
    value: Expr
    dtype: str
    span: Span = _span()


@dataclass(frozen=True)
class Select(Expr):
    """T.if_then_else(cond, a, b): evaluates only the chosen arm."""
    cond: Expr
    true_value: Expr
    false_value: Expr
    dtype: str
    span: Span = _span()


SCOPES = ("global", "shared", "fragment", "local", "var")


@dataclass(frozen=True)
class Buffer(Node):
    """A tensor: a kernel parameter (scope "global"), a workspace (`T.alloc_global`,
    scope "global") or a block-local allocation. `T.alloc_var` gives a rank-0 buffer of
    scope "var", read and written by its bare name."""
    name: str
    shape: tuple[Expr, ...]
    dtype: str
    scope: str = "global"
    span: Span = _span()

    @property
    def ndim(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class Load(Expr):
    buffer: Buffer
    indices: tuple[Expr, ...]
    dtype: str
    span: Span = _span()


# ----------------------------------------------------------------------------- statements

class Stmt(Node):
    """Base of statements. `effects()` says which buffers (and regions) a statement reads
    and writes; the passes and code generators that need to know ask it, never the node's
    type. Every statement class answers precisely; this default, for a statement that
    does not, is the safe answer: every buffer it mentions is read and written."""
    __slots__ = ()

    def effects(self) -> "Effects":
        from .visitor import walk
        found = {}
        for n in walk(self):
            if isinstance(n, Buffer):
                found.setdefault(n.name, n)
        return Effects(tuple(Access(b, "update") for b in found.values()))


# ----------------------------------------------------------------------------- effects

ACCESS_MODES = ("read", "write", "update")


@dataclass(frozen=True)
class Access:
    """How a statement touches one buffer. `mode`: `read`; `write` (the elements touched
    are overwritten without being read); `update` (read, then written: accumulations,
    atomics). `region`: the box touched (None: not a box, or not known); `whole`: the
    access surely touches every element of the buffer."""
    buffer: Buffer
    mode: str
    region: "Region | None" = None
    whole: bool = False


@dataclass(frozen=True)
class Effects:
    """The accesses of a statement (loads inside its expressions included)."""
    accesses: tuple[Access, ...] = ()

    def reads(self) -> frozenset[str]:
        """Buffers whose values the statement may read."""
        return frozenset(a.buffer.name for a in self.accesses if a.mode != "write")

    def writes(self) -> frozenset[str]:
        """Buffers the statement may write."""
        return frozenset(a.buffer.name for a in self.accesses if a.mode != "read")

    def overwrites(self) -> frozenset[str]:
        """Buffers whose every element the statement surely writes without reading."""
        return frozenset(a.buffer.name for a in self.accesses if a.mode == "write" and a.whole)

    def names(self) -> frozenset[str]:
        return frozenset(a.buffer.name for a in self.accesses)

    def read_buffers(self) -> tuple[Buffer, ...]:
        """The buffers of `reads()`, each once."""
        return tuple({a.buffer.name: a.buffer for a in self.accesses
                      if a.mode != "write"}.values())

    def __or__(self, other: "Effects") -> "Effects":
        return Effects(self.accesses + other.accesses)

    def maybe(self) -> "Effects":
        """These effects where they may not happen (a loop body, a branch): nothing is
        surely written whole."""
        return Effects(tuple(replace(a, whole=False) for a in self.accesses))


def loads_in(*exprs) -> Effects:
    """The reads of the loads inside `exprs` (None entries skipped)."""
    from .visitor import walk
    return Effects(tuple(Access(n.buffer, "read") for e in exprs if e is not None
                         for n in walk(e) if isinstance(n, Load)))


def _union(*stmts) -> Effects:
    out = Effects()
    for st in stmts:
        if st is not None:
            out = out | st.effects()
    return out


@dataclass(frozen=True)
class Seq(Stmt):
    stmts: tuple[Stmt, ...]
    span: Span = _span()

    def effects(self) -> Effects:
        return _union(*self.stmts)


@dataclass(frozen=True)
class Let(Stmt):
    """`name = value`: binds `var` for the rest of the enclosing block (no rebinding)."""
    var: Var
    value: Expr
    span: Span = _span()

    def effects(self) -> Effects:
        return loads_in(self.value)


@dataclass(frozen=True)
class Alloc(Stmt):
    """Declares a block-local buffer (or a global workspace) for the rest of the
    enclosing block. `init` is the initial value of a `T.alloc_var`.

    `offset` / `align` are the placement the `memory_reuse` pass chose: the buffer lives
    at byte `offset` of its scope's arena (one arena per scope and block), and its
    address is a multiple of `align` (the arena is aligned to the largest `align` of its
    buffers). None means unplanned: the buffer gets memory of its own.

    A global buffer with a `source` is a view, `T.Tensor(shape, dtype, src.data)`: the
    memory of the global tensor `source` (same dtype, C-contiguous) seen with another
    shape, inside the kernel or before it; it has no memory of its own. A view with a
    `pe` (`T.Tensor(shape, dtype, src.data, pe=r)`, inside a kernel) sees the copy of
    `source` in the symmetric heap of rank `pe` (-1: this rank): loads and stores through
    it read and write that rank's memory, as TileScale's peer addresses do."""
    buffer: Buffer
    init: Expr | None = None
    offset: int | None = None
    align: int | None = None
    source: Buffer | None = None
    pe: Expr | None = None
    span: Span = _span()

    def effects(self) -> Effects:
        reads = Effects() if self.pe is None else loads_in(self.pe)
        if self.init is None:
            return reads
        return reads | loads_in(self.init) | \
            Effects((Access(self.buffer, "write", whole=True),))


@dataclass(frozen=True)
class Store(Stmt):
    buffer: Buffer
    indices: tuple[Expr, ...]
    value: Expr
    span: Span = _span()

    def effects(self) -> Effects:
        single = all(isinstance(d, Const) and d.value == 1 for d in self.buffer.shape)
        return loads_in(self.value, *self.indices) | \
            Effects((Access(self.buffer, "write", whole=single),))


ATOMIC_OPS = ("add", "max", "min")


@dataclass(frozen=True)
class Atomic(Stmt):
    """Scalar atomic read-modify-write: T.atomic_add(C[i, j], value)."""
    op: str
    buffer: Buffer
    indices: tuple[Expr, ...]
    value: Expr
    span: Span = _span()

    def effects(self) -> Effects:
        return loads_in(self.value, *self.indices) | Effects((Access(self.buffer, "update"),))


LOOP_KINDS = ("serial", "parallel", "pipelined", "unroll", "vectorized")
# T.copy's cache hints (TileLang's spelling); "evict_normal" is no hint
EVICTION_POLICIES = ("evict_normal", "evict_first", "evict_last")


@dataclass(frozen=True)
class For(Stmt):
    var: Var
    min: Expr
    extent: Expr
    kind: str                                   # one of LOOP_KINDS
    body: Stmt
    annotations: tuple[tuple[str, object], ...] = ()   # sorted (key, value); e.g. num_stages
    span: Span = _span()

    def annotation(self, key: str, default=None):
        return dict(self.annotations).get(key, default)

    def effects(self) -> Effects:
        return loads_in(self.min, self.extent) | self.body.effects().maybe()


@dataclass(frozen=True)
class If(Stmt):
    cond: Expr
    then_body: Stmt
    else_body: Stmt | None = None
    span: Span = _span()

    def effects(self) -> Effects:
        return loads_in(self.cond) | _union(self.then_body, self.else_body).maybe()


@dataclass(frozen=True)
class While(Stmt):
    """`while cond: body`: `cond` (a run-time bool) is evaluated before every iteration;
    the body runs until it is false, possibly never."""
    cond: Expr
    body: Stmt
    span: Span = _span()

    def effects(self) -> Effects:
        return loads_in(self.cond) | self.body.effects().maybe()


# ----------------------------------------------------------------------------- tile ops

@dataclass(frozen=True)
class Region(Node):
    """A box of a buffer: start corner and constant extents (one per buffer dim).

    `limits` (None, or one entry per dim: None or an integer Expr) masks a ragged tail:
    along dim d, elements at index >= limits[d] are outside the region's valid part — a
    read of them gives 0 and a write is dropped, as past the edge of a tensor. It is
    what `T.copy(KV[start:end, :], KV_s)` with a non-constant `end - start` means."""
    buffer: Buffer
    starts: tuple[Expr, ...]
    extents: tuple[int, ...]
    limits: tuple[Expr | None, ...] | None = None
    span: Span = _span()

    @property
    def limit_exprs(self) -> tuple:
        return tuple(x for x in self.limits or () if x is not None)

    @property
    def covers_buffer(self) -> bool:
        """Whether the box is the whole buffer (starts 0, extents the constant shape, no
        limit masking a part of it)."""
        return not self.limit_exprs and all(
            isinstance(st, Const) and st.value == 0 for st in self.starts) and all(
            isinstance(d, Const) and int(d.value) == e
            for d, e in zip(self.buffer.shape, self.extents))

    def access(self, mode: str) -> Effects:
        """This box accessed in `mode`, with the loads of its start and limit expressions."""
        whole = mode != "read" and self.covers_buffer
        return loads_in(*self.starts, *self.limit_exprs) | \
            Effects((Access(self.buffer, mode, self, whole),))


@dataclass(frozen=True)
class Copy(Stmt):
    """T.copy(src, dst): elementwise copy with dtype conversion. The shapes of the two
    regions agree after dropping unit dims. Out-of-bounds global reads give 0 and
    out-of-bounds writes are dropped (made explicit by the predicate pass).
    `eviction_policy` (one of EVICTION_POLICIES) is a cache hint, no effect on values:
    lowering carries it onto the innermost loop of the copy (its `eviction_policy`
    annotation), where the CPU code generator streams "evict_first" stores past the
    caches."""
    src: Region
    dst: Region
    eviction_policy: str = "evict_normal"
    span: Span = _span()

    def effects(self) -> Effects:
        return self.src.access("read") | self.dst.access("write")


@dataclass(frozen=True)
class Gemm(Stmt):
    """C += op(A) @ op(B) (C = ... when clear_accum)."""
    a: Region
    b: Region
    c: Region
    transpose_a: bool = False
    transpose_b: bool = False
    clear_accum: bool = False
    span: Span = _span()

    def effects(self) -> Effects:
        c = self.c.access("write" if self.clear_accum else "update")
        return self.a.access("read") | self.b.access("read") | c


@dataclass(frozen=True)
class Fill(Stmt):
    """T.fill(dst, value); T.clear(dst) is Fill(dst, 0)."""
    dst: Region
    value: Expr
    span: Span = _span()

    def effects(self) -> Effects:
        return loads_in(self.value) | self.dst.access("write")


REDUCE_KINDS = ("sum", "max", "min", "abssum", "absmax")


@dataclass(frozen=True)
class Reduce(Stmt):
    """T.reduce_<kind>(src, dst, dim, clear): reduces `src` along `dim` into `dst`, whose
    shape is src's with that dim removed. With clear=False the result is combined with
    dst's current contents."""
    kind: str
    src: Buffer
    dst: Buffer
    dim: int
    clear: bool = True
    span: Span = _span()

    def effects(self) -> Effects:
        return Effects((Access(self.src, "read", whole=True),
                        Access(self.dst, "write" if self.clear else "update", whole=True)))


@dataclass(frozen=True)
class TileAtomic(Stmt):
    """T.atomic_add(C[i, j], C_f): atomically combines a whole tile into global memory
    (split-K). Elements outside the destination's bounds are dropped."""
    op: str
    dst: Region
    src: Region
    span: Span = _span()

    def effects(self) -> Effects:
        return self.src.access("read") | self.dst.access("update")


@dataclass(frozen=True)
class Prefetch(Stmt):
    """T.prefetch(A[r0:r1, c0:c1], part=p, parts=n): a hint that the global region will be
    read soon. The region's rows (all dims but the last) are cut into `parts` equal runs
    and part `p` of them is fetched into the cache, so a pipelined loop can spread the
    fetch of its next tiles over the iterations of its compute. No effect on values; an
    address past the tensor's end is harmless (a prefetch never faults)."""
    region: Region
    part: Expr
    parts: int = 1
    span: Span = _span()

    def effects(self) -> Effects:
        """Memory is read (into the cache); no value is."""
        return loads_in(self.part) | self.region.access("read")


# ----------------------------------------------------------------------------- multi-rank
# Spelled as TileScale spells them. A `pe` is a rank; -1 means this rank. Buffers reached
# on a peer live in a symmetric heap (same offset on every rank): the rank table, a
# launch argument, says where each peer's heap is mapped in this process.

@dataclass(frozen=True)
class PeerCopy(Stmt):
    """`T.put_block(T.address_of(src[..]), T.address_of(dst[..]), size, dst_pe)` (kind
    "put": dst is on rank `pe`) or `T.get_block(..., src_pe)` (kind "get": src is on rank
    `pe`): `size` contiguous elements from the start elements given, same dtype. The
    side on this rank may be a block-local tile."""
    kind: str                        # "put" | "get"
    src: Buffer
    src_indices: tuple[Expr, ...]
    dst: Buffer
    dst_indices: tuple[Expr, ...]
    size: Expr
    pe: Expr
    span: Span = _span()

    @property
    def remote(self) -> Buffer:
        return self.dst if self.kind == "put" else self.src

    def effects(self) -> Effects:
        return loads_in(*self.src_indices, *self.dst_indices, self.size, self.pe) | \
            Effects((Access(self.src, "read"), Access(self.dst, "write")))


SIGNAL_OPS = ("set", "add")


@dataclass(frozen=True)
class SignalOp(Stmt):
    """`T.signal_op(sig[i], value, "set" | "add", pe)` (`T.st(sig[i], value, dst_pe=pe)`
    is "set"): a release store / atomic add of one integer element on rank `pe`."""
    op: str
    buffer: Buffer
    indices: tuple[Expr, ...]
    value: Expr
    pe: Expr
    span: Span = _span()

    def effects(self) -> Effects:
        mode = "write" if self.op == "set" else "update"
        return loads_in(*self.indices, self.value, self.pe) | \
            Effects((Access(self.buffer, mode),))


WAIT_CMPS = ("eq", "ne", "ge", "le", "gt", "lt")


@dataclass(frozen=True)
class Wait(Stmt):
    """`T.wait_<cmp>(sig[i], expected, peer)`: spins (then backs off) until the element on
    rank `pe` compares `cmp` to `expected`; gives up after the run's timeout."""
    cmp: str
    buffer: Buffer
    indices: tuple[Expr, ...]
    expected: Expr
    pe: Expr
    span: Span = _span()

    def effects(self) -> Effects:
        return loads_in(*self.indices, self.expected, self.pe) | \
            Effects((Access(self.buffer, "read"),))


@dataclass(frozen=True)
class Barrier(Stmt):
    """`T.barrier_blocks(bar)`: every rank reaches it (bar: int32 symmetric, one word per
    rank; each arrival adds 1 to its word on every rank, then waits for all words)."""
    buffer: Buffer
    span: Span = _span()

    def effects(self) -> Effects:
        return Effects((Access(self.buffer, "update"),))


@dataclass(frozen=True)
class AtomicFetch(Stmt):
    """`var = T.atomic_add(buf[i], value, return_prev=True)`: an atomic read-modify-write
    that binds the previous value (like a Let) for the rest of the block."""
    var: Var
    op: str
    buffer: Buffer
    indices: tuple[Expr, ...]
    value: Expr
    span: Span = _span()

    def effects(self) -> Effects:
        return loads_in(*self.indices, self.value) | Effects((Access(self.buffer, "update"),))


RANK_STMTS = (PeerCopy, SignalOp, Wait, Barrier)


def first_rank_use(node: Node) -> Node | None:
    """The first rank query or multi-rank statement under `node` (pre-order), if any:
    such a kernel needs a target whose launches span ranks. (An atomic that returns the
    previous value is an atomic of one device.)"""
    from .visitor import walk
    for n in walk(node):
        if isinstance(n, RANK_STMTS) or is_peer_view(n) or (
                isinstance(n, Call) and n.name in RANK_QUERIES):
            return n
    return None


def is_peer_view(n: Node) -> bool:
    """A view of a tensor's copy on another rank (`T.Tensor(..., X.data, pe=r)`)."""
    return isinstance(n, Alloc) and n.pe is not None


# ----------------------------------------------------------------------------- functions

@dataclass(frozen=True)
class Kernel(Stmt):
    """`with T.Kernel(gx, gy, gz, threads=t) as (bx, by, bz)`: the block grid. Blocks are
    independent; `block_vars[i]` ranges over `0 .. grid[i]-1`. `raster` > 0 (from
    `T.use_swizzle(panel)`) asks for blocks launched in panels of that many grid rows
    (tcsim follows it; it changes no result)."""
    grid: tuple[Expr, ...]
    block_vars: tuple[Var, ...]
    threads: int
    body: Stmt
    raster: int = 0
    span: Span = _span()

    def effects(self) -> Effects:
        return loads_in(*self.grid) | self.body.effects().maybe()


@dataclass(frozen=True)
class PrimFunc(Node):
    """A kernel. `params` are Buffers (tensors) or Vars (scalars), in signature order.
    `symbols` are the symbolic sizes (T.dynamic) the signature uses, in first-use order.
    `body` is a Seq of Lets/Allocs of global workspaces (the prologue) followed by one or
    more Kernels, the grids, which run in order: each grid finishes before the next one
    starts, so a later grid reads what an earlier one wrote (split-KV, then combine)."""
    name: str
    params: tuple[Buffer | Var, ...]
    symbols: tuple[Var, ...]
    body: Stmt
    span: Span = _span()

    def items(self) -> list[Stmt]:
        """The body's statements with nested Seqs flattened."""
        out: list[Stmt] = []

        def flatten(s):
            if isinstance(s, Seq):
                for c in s.stmts:
                    flatten(c)
            else:
                out.append(s)
        flatten(self.body)
        return out

    def grids(self) -> list[Kernel]:
        """The Kernels of the body, in launch order."""
        return [s for s in self.items() if isinstance(s, Kernel)]

    def prologue(self) -> list[Stmt]:
        """The Lets and workspace Allocs that precede the first grid."""
        items = self.items()
        first = next((i for i, s in enumerate(items) if isinstance(s, Kernel)), len(items))
        return items[:first]


@dataclass(frozen=True)
class Module(Node):
    funcs: tuple[PrimFunc, ...]
    span: Span = _span()

    def func(self, name: str) -> PrimFunc:
        for f in self.funcs:
            if f.name == name:
                return f
        raise KeyError(name)


__all__ = ["Span", "Node", "Expr", "Const", "Var", "Binary", "Unary", "Call", "Cast", "BitCast", "Select", "Buffer", "Load", "Stmt", "Seq", "Let", "Alloc", "Store", "Atomic", "For", "If", "While", "Region", "Copy", "Gemm", "Fill", "Reduce", "TileAtomic", "Prefetch", "Kernel", "PrimFunc", "Module", "Access", "Effects", "loads_in", "ACCESS_MODES", "NO_SPAN", "PeerCopy", "SignalOp", "Wait", "Barrier", "AtomicFetch", "RANK_STMTS", "first_rank_use", "is_peer_view", "RANK_QUERIES", "SIGNAL_OPS", "WAIT_CMPS", "BINARY_OPS", "COMPARISONS", "INTRINSICS", "BINARY_INTRINSICS", "BIT_INTRINSICS", "SCOPES", "ATOMIC_OPS", "LOOP_KINDS", "EVICTION_POLICIES", "REDUCE_KINDS"]
