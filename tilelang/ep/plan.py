"""Where every row of a dispatch goes, from the matrix of counts every rank learns in the
notify step: `counts[s, r]` tokens of rank s go to rank r. Each rank computes the same
plan from the same matrix, so the heap regions it sizes sit at the same offsets on all
ranks (the heap stays symmetric) and a buffer that is too small fails on every rank.

Rows a rank receives are ordered by source rank, then by source token index.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Plan:
    counts: np.ndarray            # [R, R] int64
    rank: int
    hosts: tuple                  # host of each rank

    @property
    def num_ranks(self) -> int:
        return self.counts.shape[0]

    def local(self, r: int) -> bool:
        return self.hosts[r] == self.hosts[self.rank]

    # -- dispatch -----------------------------------------------------------------------

    @property
    def num_recv(self) -> int:
        return int(self.counts[:, self.rank].sum())

    @property
    def rank_prefix_matrix(self) -> np.ndarray:
        """DeepEP's: [i, j] = tokens rank j receives from ranks 0..i."""
        return np.cumsum(self.counts, axis=0).astype(np.int32)

    def recv_start(self, s: int, r: int | None = None) -> int:
        """First row, on rank r (default: this rank), of the tokens from rank s."""
        r = self.rank if r is None else r
        return int(self.counts[:s, r].sum())

    @property
    def recv_rows(self) -> int:
        """Receive rows every rank reserves: the most any rank receives."""
        return int(self.counts.sum(axis=0).max(initial=0))

    def _remote_rows(self, s: int) -> int:
        return int(sum(self.counts[s, r] for r in range(self.num_ranks)
                       if self.hosts[r] != self.hosts[s]))

    @property
    def staging_rows(self) -> int:
        """Rows a rank packs for other hosts (MPI sends them from there)."""
        return max((self._remote_rows(s) for s in range(self.num_ranks)), default=0)

    def staging_start(self, r: int) -> int:
        """First staging row (after the receive rows) of this rank's tokens for rank r."""
        return self.recv_rows + int(sum(self.counts[self.rank, q] for q in range(r)
                                        if not self.local(q)))

    def dispatch_targets(self) -> tuple[np.ndarray, np.ndarray]:
        """(dest_pe, dest_base) per destination rank: a peer on this host gets its rows
        in its receive rows; a rank on another host in this rank's staging rows."""
        pe = np.empty(self.num_ranks, np.int32)
        base = np.empty(self.num_ranks, np.int32)
        for r in range(self.num_ranks):
            if self.local(r):
                pe[r], base[r] = r, self.recv_start(self.rank, r)
            else:
                pe[r], base[r] = self.rank, self.staging_start(r)
        return pe, base

    # -- combine ------------------------------------------------------------------------

    def combine_sources(self) -> tuple[np.ndarray, np.ndarray]:
        """(src_pe, src_base) per rank r the tokens went to: this rank's tokens sit in
        r's combine input from row `recv_start(self.rank, r)` — on r itself when r shares
        the host, in this rank's staging rows (where MPI put them) when it does not: the
        rows dispatch wrote them to."""
        return self.dispatch_targets()


__all__ = ["Plan"]
