"""Codes of TileLang compatibility: the x80-x89 block of each range, so that they never
collide with a layer's own codes (TL0080 syntax, TL0180 names, TL0280 types, TL0380 tile
ops and kernel structure, TL0780 the decorators)."""
from .codes import register

THREAD_LEVEL = register("TL0380", "thread-level code is not supported", """
The tile language programs a block as a whole: `T.Parallel` loops say what may run at
once, tile operations (`T.copy`, `T.gemm`, `T.reduce_*`, `T.atomic_add`) move and combine
tiles, and each target maps them to its hardware (the CPU's vector units, tcsim's
engines). Thread-level code — `T.get_thread_binding`, warp shuffles, `T.attr`,
`T.tvm_thread_allreduce`, PTX intrinsics — names CUDA threads, which exist on neither
target. Write the computation with tiles instead: a per-thread loop becomes a
`T.Parallel` loop, a warp or block reduction `T.reduce_sum` / `T.reduce_max` into a
fragment, a shuffle-based sum a `T.reduce_sum` over the shared tile.
""")

EAGER_FORM = register("TL0381", "bad declaration in a @tilelang.jit body", """
In the current style a `@tilelang.jit` function is the kernel itself:
`M, N = T.const("M, N")` names sizes taken from the arguments' shapes, `A: T.Tensor((M,
N), dtype)` declares the tensor parameter `A`, `C = T.empty((M, N), dtype)` an output the
call allocates, and `return C` (or `return C, D`) returns the outputs. Every annotated
name must be a parameter of the function, T.const sizes must be bound by some tensor's
shape (or given to `.compile(M=...)`), and `return` names T.empty outputs.
""")

JIT_KEYWORD = register("TL0780", "unknown @tilelang.jit keyword", """
`@tilelang.jit(...)` takes TileLang's options — out_idx, target, target_host,
execution_backend, verbose, pass_configs, debug_root_path, compile_flags — and this
compiler's own (opt, cpu, features, verify_each, dump_after, dump_dir, memory_reuse,
raster). Anything else is an error rather than a constant: constants are changed through
the factory's arguments, or with `defines={"NAME": value}` for a name the factory does
not take as an argument.
""")

PASS_CONFIG = register("TL0781", "unknown pass_configs key", """
`pass_configs={...}` takes TileLang's `tilelang.PassConfigKey` keys (or their strings,
such as "tl.disable_warp_specialized"). The keys that mean something here are applied:
`TL_ENABLE_FAST_MATH` (floating-point reassociation and approximate functions on the
CPU), `TL_DISABLE_SHARED_MEMORY_REUSE` (the memory_reuse pass off); the GPU-only ones
(warp specialisation, TMA, WGMMA, ...) are accepted and change nothing. docs/compat.md
lists them.
""")

ASSERTION = register("TL0382", "assertion failed at compile time", """
An `assert` in a kernel, macro or current-style `@tilelang.jit` body is checked when the
kernel is compiled, with the values of its parameters (TileLang's factories assert on
their parameters the same way, in Python). Its condition was false for the parameters
of this compile; the message is the assert's own when it has one.
""")
