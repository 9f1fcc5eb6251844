"""TL09xx: multi-rank kernels and expert parallelism (the T.put_block / T.wait_* family,
symmetric heaps, rank tables, `tilelang.ep`)."""
from .codes import register

BAD_RANK_OP = register("TL0901", "bad multi-rank primitive", """
A multi-rank primitive (T.put_block, T.get_block, T.st, T.signal_op, T.wait_*,
T.barrier_blocks, T.atomic_add(..., return_prev=True)) was given the wrong kind of
argument: block copies take `T.address_of(buf[i, ...])` (or `buf[i, ...]`) of global
tensors of one dtype and a size in elements; signals and waits take an element of an
int32 or int64 global tensor; a barrier takes a whole int32 tensor of one word per rank.""")

NO_RANKS_ON_TARGET = register("TL0902", "multi-rank primitive on a single-device target", """
The kernel uses rank queries or peer memory, which only the CPU target implements (ranks
are processes on one or more hosts). A multi-device tcsim is future work: compile the
kernel for `--target cpu`.""")

NO_RANK_TABLE = register("TL0903", "multi-rank kernel launched without ranks", """
The kernel reads its rank or a peer's memory, so its launch needs a rank table: call
`tilelang.ep.init()` (or `tilelang.runtime.ranks.init()`) first and pass tensors
allocated in a symmetric heap (`group.heap(nbytes).alloc(...)`) for the buffers the
kernel reaches on peers.""")

NOT_SYMMETRIC = register("TL0904", "argument is not in a symmetric heap", """
A tensor that the kernel reads or writes on a peer (the destination of T.put_block, the
source of T.get_block, a signal, a barrier) must live in a symmetric heap, at the same
offset on every rank: allocate it with `heap.alloc(shape, dtype)` on every rank in the
same order. All such tensors of one launch must share one heap.""")

WAIT_TIMEOUT = register("TL0905", "a wait timed out", """
A T.wait_* (or a barrier) did not see its condition within the timeout (60 s by default,
TILELANG_EP_TIMEOUT seconds when set). The message names the rank, the signal and the
values: usually a peer never reached the matching T.signal_op / T.st, or the ranks ran
different numbers of barriers.""")

RUN_ABORTED = register("TL0906", "a multi-rank run was aborted", """
Another rank of the run failed or died, so this rank stopped waiting for it. Look at the
named rank's own error.""")

BAD_PEER = register("TL0907", "peer rank out of range", """
A multi-rank primitive named a peer rank outside 0 .. num_ranks-1, or a rank on another
host whose memory is not mapped here (across hosts, data goes through MPI).""")

PEER_OUT_OF_BOUNDS = register("TL0908", "peer access out of bounds", """
A T.put_block / T.get_block / signal / wait reaches past the end of its tensor (the start
index plus the size exceeds the tensor's elements). Peer accesses are checked at run time.""")

BAD_ROUTING = register("TL0909", "bad expert-parallel routing input", """
`topk_idx` holds an expert id outside -1 .. num_experts-1 (-1 means "not routed"), or
the layout tensors passed to dispatch disagree with it. The check runs on every rank
before any data moves, so every rank raises it.""")

BUFFER_TOO_SMALL = register("TL0910", "expert-parallel buffer too small", """
The tokens a dispatch would receive (or send to another host) do not fit the Buffer's
symmetric heap. Create the Buffer with a larger `num_nvl_bytes`
(`Buffer.get_buffer_size_hint(...)` computes one).""")
