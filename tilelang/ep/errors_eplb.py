"""The one exception of `tilelang.ep`: a `ValueError` carrying a TL12xx code, so Python
callers catch the builtin type and `tilec simulate-ep` prints a diagnostic."""
from __future__ import annotations

from ..diagnostics import codes_eplb as codes


class EPError(ValueError):
    """Bad input to the load balancer, the trace generator or the cluster model.
    `label` (a diagnostics Label) points into a config file when the input came from one."""

    def __init__(self, message: str, code: str = codes.BAD_EP_ARGUMENT, label=None,
                 help: str | None = None):
        super().__init__(message)
        self.code = code
        self.label = label
        self.help = help
