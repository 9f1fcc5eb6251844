"""Where a kernel's block-local memory lives: the stack, or one heap block per call.

Block-local buffers (`shared`, `fragment`, `local`, `var`) are allocas of `name__impl`
while they are small. A large tile (a 2048 x 2048 float32 fragment is 16 MiB) would
overflow the stack of the thread that runs the blocks (8 MiB for the main thread and the
runtime's workers, often less for a C caller's), so above `STACK_LIMIT` bytes in total
all of the kernel's block-local memory (the arenas `memory_reuse` planned and the
unplanned buffers) is laid out in one block taken with `aligned_alloc` when
`name__impl` starts and freed when it returns: once per `__blocks` call, that is once
per chunk of blocks a worker runs (benchmarks/local_memory.py measures the cost).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from llvmlite import ir

from ... import dtypes
from ...ir.nodes import Alloc, Const
from ...ir.visitor import walk
from ...diagnostics import codes_codegen as codes
from .context import user_error
from .types import I8, I64, PTR, VOID

STACK_LIMIT = 256 * 1024        # bytes of block-local memory a kernel may keep on the stack
HEAP_ALIGN = 64                 # the block's alignment (>= every buffer's claimed align)
MAX_LOCAL_BYTES = 1 << 30       # beyond this a kernel is refused at compile time (TL0590)


@dataclass
class LocalPlan:
    """`heap`: everything lives in one allocated block of `total` bytes; `offsets` maps
    an arena (`"arena.<scope>"`) or an unplanned buffer's name to its byte offset."""
    heap: bool = False
    total: int = 0
    offsets: dict = field(default_factory=dict)
    base: ir.Value | None = None            # the block's address (heap plans, once emitted)
    body: ir.Block | None = None            # where the kernel body starts (heap plans)


def block_local_bytes(kernel, arena_sizes: dict) -> tuple[int, list]:
    """(total bytes, [(name, bytes)] of the unplanned buffers) of a kernel."""
    unplanned = []
    for node in walk(kernel):
        if (isinstance(node, Alloc) and node.buffer.scope != "global"
                and node.offset is None and all(isinstance(d, Const) for d in node.buffer.shape)):
            count = max(1, prod(int(d.value) for d in node.buffer.shape))
            unplanned.append((node.buffer.name, count * dtypes.nbytes(node.buffer.dtype)))
    total = sum(size for size, _ in arena_sizes.values()) + sum(n for _, n in unplanned)
    return total, unplanned


def plan(kernel, arena_sizes: dict, func_name: str = "") -> LocalPlan:
    total, unplanned = block_local_bytes(kernel, arena_sizes)
    if total > MAX_LOCAL_BYTES:
        biggest = max(unplanned + [(f"the {s} arena", n) for s, (n, _) in arena_sizes.items()],
                      key=lambda item: item[1])
        raise user_error(codes.LOCAL_MEMORY_TOO_LARGE,
                         f"kernel {func_name!r} needs {total} bytes of block-local memory "
                         f"per block (more than {MAX_LOCAL_BYTES >> 30} GiB; the largest is "
                         f"{biggest[0]}, {biggest[1]} bytes)", kernel.span,
                         help="use smaller tiles, or keep large data in global memory")
    if total <= STACK_LIMIT:
        return LocalPlan()
    offsets, end = {}, 0
    items = [(f"arena.{scope}", size) for scope, (size, _) in arena_sizes.items()] + unplanned
    for name, size in items:
        offsets[name] = end
        end += -(-size // HEAP_ALIGN) * HEAP_ALIGN
    return LocalPlan(heap=True, total=max(end, HEAP_ALIGN), offsets=offsets)


def allocate(ctx, local: LocalPlan) -> None:
    """In a heap plan, take the block at the start of the body and continue in a fresh
    block; the addresses of arenas and buffers are computed in `ready`, between the two,
    so they dominate every use. Allocation failure cannot be reported through the void
    ABI, and on Linux it does not happen below MAX_LOCAL_BYTES (memory is overcommitted):
    trap rather than run on a null pointer."""
    if not local.heap:
        return
    b = ctx.builder
    alloc = _declare(ctx.module, "aligned_alloc", PTR, [I64, I64])
    local.base = b.call(alloc, [ir.Constant(I64, HEAP_ALIGN), ir.Constant(I64, local.total)],
                        name="local.block")
    failed = b.icmp_unsigned("==", b.ptrtoint(local.base, I64), ir.Constant(I64, 0))
    oom, ready, body = (ctx.new_block(n) for n in ("local.oom", "local.ready", "body"))
    b.cbranch(failed, oom, ready)
    trap = ir.IRBuilder(oom)
    trap.call(_declare(ctx.module, "llvm.trap", VOID, []), [])
    trap.unreachable()
    ctx.address_builder = ir.IRBuilder(ready)
    local.body = body
    b.position_at_end(body)


def release(ctx, local: LocalPlan) -> None:
    """Free the block before `name__impl` returns and close `ready` (heap plans only)."""
    if local.heap:
        ctx.builder.call(_declare(ctx.module, "free", VOID, [PTR]), [local.base])
        ctx.address_builder.branch(local.body)


def slot(ctx, name: str) -> ir.Value | None:
    """The address of arena / unplanned buffer `name` in a heap plan, else None."""
    local = ctx.local
    if local is None or not local.heap:
        return None
    return ctx.address_builder.gep(local.base, [ir.Constant(I64, local.offsets[name])],
                                   inbounds=True, source_etype=I8, name=name)


def _declare(module, name, ret, args):
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, list(args)), name=name)
    return fn
