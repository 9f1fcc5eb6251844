"""The names of the `T` namespace, by role. Shared by the Python-side objects
(`tilelang.language`) and the frontend, so both agree on what `T.<name>` means."""

DTYPE_NAMES = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e4m3",
               "float8_e5m2", "int64", "int32", "int8", "uint8", "bool")

# T.<name>(...) in expressions -> value
EXPR_FUNCS = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "abs",
              "floor", "ceil", "erf", "ceildiv", "floordiv", "floormod", "max", "min",
              "if_then_else", "infinity",
              "cast", "get_rank", "get_num_ranks", "address_of")
# multi-rank statements, spelled as TileScale spells them (docs/multirank.md)
RANK_OPS = ("put_block", "get_block", "put_warp", "get_warp", "st", "signal_op",
            "wait_eq", "wait_ne", "wait_ge", "wait_le", "wait_gt", "wait_lt",
            "barrier_blocks", "sync_blocks", "atom_add")
# T.<name>(...) as statements
TILE_OPS = ("copy", "gemm", "fill", "clear", "reduce_sum", "reduce_max", "reduce_min",
            "reduce_abssum", "reduce_absmax", "atomic_add", "atomic_max", "atomic_min",
            "prefetch") + RANK_OPS
ALLOCS = ("alloc_shared", "alloc_fragment", "alloc_local", "alloc_var", "alloc_global")
# for v in T.<name>(...)
LOOP_ITERS = ("Parallel", "parallel", "Pipelined", "serial", "unroll", "vectorized")
# TileLang's GPU scheduling statements: accepted (so kernels port unchanged), no effect
HINTS = ("use_swizzle", "no_set_max_nreg", "disable_warp_group_reg_alloc")
# structure and declarations
STRUCTURE = ("Kernel", "prim_func", "macro", "Tensor", "Buffer", "dynamic", "symbolic")

ALL_NAMES = DTYPE_NAMES + EXPR_FUNCS + TILE_OPS + ALLOCS + LOOP_ITERS + STRUCTURE + HINTS
