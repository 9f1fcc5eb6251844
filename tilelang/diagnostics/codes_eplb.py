"""TL12xx: expert load balancing, routing traces, the cluster model and `tilec simulate-ep`.

`tilelang.ep` raises these as `ValueError` subclasses carrying `.code`
(`tilelang/ep/errors_eplb.py`); `tilec simulate-ep` prints them as diagnostics, a config file's
with the line and column of the offending key or value.
"""
from .codes import register

BAD_EP_ARGUMENT = register("TL1201", "bad expert-parallel argument", """
An argument of `rebalance_experts`, the routing-trace generator or the cluster model is
out of its range or inconsistent with another: the ranks must divide over the nodes, the
physical experts over the ranks, the experts into their groups, top-k must not exceed the
experts the group limit leaves, and so on. The message names the argument and what was
expected.""")

BAD_TRACE = register("TL1202", "not a routing trace", """
A `.npz` given as a routing trace lacks an array the trace format needs (`topk_idx`
`[steps, layers, tokens, topk]` and the trace's parameters), or its arrays disagree.
Write traces with `tilelang.ep.trace.RoutingTrace.save` (or `tilec simulate-ep
--save-trace`).""")

UNKNOWN_CONFIG_KEY = register("TL1203", "unknown key in the configuration file", """
`tilec simulate-ep --config FILE` accepts the sections `training` and `cluster` (and
`workload`, `projection`); each takes a fixed set of keys, listed in the message's help.
A misspelt key is an error rather than ignored, so a setting never silently has no
effect.""")

BAD_CONFIG_VALUE = register("TL1204", "bad value in the configuration file", """
A key of the configuration file has a value of the wrong type or out of range, e.g.
`topology: ring` (expected `flat` or `hierarchical`), a negative bandwidth, or
`expert_count` that does not divide over the ranks. The message says what was expected.""")

BAD_CONFIG_FILE = register("TL1205", "cannot read the configuration file", """
The file given to `--config` cannot be read or is not valid YAML; the message points at
the place where the YAML parser stopped.""")
