"""The names of the `T` namespace, by role. Shared by the Python-side objects
(`tilelang.language`) and the frontend, so both agree on what `T.<name>` means."""

DTYPE_NAMES = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e4m3",
               "float8_e5m2", "int64", "int32", "int16", "int8", "uint32", "uint16", "uint8",
               "bool")

# TileLang's sub-byte dtypes: names Python code may mention (`Literal[T.int8, T.int4]` in
# a quantization helper's signature); a kernel stores such values packed in uint8
SUB_BYTE_DTYPES = ("int4", "uint4", "int2", "uint2", "float4_e2m1fn")

# TileLang's other spellings of dtypes: T.float is float32, T.int int32
DTYPE_ALIASES = {"float": "float32", "int": "int32", "uint": "uint32", "half": "float16",
                 "double": "float64"}

# T.<name>(...) in expressions -> value
EXPR_FUNCS = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "abs",
              "floor", "ceil", "erf", "sin", "cos", "tan", "pow", "round", "trunc",
              "ceildiv", "align_up", "floordiv", "floormod", "truncdiv", "truncmod", "max",
              "min", "clamp", "if_then_else", "infinity", "cast", "Cast", "bitwise_and",
              "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left", "shift_right",
              "get_rank", "get_num_ranks", "address_of", "reinterpret", "Select",
              "get_block_binding", "atomic_load",
              # frontend/mathfns.py: written with the functions above
              "__exp", "__exp10", "__log", "__log2", "__log10", "__sin", "__cos", "__tan",
              "exp10", "log10", "sinh", "cosh", "atan", "nearbyint", "fmod", "ieee_add", "ieee_sub",
              "ieee_mul", "ieee_fdiv", "ieee_fmaf", "ieee_frcp", "ieee_fsqrt", "ieee_frsqrt",
              "isfinite", "isnan", "isinf", "any_of", "all_of")
# helpers that also compute on plain Python numbers (host code calls T.ceildiv(N, 128))
HOST_FUNCS = ("ceildiv", "align_up", "floordiv", "floormod", "truncdiv", "truncmod", "max", "min",
              "abs", "clamp")
# multi-rank statements, spelled as TileScale spells them (docs/multirank.md)
RANK_OPS = ("put_block", "get_block", "put_warp", "get_warp", "st", "signal_op",
            "wait_eq", "wait_ne", "wait_ge", "wait_le", "wait_gt", "wait_lt",
            "barrier_blocks", "sync_blocks", "atom_add")
# T.<name>(...) as statements
TILE_OPS = ("copy", "gemm", "fill", "clear", "reduce_sum", "reduce_max", "reduce_min",
            "reduce_abssum", "reduce_absmax", "atomic_add", "atomic_max", "atomic_min",
            "atomic_addx2", "atomic_addx4", "atomic_store", "reduce_bitand", "reduce_bitor",
            "reduce_bitxor", "reducer_init", "reducer_update",
            "prefetch", "im2col", "c2d_im2col", "cumsum", "print",
            "finalize_reducer", "transpose", "cummax", "let") + RANK_OPS
ALLOCS = ("alloc_shared", "alloc_fragment", "alloc_local", "alloc_var", "alloc_global",
          "alloc_reducer", "alloc_buffer")
# for v in T.<name>(...)
LOOP_ITERS = ("Parallel", "parallel", "Pipelined", "serial", "Serial", "unroll",
              "vectorized")
# TileLang's layout and scheduling statements: accepted, no effect on the result
# (T.use_swizzle sets tcsim's block raster; the others change nothing here)
HINTS = ("use_swizzle", "annotate_layout", "annotate_padding", "annotate_l2_hit_ratio",
         "annotate_compile_flags", "annotate_pass_configs", "no_set_max_nreg",
         "set_max_nreg", "disable_warp_group_reg_alloc", "sync_threads", "func_attr",
         "assume")
# objects that only appear inside hints (T.annotate_layout({A: T.Layout(...)}))
HINT_VALUES = ("Layout", "Fragment", "GemmWarpPolicy")
# thread-level programming: out of scope (a diagnostic says what to write instead)
THREAD_LEVEL = ("get_thread_binding", "get_thread_bindings", "thread_binding",
                "launch_thread", "shfl_xor", "shfl_down", "shfl_up", "shfl_sync",
                "tvm_thread_allreduce", "comm_reducer", "warp_reduce_sum", "warp_reduce_max",
                "sync_warp", "ptx_ldmatrix", "ptx_mma", "mma_sync", "attr", "evaluate",
                "call_extern", "call_intrin", "tvm_access_ptr")
# `tvm.tir` / `tvm.tirx` functions a kernel may call (tilelang/tvm/tir.py): each is the
# T function of the same name, but `const(value, dtype)`, a typed constant
TIR_NAMES = ("const", "reinterpret", "Cast", "Select", "if_then_else", "max", "min", "abs",
             "floordiv", "floormod", "truncdiv", "truncmod", "exp", "exp2", "log", "log2",
             "sqrt", "rsqrt", "tanh", "sigmoid", "floor", "ceil", "erf", "sin", "cos",
             "tan", "pow", "round", "trunc", "bitwise_and", "bitwise_or", "bitwise_xor",
             "bitwise_not", "shift_left", "shift_right")
# the current style of @tilelang.jit bodies: T.const sizes, T.empty outputs
EAGER = ("const", "empty")
# structure and declarations
STRUCTURE = ("Kernel", "prim_func", "macro", "Tensor", "Buffer", "dynamic", "symbolic",
             "dtype", "reshape", "view")

# TileLang's bitwise atomics: not supported (a diagnostic names the atomics that are)
BIT_ATOMICS = ("atomic_or", "atomic_and", "atomic_xor")
ALL_NAMES = (DTYPE_NAMES + tuple(DTYPE_ALIASES) + EXPR_FUNCS + TILE_OPS + ALLOCS + LOOP_ITERS
             + STRUCTURE + HINTS + HINT_VALUES + THREAD_LEVEL + EAGER + BIT_ATOMICS)
