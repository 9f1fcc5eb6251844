"""TL07xx: the driver, the Python decorators, the `tilec` CLI and the compile cache."""
from .codes import register

FILE_NOT_FOUND = register("TL0701", "cannot read the source file", """
The file named on the command line (or passed to `tilelang.compile`) does not exist or
cannot be read. Check the path; relative paths are taken from the current directory.
""")

UNKNOWN_PASS = register("TL0702", "unknown pass name", """
`--after`, `--dump-after` and `.ir(after=...)` take the name of a pass of the target's
pipeline (or `all` for `--dump-after`, `parse` for the IR straight from the frontend).
`tilec passes` lists the pipeline in order.
""")

UNKNOWN_KERNEL = register("TL0703", "no kernel of that name", """
`-k KERNEL` (or `kernel=`) names a `@T.prim_func` that the source does not define. The
message lists the kernels the file does define.
""")

TARGET_NOT_BUILT = register("TL0704", "target not built yet", """
No longer raised: every target of the design is built. Earlier versions of the compiler
gave it for `--target tcsim[:CONFIG]`, which now compiles for the simulated tensor-core
accelerator (an unknown machine config is TL0805).
""")

UNKNOWN_TARGET = register("TL0705", "unknown target", """
`--target` takes `cpu` (native code through LLVM) or `tcsim[:CONFIG]` (the simulated
tensor-core accelerator; CONFIG is h100_like, h200_like, ascend_like or tiny, and
`tcsim` alone means h100_like).
""")

BAD_DEFINE = register("TL0706", "bad compile-time constant", """
A `-D NAME=VALUE` define (or a keyword of `@tilelang.kernel(...)`) must give a name and an
int, float, bool or dtype-string value, e.g. `-D BLOCK_M=64` or `-D dtype=float16`.
""")

MISSING_SIZE = register("TL0707", "symbolic size not given", """
`tilec run` makes random inputs, so it must know every symbolic size (`T.dynamic`) of the
kernel's signature. Give them with `--shape M=1024,N=1024,K=512`.
""")

UNKNOWN_CODE = register("TL0708", "unknown diagnostic code", """
`tilec explain CODE` takes a code of the form TLxxxx, as printed in brackets by an error
message, e.g. `tilec explain TL0203`.
""")

AMBIGUOUS_KERNEL = register("TL0709", "more than one kernel: pick one", """
The source defines several kernels and the command needs exactly one (`tilec run`, or
calling the result of `tilelang.compile`). Name it with `-k KERNEL` / `kernel=`.
""")

NOT_A_KERNEL = register("TL0710", "not a kernel", """
`@tilelang.jit` expects a factory: a Python function of compile-time parameters that
returns a `@T.prim_func`. `tilelang.compile` expects a `.tl` path, `.tl` source text or a
`T.Tensor`-annotated function.
""")

BAD_ARG = register("TL0711", "bad argument for tilec run", """
`--shape` and `--arg` take comma-separated `NAME=VALUE` pairs whose values are integers
(sizes) or numbers (scalar parameters), e.g. `--shape M=1024,N=512 --arg alpha=0.5`.
""")

CANNOT_WRITE = register("TL0712", "cannot write the output file", """
The output path (`-o`) or the cache directory could not be written: check that its
directory exists and is writable.
""")

WRONG_TARGET = register("TL0713", "not available for this target", """
An output kind or option belongs to the other target: `--emit llvm|asm|obj|so` and
`out_idx` are the cpu target's (native code); `--emit tcasm` (the tcsim assembly) and
`--emit tcsim` (a tcsim artifact file) are the tcsim target's. A tcsim kernel is called
with every output array given; its results are written in place.
""")

CACHE_NOT_CLEARED = register("TL0790", "the cache could not be cleared", """
`tilec cache clear` removes every entry of the compile cache (TILELANG_CACHE_DIR, by
default ~/.cache/tilelang). Some entries could not be removed, usually because the
directory is read-only for you; the message says how many are left and why. A
read-only cache still serves the kernels in it, and compiles of new kernels still work
(they are not stored).
""")

NO_KERNEL = register("TL0791", "the source defines no kernel", """
A `.tl` file (or text) is compiled kernel by kernel: it must define at least one
`@T.prim_func`. An empty file, or one with only constants and macros, would give an
empty library.
""")
