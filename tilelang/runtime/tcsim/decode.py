"""Programs pre-decoded for the simulator: operands as (is_register, value) pairs,
jump targets resolved, static costs (MMA atoms, VEC elements) computed once.

The scalar unit then interprets a flat list of `DI` records without looking anything up
by name, which is what keeps an 8192^3 GEMM (millions of instructions) simulable.
"""
from __future__ import annotations

import math

from ...targets.tcsim.config import MachineConfig
from ...targets.tcsim.isa import Glob, Imm, Program, Reg, SemRef, Tile, Wait
from .runs import compile_dispatch, compile_regions, compile_runs
from .useful import vec_keys
from .vec_cost import vec_cycles

ENGINE_INDEX = {"DMA_IN": 0, "DMA_OUT": 1, "MMA": 2, "VEC": 3}
ENGINE_NAMES = ("DMA_IN", "DMA_OUT", "MMA", "VEC")


def spec(x):
    """(True, register index) or (False, immediate value) or None."""
    if x is None:
        return None
    if isinstance(x, Reg):
        return (True, x.index)
    if isinstance(x, Imm):
        return (False, x.value)
    return x


class TileSpec:
    __slots__ = ("buf", "decl", "stage", "dims", "shape", "elems", "slices")

    def __init__(self, t: Tile, decl):
        self.buf = t.buf
        self.decl = decl
        self.stage = spec(t.stage)
        self.dims = t.dims
        self.shape = t.shape(decl)                 # the tile named: box or whole buffer
        self.elems = math.prod(self.shape)
        self.slices = (tuple(slice(s, s + e) for s, e in t.box) if t.box is not None
                       else None)


class DI:
    """One decoded instruction."""
    __slots__ = ("op", "engine", "args", "jump", "tiles", "glob", "box", "stop", "waits",
                 "signal", "cycles", "flops", "mma_dtype", "attrs", "reads", "writes",
                 "line", "index", "elems", "kind", "fn", "operand_bytes",
                 "static_stages", "regs", "ta", "tb", "box_elems", "mcast", "run",
                 "wait_sems", "signal_sem", "latency", "smem_bytes", "esize", "to_smem",
                 "make_op", "block", "refill", "valid_keys")

    def __init__(self):
        self.jump = -1
        self.tiles = ()
        self.glob = None
        self.box = None
        self.stop = None            # DMA: per dim None or a scalar spec (masked tail)
        self.waits = ()
        self.signal = None
        self.cycles = 0
        self.flops = 0
        self.mma_dtype = None
        self.reads = ()
        self.writes = ()
        self.elems = 0
        self.kind = 0
        self.fn = None
        self.operand_bytes = {}     # MMA: level -> bytes of one stage of A and B read
        self.static_stages = None   # the tiles' stages when no register picks them
        self.regs = ()              # registers it reads or writes (the LDG scoreboard)
        self.ta = self.tb = False   # MMA: transposed operands
        self.box_elems = 0          # DMA: elements of the box
        self.mcast = False          # DMA.LD: one read for the whole cluster
        self.run = None             # (function, length): a compiled scalar run (runs.py)
        # precomputed for the engines: semaphores as indices into a block's flat list
        # (-1: the index is a register), the completion latency (MMA / VEC), the bytes
        # an MMA reads from shared memory, a DMA's element size and whether it lands
        # in shared memory
        self.wait_sems = ()         # ((flat, name, index spec, phase spec), ...)
        self.signal_sem = None      # (flat, name, index spec)
        self.latency = 0
        self.smem_bytes = 0
        self.esize = 0
        self.to_smem = False
        self.make_op = None         # (core, regs, ready, engine) -> Op (runs.py)
        self.block = None           # (core, regs, t) -> (pc, t, count): a region (runs.py)
        self.refill = 0             # see _refills
        self.valid_keys = None      # VEC with static stages: useful.vec_keys


def _operand(x, bufs):
    if isinstance(x, Tile):
        return TileSpec(x, bufs[x.buf])
    if isinstance(x, Glob):
        return (x.tensor, tuple(spec(s) for s in x.starts))
    if isinstance(x, SemRef):
        return (x.name, spec(x.index))
    return spec(x)


def sem_offsets(p: Program) -> dict[str, int]:
    """Where each semaphore array starts in a block's flat list of semaphores."""
    out, n = {}, 0
    for name, count in p.sems:
        out[name] = n
        n += count
    return out


def smem_levels(cfg: MachineConfig) -> set[str]:
    """The on-chip memories counted as "shared" traffic (all but the register file)."""
    return (set(cfg.mma_ab_levels) | set(cfg.dma_levels)) - {"RF"}


_DECODED: dict = {}          # (id(program), id(config)) -> (program, config, code)


def decoded(p: Program, cfg: MachineConfig) -> list[DI]:
    """`decode_program`, once per program and config: a kernel's grids, a run again at
    another clock and repeated launches reuse the decoded code (read-only once built;
    its compiled regions are the costly part)."""
    key = (id(p), id(cfg))
    hit = _DECODED.get(key)
    if hit is not None and hit[0] is p and hit[1] is cfg:
        return hit[2]
    code = decode_program(p, cfg)
    if len(_DECODED) >= 32:
        _DECODED.clear()
    _DECODED[key] = (p, cfg, code)
    return code


def decode_program(p: Program, cfg: MachineConfig) -> list[DI]:
    bufs = {b.name: b for b in p.buffers}
    offsets = sem_offsets(p)
    sizes = dict(p.sems)
    shared = smem_levels(cfg)
    dtypes = {x.name: x.dtype for x in p.params}
    out = []
    for i, ins in enumerate(p.code):
        d = DI()
        d.op, d.index, d.line = ins.op, i, ins.line
        d.engine = ENGINE_INDEX.get(ins.engine, -1)
        d.args = tuple(_operand(a, bufs) for a in ins.args)
        d.attrs = dict(ins.attrs)
        d.tiles = tuple(a for a in d.args if isinstance(a, TileSpec))
        if all(t.stage is None or (not t.stage[0] and 0 <= t.stage[1] < t.decl.stages)
               for t in d.tiles):
            d.static_stages = tuple(t.stage[1] if t.stage is not None else 0
                                    for t in d.tiles)
        if d.engine >= 0:
            _engine_fields(d, ins, cfg)
            _engine_constants(d, cfg, offsets, sizes, shared, dtypes)
            if d.engine == 3 and d.static_stages is not None and d.tiles:
                d.valid_keys = vec_keys(d.tiles, d.static_stages)
        else:
            _scalar_fields(d)
        d.regs = _registers(ins)
        out.append(d)
    # running off the end of the program halts (the same as a final HALT)
    end = DI()
    end.op, end.index, end.line, end.engine, end.args, end.attrs = "HALT", len(out), 0, -1, (), {}
    _scalar_fields(end)
    out.append(end)
    _resolve_jumps(out)
    for d in out:                 # before the regions, which build ops inline with them
        if d.engine >= 0:
            d.make_op = compile_dispatch(d)
    compile_runs(out, (K_BIN, K_UN, K_SEL), cfg.scalar_cycles)
    compile_regions(out, (K_BIN, K_UN, K_SEL), (K_IF, K_ELSE, K_ENDIF), cfg.scalar_cycles,
                    cfg.queue_depth, K_LDG, K_ENDLOOP)
    _refills(out, cfg.scalar_cycles)
    return out


def _refills(code, cycles: float) -> None:
    """`refill` of an engine instruction: the scalar unit's time from it to the next
    instruction for the same engine (`cycles` each), when only scalar ALU instructions
    lie between (no branch, load or semaphore: nothing another unit sees), else 0. A
    unit resumed there by a pop of that engine's full queue dispatches it, runs those,
    and stops at the next one, whose queue is full again (events.py runs that at the
    pop)."""
    for pc, d in enumerate(code):
        if d.engine < 0:
            continue
        j = pc + 1
        while j < len(code) and code[j].engine < 0 and code[j].kind in (K_BIN, K_UN, K_SEL):
            j += 1
        if j < len(code) and code[j].engine == d.engine:
            d.refill = (j - pc) * cycles


def _flat(name, idx, offsets, sizes) -> int:
    """A semaphore's place in the flat list, when its index is a constant in range."""
    if idx is None:
        return offsets[name]
    if not idx[0] and 0 <= idx[1] < sizes[name]:
        return offsets[name] + idx[1]
    return -1


def _engine_constants(d: DI, cfg, offsets, sizes, shared, dtypes) -> None:
    d.wait_sems = tuple((_flat(n, i, offsets, sizes), n, i, p) for n, i, p in d.waits)
    if d.signal is not None:
        d.signal_sem = (_flat(*d.signal, offsets, sizes),) + tuple(d.signal)
    d.latency = cfg.mma_latency if d.engine == 2 else cfg.vec_latency
    d.smem_bytes = sum(n for lv, n in d.operand_bytes.items() if lv in shared)
    if d.glob is not None:
        from ...dtypes import nbytes
        d.esize = nbytes(dtypes[d.glob[0]])
        d.to_smem = d.tiles[0].decl.level in shared


def _registers(ins) -> tuple[int, ...]:
    """Every register an instruction names (operands, stages, box starts, semaphore
    indices, wait phases): what it must not touch while a scalar load fills it."""
    found = []

    def visit(x):
        if isinstance(x, Reg):
            found.append(x.index)
        elif isinstance(x, Tile):
            visit(x.stage)
        elif isinstance(x, Glob):
            for s in x.starts:
                visit(s)
        elif isinstance(x, SemRef):
            visit(x.index)
        elif isinstance(x, tuple):
            for y in x:
                visit(y)
        elif isinstance(x, Wait):
            visit(x.sem)
            visit(x.phase)
    for a in ins.args:
        visit(a)
    for _, v in ins.attrs:
        visit(v)
    return tuple(dict.fromkeys(found))


def _engine_fields(d: DI, ins, cfg: MachineConfig) -> None:
    waits = ins.attr("wait") or ()
    d.waits = tuple((w.sem.name, spec(w.sem.index), spec(w.phase)) for w in waits)
    sig = ins.attr("signal")
    d.signal = (sig.name, spec(sig.index)) if sig is not None else None
    for a in ins.args:
        if isinstance(a, Glob):
            d.glob = (a.tensor, tuple(spec(s) for s in a.starts))
    d.box = ins.attr("box")
    if d.box is not None:
        d.box = tuple(d.box)            # hashable: a key of the L2's box memo
        d.box_elems = math.prod(d.box)
    d.ta, d.tb = bool(ins.attr("ta")), bool(ins.attr("tb"))
    d.mcast = bool(ins.attr("mcast"))
    stop = ins.attr("stop")
    d.stop = tuple(spec(x) for x in stop) if stop is not None else None
    op, tiles = d.op, d.tiles
    if op == "MMA":
        c, a, b = tiles
        m, k = (a.shape[1], a.shape[0]) if ins.attr("ta") else a.shape
        n = c.shape[1]
        dt = a.decl.dtype
        atoms = (math.ceil(m / cfg.atom_m) * math.ceil(n / cfg.atom_n)
                 * math.ceil(k / cfg.atom_k(dt)))
        d.cycles = max(cfg.issue_interval, atoms * cfg.atom_cycles(dt))
        d.flops = 2 * m * n * k
        d.mma_dtype = dt
        for t in (a, b):
            lv = t.decl.level
            nbytes = t.elems * t.decl.nbytes() / (t.decl.stages * t.decl.stage_elems)
            d.operand_bytes[lv] = d.operand_bytes.get(lv, 0) + nbytes
        if cfg.smem_bytes_per_clk:
            fetch = _mma_smem_fetch(a, b, m, n, cfg)
            d.cycles = max(d.cycles, math.ceil(fetch / cfg.smem_bytes_per_clk))
        d.reads, d.writes = (a, b, c), (c,)
    elif op in ("DMA.LD",):
        d.writes = (tiles[0],)
    elif op == "DMA.ST":
        d.reads = (tiles[0],)
    elif d.engine == 3 or op == "ACC.ZERO":
        _vec_fields(d, ins, cfg)


# the widest N one tensor-core instruction covers (Hopper's wgmma: m64 nN k16, N <= 256)
MMA_INSTR_N = 256


def _mma_smem_fetch(a, b, m: int, n: int, cfg: MachineConfig) -> float:
    """Bytes an MMA's instructions read from shared memory. Each instruction multiplies
    `atom_m` rows of A by at most MMA_INSTR_N columns of B over its K slice, reading
    both slices from where they live: A (when not in registers) once per N chunk, B
    once per `atom_m` rows. The shared-memory path delivers `smem_bytes_per_clk`, so a
    narrow tile with both operands in shared memory (64 x 32 over K) cannot run its
    tensor core at full rate: it needs 192 bytes a clock where 128 arrive."""
    shared = smem_levels(cfg)
    total = 0.0
    for t, times in ((a, math.ceil(n / MMA_INSTR_N)), (b, math.ceil(m / cfg.atom_m))):
        if t.decl.level in shared:
            total += times * t.elems * t.decl.nbytes() / (t.decl.stages * t.decl.stage_elems)
    return total


def _vec_fields(d: DI, ins, cfg: MachineConfig) -> None:
    tiles = d.tiles
    dst = tiles[0]
    shape = ins.attr("shape")
    if d.op.startswith("VEC.RED."):
        elems = tiles[1].elems
        d.reads = (tiles[1], dst) if ins.attr("acc") else (tiles[1],)
    else:
        elems = math.prod(shape) if shape else dst.elems
        d.reads = tiles[1:]
    d.writes = (dst,)
    d.elems = elems
    if d.op == "ACC.ZERO":
        d.cycles = max(cfg.issue_interval, math.ceil(elems / cfg.vec_elems_per_clk))
    else:
        d.cycles = vec_cycles(cfg, d.op, elems, dst, tiles[1:])


# scalar kinds, for the interpreter's dispatch; from K_SEM on, those that wait for the
# global clock (they depend on, or change, state other units see)
(K_BIN, K_UN, K_SEL, K_LOOP, K_ENDLOOP, K_IF, K_ELSE, K_ENDIF, K_LDG, K_LDS, K_BREAKZ,
 K_SEM, K_FENCE, K_HALT, K_ATOM) = range(1, 16)
_KINDS = {"SEL": K_SEL, "LDG": K_LDG, "ATOM.ADD": K_ATOM, "LDS": K_LDS, "BREAKZ": K_BREAKZ, "LOOP": K_LOOP, "ENDLOOP": K_ENDLOOP, "IF": K_IF, "ELSE": K_ELSE,
          "ENDIF": K_ENDIF, "FENCE": K_FENCE, "HALT": K_HALT}


def _scalar_fields(d: DI) -> None:
    from .numerics import SCALAR_BIN, SCALAR_UN, scalar_bitcast
    if d.op == "BITCAST":
        d.kind, d.fn = K_UN, scalar_bitcast(d.attrs["src"], d.attrs["dst"])
    elif d.op in SCALAR_BIN:
        d.kind, d.fn = K_BIN, SCALAR_BIN[d.op]
    elif d.op in SCALAR_UN:
        d.kind, d.fn = K_UN, SCALAR_UN[d.op]
    elif d.op.startswith("SEM."):
        d.kind = K_SEM
    else:
        d.kind = _KINDS[d.op]


def _resolve_jumps(code: list[DI]) -> None:
    """LOOP -> its ENDLOOP; ENDLOOP -> its LOOP; IF -> its ELSE or ENDIF; ELSE -> ENDIF;
    BREAKZ -> the ENDLOOP of its innermost LOOP."""
    stack, breaks = [], []
    for i, d in enumerate(code):
        if d.op == "BREAKZ":
            loop = next(j for j in reversed(stack) if code[j].op == "LOOP")
            breaks.append((i, loop))
        elif d.op in ("LOOP", "IF"):
            stack.append(i)
        elif d.op == "ELSE":
            code[stack[-1]].jump = i
            stack[-1] = i
        elif d.op in ("ENDLOOP", "ENDIF"):
            j = stack.pop()
            code[j].jump = i
            d.jump = j
    for i, loop in breaks:
        code[i].jump = code[loop].jump
