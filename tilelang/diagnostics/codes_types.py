"""TL02xx: types, dtypes and shapes (checked by the builder)."""
from .codes import register

MIXED_DTYPES = register("TL0201", "mixed-dtype arithmetic", """
Both operands of an arithmetic operator or comparison must have the same dtype; the
tile language never converts implicitly (a silent float16 -> float32 widening hides
precision and performance problems). Convert one side explicitly with
`T.cast(x, "float32")`. Literals adapt to the other operand: `x * 2.0` is fine for a
float16 `x`.
""")
INT_TRUE_DIVISION = register("TL0202", "`/` on integers", """
`/` is true division and is defined on floats only. For integers use floor division
`//` (or `T.ceildiv(a, b)` to round up); to get a float result, cast first.
""")
GEMM_SHAPE = register("TL0203", "shape mismatch in T.gemm", """
`T.gemm(A, B, C)` computes C += op(A) @ op(B): with op(A) of shape (M, K) and op(B)
of shape (K, N), C must be (M, N). `transpose_A=True` means A is stored (K, M),
`transpose_B=True` that B is stored (N, K). The labels show the extents that disagree.
""")
BAD_DTYPE = register("TL0204", "unknown dtype", """
The string is not a dtype of the tile language. The dtypes are float64, float32,
float16, bfloat16, float8_e4m3fn, float8_e4m3, float8_e5m2, int64, int32, int16, int8,
uint32, uint16, uint8 and bool (plus aliases such as "half", "float" and "bf16").
""")
NOT_BOOL = register("TL0205", "condition is not a bool", """
Conditions of `if`, `T.if_then_else` and the operands of `and`, `or`, `not` must be
bool: a comparison, a bool variable or True/False. Write `x != 0` instead of `x`.
""")
NOT_INTEGER = register("TL0206", "an integer is required", """
Indices, loop bounds, grid sizes and the operands of `//` and `%` must be integers.
A float value must be converted explicitly, e.g. `T.cast(x, "int32")`.
""")
INDEX_COUNT = register("TL0207", "wrong number of indices", """
A buffer element is addressed with exactly one index per dimension: `A[i, j]` for a
2-d buffer. A `T.alloc_var` scalar is used by its bare name, without indices.
""")
NOT_CONSTANT_SHAPE = register("TL0208", "shape is not a compile-time constant", """
Block-local buffers (`T.alloc_shared`, `T.alloc_fragment`, `T.alloc_local`) need
shapes known at compile time: integers or module-level constants, combined with
arithmetic. Symbolic sizes (`T.dynamic`) are only allowed in parameters and
`T.alloc_global` workspaces.
""")
COPY_EXTENTS = register("TL0209", "incompatible regions in T.copy", """
The two regions of `T.copy(src, dst)` must have the same extents once unit dimensions
are dropped ((1, 128) matches (128,)). A start corner `A[i, j]` takes its extents
from the other side, so at least one side must be a slice or a whole buffer.
""")
GEMM_ACCUM_DTYPE = register("TL0210", "bad accumulator dtype in T.gemm", """
The accumulator C of `T.gemm` must be a float buffer for float operands (float32 is
usual) and int32 for int8/uint8 operands; A and B must both be float or both integer.
""")
REDUCE_DIM = register("TL0211", "reduction dim out of range", """
`dim` of `T.reduce_*(src, dst, dim)` must name a dimension of src:
-ndim <= dim < ndim.
""")
REDUCE_SHAPE = register("TL0212", "reduction destination has the wrong shape", """
The destination of `T.reduce_*(src, dst, dim)` has src's shape with dimension `dim`
removed: reducing a (128, 64) buffer along dim 1 needs a (128,) destination.
""")
BAD_SHAPE_ENTRY = register("TL0213", "bad tensor shape entry", """
Each entry of a parameter shape `T.Tensor((M, 128), dtype)` is an integer constant or
a symbolic size declared with `M = T.dynamic("M")`. Expressions of sizes are not
allowed there; declare another symbol instead.
""")
STORE_DTYPE = register("TL0214", "stored value has a different dtype", """
A value stored into a buffer, a `T.alloc_var`, a `T.fill` or an atomic must have the
buffer's dtype. Convert it explicitly with `T.cast(value, dtype)`; literals adapt.
""")
NOT_SCALAR = register("TL0215", "a scalar value is required", """
A buffer, a dtype, a string or a tuple was used where a scalar value (a number, a
variable, a buffer element) is required, or the other way round.
""")
BAD_OPERAND = register("TL0216", "operand of the wrong kind", """
The operator or intrinsic does not accept an operand of this dtype: math intrinsics
(`T.exp`, `T.sqrt`, ...) take floats, unary minus takes numbers, `//` and `%` take
integers.
""")
BAD_PARAM_TYPE = register("TL0217", "bad parameter annotation", """
Kernel parameters are annotated with `T.Tensor(shape, dtype)` (alias `T.Buffer`) for
tensors or a scalar dtype such as `T.int32` / `T.float32` for scalars.
""")
NOT_CONSTANT = register("TL0218", "a compile-time constant is required", """
This argument must be known when the kernel is compiled: `num_stages`, `threads`,
reduction `dim`, `clear`, `transpose_A/B` and similar take integer or bool constants
(literals or module-level constants), not runtime values.
""")
REGION_BOUNDS = register("TL0219", "region outside a block-local buffer", """
A slice of a block-local buffer reaches past its shape. Only global tensors may be
accessed out of bounds by `T.copy` (reads give 0, writes are dropped).
""")
