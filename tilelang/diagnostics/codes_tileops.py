"""TL03xx: tile operations and kernel structure."""
from .codes import register

KERNEL_MISSING = register("TL0301", "kernel has no T.Kernel", """
Every `@T.prim_func` contains at least one `with T.Kernel(gx, gy, ...) as (bx, by):`
that launches its grid of blocks; the work of the kernel goes inside it.
""")
KERNEL_TWICE = register("TL0302", "statement between T.Kernel grids", """
A prim_func is its prologue (lets, `T.alloc_global` workspaces) followed by one or more
grids, `with T.Kernel(...)` blocks that run one after another (each finishes before the
next starts: a split pass, then a combine). Nothing else may stand between or after the
grids: move lets and workspaces before the first `T.Kernel`, or into a grid's body.
""")
KERNEL_NESTED = register("TL0303", "nested T.Kernel", """
`with T.Kernel(...)` cannot appear inside another `T.Kernel` (or inside a loop or
`if`): it is the top-level grid of the kernel.
""")
ITER_OUTSIDE_FOR = register("TL0304", "loop iterator used outside a for", """
`T.Parallel`, `T.Pipelined`, `T.serial`, `T.unroll`, `T.vectorized` and `range` describe
loops: they are only valid as the iterable of a `for` statement.
""")
TILEOP_OUTSIDE_KERNEL = register("TL0305", "tile operation outside T.Kernel", """
Tile operations (`T.copy`, `T.gemm`, `T.fill`, `T.reduce_*`, atomics) and buffer stores
run on a block: put them inside the `with T.Kernel(...)` body.
""")
ALLOC_OUTSIDE_KERNEL = register("TL0306", "block-local allocation outside T.Kernel", """
`T.alloc_shared`, `T.alloc_fragment`, `T.alloc_local` and `T.alloc_var` allocate memory
of one block, so they belong inside `with T.Kernel(...)`. Workspaces in global memory
shared by all blocks are allocated with `T.alloc_global` before the kernel.
""")
RETURN_IN_KERNEL = register("TL0307", "return in a prim_func", """
A kernel produces its results by writing to its tensor parameters; it does not
return a value. Remove the `return` (use `out_idx` to get outputs back in Python).
""")
WRONG_ARITY = register("TL0308", "wrong number of arguments", """
A `T.` function or a macro was called with too few or too many positional arguments.
The message shows the expected signature.
""")
UNKNOWN_KEYWORD = register("TL0309", "unknown keyword argument", """
A `T.` function was called with a keyword argument it does not have, or was given
the same argument twice. The message lists the accepted keywords.
""")
STMT_OUTSIDE_KERNEL = register("TL0310", "statement not allowed outside T.Kernel", """
Before `with T.Kernel(...)` a prim_func may only bind scalars (`x = M * 2`) and
allocate global workspaces (`T.alloc_global`); nothing may follow the kernel.
Loops, stores and tile operations go inside the kernel.
""")
TARGET_COUNT = register("TL0311", "wrong number of loop or block variables", """
`for i, j in T.Parallel(M, N)` binds one variable per extent, and
`with T.Kernel(gx, gy) as (bx, by)` one block index per grid dimension.
""")
NOT_ITERABLE = register("TL0312", "for loop over something that is not a loop", """
The iterable of a `for` must be `range(...)`, `T.serial`, `T.Parallel`, `T.Pipelined`,
`T.unroll` or `T.vectorized`.
""")
BAD_WITH = register("TL0313", "unsupported with statement", """
The only `with` statement of the language is `with T.Kernel(...) as ids:`.
""")
COPY_NO_EXTENT = register("TL0314", "T.copy cannot infer extents", """
Both sides of a `T.copy` are start corners (`A[i, j]`), so the size of the copy is
unknown. Give one side as a whole buffer or with slices (`A[i:i + 32, j:j + 32]`).
""")
GLOBAL_ALLOC_IN_KERNEL = register("TL0315", "T.alloc_global inside T.Kernel", """
A global workspace is shared by all blocks, so it is allocated once, before
`with T.Kernel(...)`, not inside a block.
""")
BAD_ATOMIC = register("TL0316", "bad atomic operation", """
`T.atomic_add(dst, value)` takes a destination element `C[i, j]` of a global or
shared buffer and a scalar value, or a destination corner and a tile (`C_f`) for a
tile-wide atomic update (or a region and a scalar). `T.atomic_addx2` / `addx4` take two
elements (the 2 / 4 from each along the last dim) or regions; with `return_prev=True`
they are assigned to a region of 2 / 4 elements. `T.atomic_load` takes the memory
orders relaxed, consume, acquire and seq_cst; `T.atomic_store` relaxed, release and
seq_cst. The bitwise atomics (`T.atomic_or`, ...) are not supported.
""")
BAD_FUNCTION = register("TL0317", "bad kernel or macro definition", """
Functions in a .tl file are decorated with `@T.prim_func` (a kernel) or `@T.macro`
(a helper inlined where it is called); parameters of a macro have no annotations or
defaults, and a prim_func's parameters are all annotated.
""")
BAD_PLACEMENT = register("TL0318", "bad buffer placement", """
`offset=` and `align=` on `T.alloc_shared` / `T.alloc_fragment` / `T.alloc_local` give
the buffer's place in its scope's arena, as the `memory_reuse` pass prints it: both
together, `align` a power of two and `offset` a non-negative multiple of `align`.
They are normally written by the compiler, not by hand.
""")
BAD_PREFETCH = register("TL0319", "bad T.prefetch", """
`T.prefetch(A[r0:r1, c0:c1], part=p, parts=n)` hints that a region of a global tensor
will be read soon; only global tensors are prefetched (block-local buffers are already
on chip). The region needs its extents (a whole tensor or slices); `parts` is a
positive integer constant and `part` an integer expression: part p of n fetches the
p-th of n equal runs of the region's rows.
""")
BAD_EVICTION_POLICY = register("TL0320", "bad eviction_policy", """
`T.copy(src, dst, eviction_policy=...)` takes one of TileLang's cache hints, a string
constant: "evict_normal" (no hint, as leaving it out), "evict_first" (the copied data
will not be read again soon: on the CPU the stores to a global tensor stream past the
caches, non-temporal, in whole aligned 64-byte lines, where the row starts on a line)
or "evict_last". `T.Parallel(..., annotations={"eviction_policy": ...})` takes the same
values for the loop's stores. The hint never changes the result; tcsim ignores it.
""")

OUT_OF_RANGE_ARG = register("TL0390", "argument out of range", """
A compile-time argument of the kernel structure has a value it cannot take:
`T.Kernel(..., threads=t)` needs t >= 1; `T.Pipelined(n, num_stages=s)` needs s >= 0
(0 means no pipelining, as in TileLang); a constant grid size of `T.Kernel` must be at
least 1 (a grid computed from sizes at launch may be 0 or less: it then runs no blocks).
""")

DEPENDENT_PARALLEL = register("TL0391", "dependent T.Parallel iterations", """
The iterations of a `T.Parallel` loop are independent: they run in any order, and on
the tcsim target all at once. An iteration that reads or writes an element another
iteration writes (a recurrence such as `t[i + 1] = t[i + 1] + t[i]`, or several
iterations storing to one element) has no defined result. The compiler proves such
conflicts where the indices are affine in the loop variables; use a serial loop
(`range`, `T.serial`) for a recurrence, and `T.atomic_add` or `T.reduce_*` for a
reduction. Reading an element that no iteration writes is fine.
""")
