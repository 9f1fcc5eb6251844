"""TL08xx: the tcsim target (simulated tensor-core accelerator): code generation,
artifacts, and what the simulator finds at run time (races, deadlocks)."""
from .codes import register

DOES_NOT_FIT = register("TL0801", "program does not fit the tcsim machine", """
A tcsim program allocates more on-chip memory (shared memory, register file, or an
Ascend-style L0/L1/UB buffer) than the machine config provides, or places a buffer where
the engine using it cannot reach (e.g. an MMA operand outside the MMA's buffers). Use
smaller tiles, fewer pipeline stages (`num_stages`), or a bigger machine config.""")

BAD_PROGRAM = register("TL0802", "malformed tcsim assembly or binary", """
The `.tcasm` text or the binary program could not be read: an unknown opcode or
directive, a name that is not declared with `.buf`, `.param` or `.sem`, a wrong number of
operands, unbalanced LOOP/ENDLOOP or IF/ENDIF, or a truncated or corrupt binary.""")

RACE = register("TL0803", "data race on a tcsim buffer", """
An engine read (or overwrote) an on-chip buffer that another engine was writing (or
reading) without synchronising with it: the reader never waited on the semaphore the
writer signals, or waited on an earlier phase. On real hardware the reader would see stale
or partial data. Add `wait=SEM@PHASE` for the writer's `signal=SEM` (the compiler does this
for every T.copy feeding a T.gemm; a hand-written program must too).""")

DEADLOCK = register("TL0804", "deadlock in a tcsim program", """
Every unit of a core is waiting and nothing can make progress: typically a circular wait
(engine A waits on a semaphore that only an instruction queued behind A's wait would
signal), a wait on a phase that is never completed (arrival count or expected bytes too
high), or a queue full of waiting instructions. The simulator reports the waits instead of
hanging.""")

UNKNOWN_CONFIG = register("TL0805", "unknown tcsim machine config", """
`--target tcsim:NAME` names a machine config that does not exist. Known configs:
h100_like, h200_like, ascend_like, tiny.""")

UNSUPPORTED = register("TL0806", "construct not supported by the tcsim code generator", """
The tcsim code generator maps tile operations to its tile-granular ISA. Some constructs
have no mapping yet: element-level stores outside T.Parallel loops, indices that are not
plain loop variables inside T.Parallel (e.g. X[i + 1, j]), partial regions of on-chip
buffers, indirect (data-dependent) global indices, and scalar atomics. Rewrite the kernel
with whole-tile operations, or use the cpu target.""")

BAD_LAUNCH = register("TL0807", "a launch the tcsim machine cannot run", """
The program asks for a launch the machine cannot make: a grid that is not a whole number
of thread-block clusters, or a cluster of more blocks than the machine has cores. Pick a
cluster that divides the grid (or sizes that make the grid a multiple of it), or a bigger
machine config. (Arguments that do not match the kernel's signature are the runtime's
TL06xx errors, as on every target.)""")
