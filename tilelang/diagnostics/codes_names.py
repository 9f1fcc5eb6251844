"""TL01xx: names and scopes (unknown names, rebinding, shadowing, imports, defines)."""
from .codes import register

UNKNOWN_NAME = register("TL0101", "unknown name", """
A name is used that is not defined: not a parameter, loop variable, block index,
local variable, buffer, module-level constant, `T.dynamic` size or macro. Check the
spelling (the diagnostic suggests the closest known name) and that the name is
defined before its use.
""")
UNKNOWN_T_FUNCTION = register("TL0102", "unknown name in the T namespace", """
`T.<name>` names something the tile language does not provide. The language reference
lists the available functions (`T.copy`, `T.gemm`, `T.Parallel`, `T.exp`, ...); the
diagnostic suggests the closest one.
""")
LET_REBOUND = register("TL0103", "a let-bound name is assigned again", """
`x = value` binds `x` once, for the rest of its block (a let-binding, immutable). To
have a scalar that changes (an accumulator, a counter), allocate it with
`x = T.alloc_var("float32", init=0)`; assignments to it then update it.
""")
SHADOWED_VAR = register("TL0104", "a loop or block variable is shadowed", """
A loop variable, block index or parameter is rebound by an inner loop, a `with`
target or an assignment. Inner loops need their own variable names.
""")
ASSIGN_NOT_VARIABLE = register("TL0105", "assignment to something that is not a variable", """
Only a new name (a let-binding), a `T.alloc_var` scalar or an element of a buffer
(`A[i, j] = v`) can be assigned. Buffers, parameters, constants and `T.dynamic`
sizes cannot be reassigned; to fill a buffer use `T.fill` or `T.copy`.
""")
UNKNOWN_DEFINE = register("TL0106", "define of an unknown constant", """
`-D NAME=VALUE` (or `defines=` in the Python API) overrides a module-level constant,
but the module has no constant of that name. Constants are module-level assignments
such as `BLOCK_M = 128`.
""")
UNBOUND_SYMBOL = register("TL0107", "symbolic size not bound by the signature", """
A `T.dynamic` size is used in a kernel but no tensor parameter has it in its shape,
so its value cannot be taken from the arguments at launch. Use it in the shape of a
parameter or make it a scalar parameter.
""")
BAD_MACRO_USE = register("TL0108", "bad use of a macro", """
A `@T.macro` helper is inlined at each call site: it can only be called as a
statement, with as many arguments as it has parameters, and cannot call itself.
""")
DUPLICATE_DEFINITION = register("TL0109", "duplicate definition", """
Two functions, two parameters or two module-level constants have the same name.
Rename one of them.
""")
BAD_MODULE_USE = register("TL0110", "a module or import cannot be used here", """
Only the tilelang modules can be used in a kernel (`import tilelang.language as T`).
Other modules (numpy, math, torch) run in Python, not in a compiled kernel, and
module-level statements other than imports, constants, `T.dynamic` sizes and
function definitions are not supported.
""")
