"""The exported entry points of one kernel (docs/interfaces.md, "CPU codegen").

    name__impl        internal: typed arguments (tensors `noalias`), runs blocks begin..end
    name__blocks      void (const int64_t *args, int64_t begin, int64_t end)
    name__num_blocks  int64_t (const int64_t *args)
    name              void (T0 *p0, ..., int64_t sym0, ...): every grid, for C callers

A kernel of several grids exports blocks / num_blocks for each: grid 0 under the names
above, grid g under `name__grid<g>__blocks` / `name__grid<g>__num_blocks` (the manifest
lists them); the C entry runs the grids one after another.

`args` slots: one per parameter (tensor address; integer/bool sign-extended; float as the
bits of a double), one per symbolic size, one per global workspace, and for a kernel that
uses ranks (T.get_rank, T.put_block, ...) a last one: the address of the rank table.
"""
from __future__ import annotations

from llvmlite import ir

from ... import dtypes
from ...ir.nodes import Alloc, Buffer, Kernel, Let, PrimFunc, Seq
from . import convert, localmem, streaming
from .arena import declare_arenas, mark_disjoint
from .context import BufferSlot, FuncContext, entry_alloca, internal, user_error
from .ranks import rank_sites, uses_ranks
from .stmt import StmtEmitter
from .types import F32, F64, I8, I64, PTR, VOID, compute_type
from ...diagnostics import codes_codegen as codes


def split_body(func: PrimFunc) -> tuple[list, list[Kernel]]:
    """(prologue Lets / workspace Allocs, the grids in launch order) of a function."""
    prologue, grids = func.prologue(), func.grids()
    if not grids or len(prologue) + len(grids) != len(func.items()):
        raise internal(f"{func.name}: the body must be a prologue followed by T.Kernel grids")
    for s in prologue:
        if not isinstance(s, (Let, Alloc)):
            raise user_error(codes.UNSUPPORTED_NODE,
                             f"{type(s).__name__} before T.Kernel in {func.name!r}: only "
                             f"assignments and T.alloc_global may precede the kernel", s.span)
    return prologue, grids


def grid_symbols(name: str, g: int) -> tuple[str, str]:
    """(blocks, num_blocks) entry names of grid `g` of kernel `name`; grid 0 keeps the
    one-grid names, so a kernel of one grid exports what it always did."""
    stem = name if g == 0 else f"{name}__grid{g}"
    return f"{stem}__blocks", f"{stem}__num_blocks"


def workspaces(prologue) -> list[Buffer]:
    return [s.buffer for s in prologue if isinstance(s, Alloc) and s.source is None]


def c_scalar_type(dtype: str) -> ir.Type:
    """LLVM type of a scalar parameter of the C entry (low-precision floats: float)."""
    if dtype == "float64":
        return F64
    if dtypes.is_float(dtype):
        return F32
    if dtype == "bool":
        return I8
    return compute_type(dtype)


# ----------------------------------------------------------------------------- helpers

def _function(module, name, ret, argtys, internal_linkage=False):
    fn = ir.Function(module, ir.FunctionType(ret, argtys), name=name)
    if internal_linkage:
        fn.linkage = "internal"
    entry, start = fn.append_basic_block("entry"), fn.append_basic_block("start")
    ctx = FuncContext(module, fn, ir.IRBuilder(start), ir.IRBuilder(entry))
    return fn, ctx, StmtEmitter(ctx)


def _finish(ctx: FuncContext) -> None:
    """Close the entry block (which holds the allocas) by jumping to the body."""
    ctx.alloca_builder.branch(ctx.fn.basic_blocks[1])


def _bind_tensor(em: StmtEmitter, buf: Buffer, ptr) -> None:
    dims = [em.index64(d) for d in buf.shape]
    em.ctx.buffers[buf.name] = BufferSlot(ptr, dims, dtypes.nbytes(buf.dtype))


def _run_prologue(em: StmtEmitter, prologue, ws_ptrs) -> None:
    """Prologue Lets into the environment, workspaces bound to their pointers."""
    ws = iter(ws_ptrs)
    for s in prologue:
        if isinstance(s, Let) or s.source is not None:      # a let, a view
            em.stmt(s)
        else:
            _bind_tensor(em, s.buffer, next(ws))


def _load_slot(b: ir.IRBuilder, args, i: int) -> ir.Value:
    ptr = b.gep(args, [ir.Constant(I64, i)], inbounds=True, source_etype=I64)
    return b.load(ptr, typ=I64, align=8)


def _slot_to_scalar(b: ir.IRBuilder, raw, dtype: str) -> ir.Value:
    if dtypes.is_float(dtype):
        return convert.cast(b, b.bitcast(raw, F64), "float64", dtype)
    return convert.cast(b, raw, "int64", dtype)


def _unpack(em: StmtEmitter, func: PrimFunc, args, prologue) -> list:
    """Bind every parameter, symbol and workspace from the args array; returns the
    values in impl-argument order."""
    b, values = em.b, []
    for i, p in enumerate(func.params):
        raw = _load_slot(b, args, i)
        values.append(b.inttoptr(raw, PTR) if isinstance(p, Buffer)
                      else _slot_to_scalar(b, raw, p.dtype))
    base = len(func.params)
    for j, sym in enumerate(func.symbols):
        values.append(_load_slot(b, args, base + j))
    base += len(func.symbols)
    for k, _ in enumerate(workspaces(prologue)):
        values.append(b.inttoptr(_load_slot(b, args, base + k), PTR))
    if uses_ranks(func):
        values.append(b.inttoptr(_load_slot(b, args, base + len(workspaces(prologue))), PTR))
    return values


def _bind_all(em: StmtEmitter, func: PrimFunc, prologue, values) -> None:
    """Environment and buffers from impl-ordered values (see `_unpack`)."""
    it = iter(values)
    tensors = []
    for p in func.params:
        v = next(it)
        if isinstance(p, Buffer):
            tensors.append((p, v))
        else:
            em.ctx.env[p] = v
    for sym in func.symbols:
        em.ctx.env[sym] = convert.cast(em.b, next(it), "int64", sym.dtype)
    for buf, ptr in tensors:
        _bind_tensor(em, buf, ptr)
    rest = list(it)
    if uses_ranks(func):
        em.ctx.rank_table = rest.pop()
        em.ctx.rank_sites = {id(n): i for i, n in enumerate(rank_sites(func))}
    _run_prologue(em, prologue, rest)


def _impl_types(func: PrimFunc, prologue) -> list:
    tys = [PTR if isinstance(p, Buffer) else compute_type(p.dtype) for p in func.params]
    tys += [I64] * len(func.symbols)
    tys += [PTR] * len(workspaces(prologue))
    if uses_ranks(func):
        tys.append(PTR)                       # the rank table
    return tys


def _grid_sizes(em: StmtEmitter, kernel: Kernel) -> list:
    return [em.expr_as(g, "int64") for g in kernel.grid]


# ----------------------------------------------------------------------------- functions

def _emit_impl(module, func: PrimFunc, prologue, kernel: Kernel, g: int) -> ir.Function:
    tys = _impl_types(func, prologue)
    name = f"{func.name}__impl" + (str(g) if g else "")
    fn, ctx, em = _function(module, name, VOID, tys + [I64, I64], True)
    for arg, ty in zip(fn.args, tys):
        if ty == PTR:
            arg.add_attribute("noalias")   # the runtime rejects overlapping tensors
    _bind_all(em, func, prologue, fn.args[:len(tys)])
    begin, end = fn.args[len(tys)], fn.args[len(tys) + 1]
    declare_arenas(ctx, kernel, func.name)     # once per call: reused by all blocks begin..end-1
    sizes = _grid_sizes(em, kernel)
    ctx.streams = streaming.uses_streams(kernel.body)
    em.counted_loop(I64, begin, end, lambda blk: _block(em, kernel, sizes, blk), name="block")
    if ctx.streams:        # the caller (the pool's join, a peer) sees every line written
        streaming.fence(em)
    localmem.release(ctx, ctx.local)
    em.b.ret_void()
    _finish(ctx)
    mark_disjoint(ctx)
    return fn


def _block(em: StmtEmitter, kernel: Kernel, sizes, blk) -> None:
    """Bind bx, by, bz for linear block `blk` (bx fastest) and emit the kernel body."""
    b, rest = em.b, blk
    for i, var in enumerate(kernel.block_vars):
        last = i == len(kernel.block_vars) - 1
        idx = rest if last else b.urem(rest, sizes[i])
        if not last:
            rest = b.udiv(rest, sizes[i])
        em.ctx.env[var] = convert.cast(b, idx, "int64", var.dtype)
    em.stmt(kernel.body)


def _emit_blocks(module, func, prologue, impl, g: int) -> ir.Function:
    fn, ctx, em = _function(module, grid_symbols(func.name, g)[0], VOID, [PTR, I64, I64])
    values = _unpack(em, func, fn.args[0], prologue)
    em.b.call(impl, values + [fn.args[1], fn.args[2]])
    em.b.ret_void()
    _finish(ctx)
    return fn


def _emit_num_blocks(module, func, prologue, kernel, g: int) -> ir.Function:
    fn, ctx, em = _function(module, grid_symbols(func.name, g)[1], I64, [PTR])
    _bind_all(em, func, prologue, _unpack(em, func, fn.args[0], prologue))
    total = ir.Constant(I64, 1)
    for size in _grid_sizes(em, kernel):
        clamped = em.b.select(em.b.icmp_signed("<", size, ir.Constant(I64, 0)),
                              ir.Constant(I64, 0), size)
        total = em.b.mul(total, clamped)
    em.b.ret(total)
    _finish(ctx)
    return fn


def _to_slot(b: ir.IRBuilder, value, param) -> ir.Value:
    """A C-entry argument -> its int64 args slot."""
    if isinstance(param, Buffer):
        return b.ptrtoint(value, I64)
    dt = param.dtype
    if dtypes.is_float(dt):
        wide = value if value.type == F64 else b.fpext(value, F64)
        return b.bitcast(wide, I64)
    if dt == "bool":
        return b.zext(b.icmp_unsigned("!=", value, ir.Constant(I8, 0)), I64)
    return convert.cast(b, value, dt, "int64")


def _c_param_value(b: ir.IRBuilder, value, param) -> ir.Value:
    """A C-entry argument -> the compute value the kernel sees."""
    if isinstance(param, Buffer):
        return value
    if param.dtype == "bool":
        return b.icmp_unsigned("!=", value, ir.Constant(I8, 0))
    src = "float64" if value.type == F64 else ("float32" if value.type == F32 else param.dtype)
    return convert.cast(b, value, src, param.dtype)


def _emit_c_entry(module, func, prologue, entries) -> ir.Function:
    """The C entry: binds the arguments, allocates the workspaces once, then runs every
    grid whole, in order (`entries`: its (blocks, num_blocks) functions)."""
    ptys = [PTR if isinstance(p, Buffer) else c_scalar_type(p.dtype) for p in func.params]
    ranked = uses_ranks(func)
    fn, ctx, em = _function(module, func.name, VOID,
                            ptys + [I64] * len(func.symbols) + [PTR] * ranked)
    b, ws = em.b, workspaces(prologue)
    nslots = len(func.params) + len(func.symbols) + len(ws) + ranked
    args = entry_alloca(ctx, ir.ArrayType(I64, max(1, nslots)), "args", 8)

    def put(i, v):
        b.store(v, b.gep(args, [ir.Constant(I64, i)], inbounds=True, source_etype=I64), align=8)

    params = fn.args[:len(func.params)]
    syms = fn.args[len(func.params):len(func.params) + len(func.symbols)]
    if ranked:       # the C caller passes the rank table last
        put(nslots - 1, b.ptrtoint(fn.args[-1], I64))
    for i, (p, v) in enumerate(zip(func.params, params)):
        put(i, _to_slot(b, v, p))
    for j, v in enumerate(syms):
        put(len(func.params) + j, v)
    # the workspace sizes may use scalars, symbols and prologue values: bind them
    _bind_all(em, func, [s for s in prologue if isinstance(s, Let)],
              [_c_param_value(b, v, p) for p, v in zip(func.params, params)] + list(syms)
              + ([fn.args[-1]] if ranked else []))
    ptrs = _alloc_workspaces(em, prologue, ws, put, len(func.params) + len(func.symbols))
    for blocks, num_blocks in entries:
        n = b.call(num_blocks, [args])
        b.call(blocks, [args, ir.Constant(I64, 0), n])
    free = convert.intrinsic(module, "free", VOID, [PTR])
    for p in ptrs:
        b.call(free, [p])
    b.ret_void()
    _finish(ctx)
    return fn


def _alloc_workspaces(em, prologue, ws, put, first_slot) -> list:
    """calloc each workspace (zeroed, as the ABI promises); on failure the kernel is
    not run and the call returns (the header documents this)."""
    b, ctx = em.b, em.ctx
    calloc = convert.intrinsic(ctx.module, "calloc", PTR, [I64, I64])
    ptrs = []
    for k, buf in enumerate(ws):
        count = ir.Constant(I64, 1)
        for d in buf.shape:
            count = b.mul(count, em.expr_as(d, "int64"))
        count = b.select(b.icmp_signed("<", count, ir.Constant(I64, 1)),
                         ir.Constant(I64, 1), count)
        p = b.call(calloc, [count, ir.Constant(I64, dtypes.nbytes(buf.dtype))])
        failed = b.icmp_unsigned("==", b.ptrtoint(p, I64), ir.Constant(I64, 0))
        ok_bb, fail_bb = ctx.new_block("ws.ok"), ctx.new_block("ws.fail")
        b.cbranch(failed, fail_bb, ok_bb)
        b.position_at_end(fail_bb)
        free = convert.intrinsic(ctx.module, "free", VOID, [PTR])
        for q in ptrs:
            b.call(free, [q])
        b.ret_void()
        b.position_at_end(ok_bb)
        put(first_slot + k, b.ptrtoint(p, I64))
        ptrs.append(p)
    return ptrs


def emit_kernel(module: ir.Module, func: PrimFunc) -> None:
    """The entry points of `func` into `module`: blocks / num_blocks per grid, the C
    entry that runs them all."""
    prologue, grids = split_body(func)
    entries = []
    for g, kernel in enumerate(grids):
        impl = _emit_impl(module, func, prologue, kernel, g)
        entries.append((_emit_blocks(module, func, prologue, impl, g),
                        _emit_num_blocks(module, func, prologue, kernel, g)))
    _emit_c_entry(module, func, prologue, entries)


def emit_manifest_getter(module: ir.Module, text: str) -> None:
    """`const char *tilelang_manifest(void)` returning the JSON text."""
    data = bytearray(text.encode("utf-8")) + b"\0"
    ty = ir.ArrayType(I8, len(data))
    g = ir.GlobalVariable(module, ty, name="tilelang_manifest_json")
    g.global_constant = True
    g.linkage = "internal"
    g.initializer = ir.Constant(ty, data)
    g.type = PTR   # an opaque pointer, as the function returns
    fn = ir.Function(module, ir.FunctionType(PTR, []), name="tilelang_manifest")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(g)


__all__ = ["emit_kernel", "emit_manifest_getter", "split_body", "grid_symbols", "workspaces",
           "c_scalar_type"]
