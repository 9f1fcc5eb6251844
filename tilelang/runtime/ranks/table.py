"""The rank table: the launch argument through which a multi-rank kernel learns its rank,
the number of ranks, where every peer's symmetric heap is mapped in this process, how
long a wait may spin, and where to report a failed wait.

It is an array of int64 words, laid out below; the code generator reads the same
constants (this module imports only the standard library, so either side may use it).
A kernel that fails (a wait timed out, the launch was aborted, a peer rank or an index
out of range) writes ERR_* words and returns; the runtime turns them into an exception.
"""
from __future__ import annotations

RANK = 0            # this process's rank
NUM_RANKS = 1
TIMEOUT_NS = 2      # how long one wait may spin before it gives up
ABORT_PTR = 3       # address of the host's abort word (nonzero: some rank failed), or 0
ERR_CODE = 4        # ERR_NONE, or what went wrong (first writer wins)
ERR_SITE = 5        # index into the manifest's "ranks"/"sites" list
ERR_PE = 6          # the peer rank involved
ERR_OBSERVED = 7    # the value a wait last saw
ERR_EXPECTED = 8    # the value it waited for
ERR_INDEX = 9       # flat element index (waits, signals) or end element (block copies)
HEAP_BYTES = 10     # size of each rank's symmetric heap
BASES = 16          # BASES + r: address of rank r's heap in this process, 0 if not mapped

ERR_NONE, ERR_TIMEOUT, ERR_ABORTED, ERR_BAD_PEER, ERR_BOUNDS, ERR_NOT_SYMMETRIC = range(6)

WAIT_OPS = ("eq", "ne", "ge", "le", "gt", "lt")     # T.wait_<op>, in BinaryRelation order


def num_words(num_ranks: int) -> int:
    return BASES + num_ranks
