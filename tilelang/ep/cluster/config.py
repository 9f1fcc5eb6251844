"""`tilec simulate-ep --config FILE`: the YAML configuration file.

The brief's file is accepted as written, with a `cluster:` section beside it:

    training:
      strategy: moe_expert_parallel
      expert_count: 64                  # logical experts
      communication:
        backend: deep_ep
        topology: hierarchical          # DeepEP's two-stage path (or flat)
        bandwidth_optimization: true    # EPLB placement
    cluster:
      ranks: 16
      nodes: 2
      links:
        nvlink: {bandwidth_gb_s: 160, latency_us: 1.0}
        rdma: {bandwidth_gb_s: 50, latency_us: 3.0}

Every key is in `SCHEMA` below; an unknown key or a bad value is an error pointing at its
line and column in the file.
"""
from __future__ import annotations

from ...diagnostics import Label
from ...diagnostics.codes_eplb import BAD_CONFIG_FILE, BAD_CONFIG_VALUE, UNKNOWN_CONFIG_KEY
from ..errors_eplb import EPError


def _positive_int(v):
    return isinstance(v, int) and not isinstance(v, bool) and v > 0, "a positive integer"


def _count(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0, "an integer >= 0"


def _positive(v):
    return (isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0,
            "a positive number")


def _non_negative(v):
    return (isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0,
            "a number >= 0")


def _bool(v):
    return isinstance(v, bool), "true or false"


def _text(v):
    return isinstance(v, str) and v != "", "a file name"


def _one_of(*choices):
    return lambda v: (v in choices, " or ".join(f"`{c}`" for c in choices))


def _optional(check):
    def inner(v):
        ok, what = check(v)
        return v is None or ok, what + " (or null)"
    return inner


def _link(prefix):
    return {"bandwidth_gb_s": (f"{prefix}_bw", _positive),
            "latency_us": (f"{prefix}_latency", _non_negative)}


# key -> (Settings field, check) or a nested section; a field of None checks only
SCHEMA = {
    "training": {
        "strategy": (None, _one_of("moe_expert_parallel")),
        "expert_count": ("experts", _positive_int),
        "redundant_experts": ("redundant", _count),
        "top_k": ("topk", _positive_int),
        "communication": {
            "backend": (None, _one_of("deep_ep")),
            "topology": ("routing", _one_of("hierarchical", "flat")),
            "bandwidth_optimization": ("eplb", _bool),
        },
    },
    "cluster": {
        "ranks": ("ranks", _positive_int),
        "nodes": ("nodes", _positive_int),
        "self_copies": ("self_copies", _one_of("port", "local")),
        "shared_memory": ("shared_memory", _bool),
        "links": {"nvlink": _link("nvlink"), "rdma": _link("rdma"),
                  "local": {"bandwidth_gb_s": ("local_bw", _positive)}},
    },
    "workload": {
        "tokens_per_rank": ("tokens", _positive_int),
        "hidden": ("hidden", _positive_int),
        "expert_groups": ("groups", _positive_int),
        "topk_groups": ("topk_groups", _positive_int),
        "zipf": ("zipf", _non_negative),
        "drift": ("drift", _non_negative),
        "seed": ("seed", _count),
        "trace": ("trace", _text),
        "chunk_tokens": ("chunk", _positive_int),
        "dispatch_dtype": ("dispatch_dtype", _one_of("fp8", "bf16")),
    },
    "projection": {
        "enabled": ("project", _bool),
        "intermediate": ("intermediate", _positive_int),
        "tcsim_config": ("tcsim_config", _one_of("h100_like", "h200_like")),
        "compute_tflops": ("compute_tflops", _optional(_positive)),
        "comm_sms": ("comm_sms", _count),
    },
}


def load_config(path: str) -> dict:
    """{Settings field: value} from the file; EPError (with a Label) on any mistake."""
    import yaml
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise EPError(f"cannot read `{path}`: {e.strerror or e}", BAD_CONFIG_FILE) from None
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as e:
        raise EPError(f"`{path}` is not valid YAML: {getattr(e, 'problem', e)}",
                      BAD_CONFIG_FILE, _yaml_error_label(path, e, text)) from None
    out: dict = {}
    if root is not None:
        _section(root, SCHEMA, (), path, out, yaml.SafeLoader(""))
    return out


def _section(node, schema: dict, where: tuple, path: str, out: dict, loader) -> None:
    import yaml
    if not isinstance(node, yaml.MappingNode):
        raise EPError(f"`{'.'.join(where) or 'the file'}` must be a mapping of keys",
                      BAD_CONFIG_VALUE, _node_label(path, node))
    for key_node, value_node in node.value:
        key = key_node.value
        full = ".".join(where + (str(key),))
        if key not in schema:
            known = ", ".join(schema)
            raise EPError(f"unknown key `{full}`", UNKNOWN_CONFIG_KEY,
                          _node_label(path, key_node, "not a key of this section"),
                          help=f"`{'.'.join(where) or 'the file'}` takes: {known}")
        entry = schema[key]
        if isinstance(entry, dict):
            _section(value_node, entry, where + (key,), path, out, loader)
            continue
        field, check = entry
        try:
            value = loader.construct_object(value_node, deep=True)
        except yaml.YAMLError as e:
            raise EPError(f"bad value for `{full}`: {e}", BAD_CONFIG_VALUE,
                          _node_label(path, value_node)) from None
        ok, expected = check(value)
        if not ok:
            raise EPError(f"bad value for `{full}`: expected {expected}, got {value!r}",
                          BAD_CONFIG_VALUE, _node_label(path, value_node, f"expected {expected}"))
        if field is not None:
            out[field] = float(value) if check in (_positive, _non_negative) else value


def _yaml_error_label(path: str, err, text: str) -> Label | None:
    """Where the parser stopped; where the construct it was in began when it stopped at
    the end of the file (an unclosed bracket)."""
    mark, context = getattr(err, "problem_mark", None), getattr(err, "context_mark", None)
    if mark is None:
        return None
    if context is not None and mark.line >= len(text.splitlines()):
        return _label(path, context, context, err.context or "")
    return _label(path, mark, mark, err.problem or "")


def _node_label(path: str, node, message: str = "") -> Label:
    return _label(path, node.start_mark, node.end_mark, message)


def _label(path: str, start, end, message: str = "") -> Label:
    end_col = end.column + 1 if end.line == start.line else start.column + 2
    return Label(path, start.line + 1, start.column + 1, start.line + 1,
                 max(end_col, start.column + 2), message)
