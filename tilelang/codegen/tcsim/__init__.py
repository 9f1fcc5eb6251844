"""IR -> tcsim programs (the simulated tensor-core accelerator's ISA).

    compile_module(module, config=DEFAULT_CONFIG, raster=0) -> {kernel name: Artifact}

Input: the tile-level IR of the tcsim pipeline (`targets/tcsim/pipeline.py`: tile ops
still whole, on-chip buffers placed by `memory_reuse`). Each kernel becomes one program
(a kernel of several grids, one per grid): block indices in r0..r2, symbolic sizes and
scalar parameters preloaded, tile ops lowered by stmts.py / vec.py / pipeline.py with
the synchronisation of emit.py.
"""
from __future__ import annotations

from ...diagnostics import ArtifactError, Diagnostic, TileLangError
from ...diagnostics.codes_tcsim import DOES_NOT_FIT, UNKNOWN_CONFIG
from ...ir.nodes import Alloc, Buffer, Const, Gemm, Let, Var
from ...ir.visitor import substitute, walk
from ...targets.tcsim.artifact import Artifact, check_fits
from ...targets.tcsim.config import DEFAULT_CONFIG, ConfigError, get_config
from ...targets.tcsim.isa import Param, Program, Reg
from .cluster import ClusterVarying
from .emit import Emitter
from .levels import LevelPlan
from .scalar import grid_text, unsupported
from .stmts import StmtLowering

__all__ = ["compile_module", "compile_func"]


def compile_module(module, config=DEFAULT_CONFIG, *, raster: int = 0,
                   cluster=(1, 1, 1)) -> dict:
    """Every kernel of `module` as a tcsim Artifact for machine `config` (a name or a
    MachineConfig; an unknown name is TL0805). `raster` > 0 launches blocks in panels of
    that many rows of the grid's y axis (L2 reuse). `cluster=(cx, cy[, cz])` launches
    blocks in thread-block clusters, and the loads their blocks share become multicast
    loads (cluster.py)."""
    cluster = _cluster_dims(cluster)
    try:
        cfg = get_config(config)
    except ConfigError as e:
        raise TileLangError(Diagnostic(UNKNOWN_CONFIG, str(e))) from None
    out = {}
    for f in module.funcs:
        # T.use_swizzle sets a grid's raster; the raster option wins
        progs = [compile_func(f, cfg, raster=raster or k.raster, cluster=cluster, grid=g)
                 for g, k in enumerate(f.grids())]
        for prog in progs:
            try:
                check_fits(prog, cfg)
            except ArtifactError as e:
                raise TileLangError(Diagnostic(DOES_NOT_FIT, str(e), help=(
                    "use smaller tiles or fewer pipeline stages"))) from None
        out[f.name] = Artifact(progs[0], cfg.name, tuple(progs[1:]))
    return out


def _cluster_dims(cluster) -> tuple[int, int, int]:
    dims = tuple(int(c) for c in cluster) + (1,) * (3 - len(tuple(cluster)))
    if len(dims) != 3 or min(dims) < 1:
        raise ValueError(f"cluster must be 1 to 3 positive block counts, not {cluster!r}")
    return dims


def compile_func(f, cfg, raster: int = 0, cluster=(1, 1, 1), grid: int = 0) -> Program:
    """The program of grid `grid` of `f` (a kernel of several grids is one program per
    grid, run in order on the same tensors and workspaces)."""
    plan = LevelPlan(cfg)
    cluster = _cluster_dims(cluster)
    first = _lower(f, None, None, raster, plan, cluster, grid)   # pass 1: who touches what
    groups = alias_groups(first.program.buffers)
    return _lower(f, first.table_seen, groups, raster, plan, cluster, grid).program


class _Result:
    def __init__(self, program, table_seen):
        self.program, self.table_seen = program, table_seen


def alias_groups(buffers) -> dict:
    """name -> representative for buffers of one level whose arena bytes overlap (they
    have disjoint lifetimes in program order, but engines run ahead of the program)."""
    parent = {b.name: b.name for b in buffers}

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x
    placed = [b for b in buffers if b.offset is not None]
    for i, a in enumerate(placed):
        for b in placed[i + 1:]:
            if a.level == b.level and a.offset < b.offset + b.nbytes() \
                    and b.offset < a.offset + a.nbytes():
                parent[find(b.name)] = find(a.name)
    return {n: find(n) for n in parent}


def _lower(f, table, groups, raster, plan, cluster=(1, 1, 1), index: int = 0) -> _Result:
    em = Emitter(table, groups)
    env, params = {}, []
    kernel, pre = f.grids()[index], f.prologue()
    if len(kernel.block_vars) < sum(1 for c in cluster if c > 1):
        raise unsupported(kernel, f"a cluster over {len(kernel.block_vars)}-D grid")
    block_regs = []
    for v in kernel.block_vars:
        r = em.reg()
        env[v] = Reg(r)
        block_regs.append(r)
    while len(block_regs) < 3:
        block_regs.append(em.reg())
    symbols = []
    for s in f.symbols:
        r = em.reg()
        env[s] = Reg(r)
        symbols.append((s.name, r))
    for p in f.params:
        if isinstance(p, Var):
            r = em.reg()
            env[p] = Reg(r)
            params.append(Param(p.name, "scalar", p.dtype, (), r))
        else:
            params.append(Param(p.name, "tensor", p.dtype, _shape(p)))
    st = StmtLowering(em, env, plan)
    st.kernel_body = kernel.body
    st.cluster = ClusterVarying(kernel, cluster)
    gemms = [n for n in walk(kernel.body) if isinstance(n, Gemm)]
    st.accumulators = {n.c.buffer.name for n in gemms}
    st.gemm_operands = {r.buffer.name for n in gemms for r in (n.a, n.b)}
    lets = {}
    for s in pre:                                   # lets, global workspaces, views
        if isinstance(s, Alloc) and s.buffer.scope == "global" and s.source is None:
            params.append(Param(s.buffer.name, "workspace", s.buffer.dtype,
                                _shape(s.buffer, lets)))
        else:
            st.stmt(s)
            if isinstance(s, Let):
                lets[s.var] = substitute(s.value, lets)
    st.stmt(kernel.body)
    params += st.view_params
    em.emit("HALT")
    code = em.prologue() + em.code
    grid = tuple(grid_text(g) for g in kernel.grid) + ("1",) * (3 - len(kernel.grid))
    name = f.name if index == 0 else f"{f.name}__grid{index}"
    prog = Program(name, tuple(params), tuple(symbols), grid, tuple(block_regs),
                   tuple(em.buffers.values()), (("done", 4),), tuple(code), raster,
                   max(em.nregs, 1), kernel.threads, cluster)
    return _Result(prog, {k: frozenset(v) for k, v in em.seen.items()})


def _shape(b: Buffer, lets=None) -> tuple:
    """Dims as ints, symbol names or (workspaces) size expressions over the symbols,
    prologue lets replaced by their values."""
    out = []
    for d in b.shape:
        if isinstance(d, Const):
            out.append(int(d.value))
        elif isinstance(d, Var) and d not in (lets or {}):
            out.append(d.name)
        elif lets is not None:
            out.append(grid_text(substitute(d, lets)))
        else:
            out.append(grid_text(d))           # a size expression of the symbols
    return tuple(out)

