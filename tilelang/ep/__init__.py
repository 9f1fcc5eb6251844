"""Expert parallelism, shaped like DeepEP: `Buffer` (get_dispatch_layout, dispatch,
combine), `init()` for the process group of a launch, and DeepEP's helpers.

    import tilelang.ep as ep
    group = ep.init()                                  # `tilec launch -n N` or mpiexec
    buffer = ep.Buffer(group, int(1e9))
    ...                                                # then as with deep_ep.Buffer
"""
import numpy as _np

from ..runtime.ranks import ProcessGroup, RankError, RankTimeoutError, RankAbortedError
from ..runtime.ranks import init
from .buffer import Buffer
from .errors import BufferTooSmallError, RoutingError
from .events import Config, EventOverlap
from .utils import calc_diff, per_token_cast_back, per_token_cast_to_fp8

topk_idx_t = _np.int64

__all__ = ["init", "Buffer", "Config", "EventOverlap", "ProcessGroup", "topk_idx_t",
           "calc_diff", "per_token_cast_to_fp8", "per_token_cast_back", "RankError",
           "RankTimeoutError", "RankAbortedError", "RoutingError", "BufferTooSmallError"]
