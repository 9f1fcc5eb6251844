"""TL05xx: code generation and target errors (CPU codegen with LLVM, linking)."""
from .codes import register

UNSUPPORTED_NODE = register("TL0501", "construct not supported by the CPU code generator", """
The LLVM code generator only accepts lowered IR: Kernel, Seq, Let, Alloc, Store, Atomic,
For, If and scalar expressions. Tile operations (T.copy, T.gemm, T.fill, T.reduce_*,
tile-wide T.atomic_*) must first be lowered to loops by the CPU pass pipeline.
""")

UNSUPPORTED_DTYPE_OP = register("TL0502", "operation not supported for this dtype", """
The operation cannot be applied to values of this dtype on the CPU, for example a
floating-point intrinsic such as T.exp on an integer. Cast the operand with T.cast first.
""")

DYNAMIC_LOCAL_BUFFER = register("TL0503", "block-local buffer with a non-constant size", """
Shared, fragment, local and var buffers are block-local memory of the core running the
block (its stack, or one heap block per call when they are large), so their shape must
be known at compile time. Use compile-time constants for
the shape, or allocate a workspace in global memory with T.alloc_global.
""")

BAD_TARGET = register("TL0504", "unknown or unsupported target", """
The target triple, CPU name or feature string given for ahead-of-time compilation is
not known to LLVM. Check the spelling, e.g. --target x86_64-unknown-linux-gnu,
cpu=znver3, features=+avx2,+fma.
""")

NO_C_COMPILER = register("TL0505", "no C compiler found to link a shared library", """
Writing a shared library (.so) links the object file with the system C compiler. None
of cc, gcc or clang was found on PATH. Install one, or emit an object file instead
(--emit obj) and link it yourself with -shared -lm.
""")

LINK_FAILED = register("TL0506", "linking the shared library failed", """
The system C compiler returned an error while linking the generated object file into a
shared library. Its output is shown with the error.
""")

UNSUPPORTED_ATOMIC = register("TL0507", "atomic operation not supported for this dtype", """
Atomic add, max and min are supported on integer and floating-point buffers. Atomics on
bool buffers are not supported.
""")

LOCAL_MEMORY_TOO_LARGE = register("TL0590", "block-local memory too large", """
The block-local buffers of a kernel (shared, fragment, local, var) together need more
than 1 GiB per block, which no core has: tiles are meant to fit in its caches. Use
smaller tiles (block sizes), or keep large data in global memory (a parameter or a
T.alloc_global workspace). Block-local memory above 256 KiB lives on the heap, taken
once per chunk of blocks a thread runs; below that it is on the thread's stack.
""")
