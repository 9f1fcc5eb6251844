"""TL04xx: user errors that only show once the passes have folded constants or analysed
index ranges (the builder cannot see them: they depend on `-D` values and on loops)."""
from .codes import register

DIVISION_BY_ZERO = register("TL0401", "integer division by zero", """
After compile-time constants are substituted, the divisor of an integer `//`, `%` or
`T.ceildiv` is the constant 0. A divisor the kernel's constants make 0 is reported rather
than left to the run-time rule (division by zero gives 0), since it is almost always a
mistake; a loop index that happens to be 0 is not such a constant.
Check the constants involved (including `-D NAME=VALUE` overrides): a block size or a
split count is usually the one that became 0.
""")

LOCAL_OUT_OF_BOUNDS = register("TL0402", "index always out of bounds of a block-local buffer", """
An access to a shared, fragment, local or var buffer reaches outside the buffer's shape
for some iteration of the loops around it, and no `if` or `T.if_then_else` protects it.
Only global tensors get automatic bounds guards (ragged edges read 0 and drop writes);
block-local buffers are sized by the kernel, so an index past their end is a bug in the
kernel: fix the loop extent or the buffer's shape.
""")
