"""DeepEP's configuration and event objects. Collectives here finish before they return
(one CPU stream), so an event has nothing to wait for: its methods are no-ops."""
from __future__ import annotations

from dataclasses import dataclass


class EventOverlap:
    """Returned by every collective; `current_stream_wait()` and the context manager
    are no-ops, as everything has finished already."""

    def __init__(self, event=None, extra_tensors=None):
        self.event = event
        self.extra_tensors = extra_tensors

    def current_stream_wait(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


@dataclass
class Config:
    """DeepEP's performance knobs (SMs, chunk sizes). Accepted for compatibility; the CPU
    kernels size their own blocks."""
    num_sms: int = 20
    num_max_nvl_chunked_send_tokens: int = 6
    num_max_nvl_chunked_recv_tokens: int = 256
    num_max_rdma_chunked_send_tokens: int = 6
    num_max_rdma_chunked_recv_tokens: int = 256

    def get_nvl_buffer_size_hint(self, hidden_bytes: int, num_ranks: int) -> int:
        """Bytes of `num_nvl_bytes` for hidden rows of `hidden_bytes`, when every rank
        sends up to DEFAULT_MAX_TOKENS tokens (see Buffer.get_buffer_size_hint)."""
        from .buffer import Buffer
        return Buffer.get_buffer_size_hint(Buffer.DEFAULT_MAX_TOKENS, hidden_bytes // 2,
                                           num_ranks)

    def get_rdma_buffer_size_hint(self, hidden_bytes: int, num_ranks: int) -> int:
        return self.get_nvl_buffer_size_hint(hidden_bytes, num_ranks)


__all__ = ["EventOverlap", "Config"]
