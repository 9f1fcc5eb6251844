"""Routing traces: which experts each token goes to, step after step, layer by layer.

A trace is `topk_idx[steps, layers, tokens, topk]` (logical expert ids, int16) plus the
parameters that made it. One trace feeds EPLB (its loads), the collectives (a step of a
layer, the tokens split over the ranks in order: rank r owns tokens
`[r * tokens / ranks, (r + 1) * tokens / ranks)`) and the cluster model.

`generate` makes synthetic traces with the three properties that decide load balance and
traffic in DeepSeek-style MoE:

* **skew**: expert popularity is Zipf(s) — the i-th most popular expert has weight
  `1 / i**s` — over a random order of the experts, drawn for each layer (s = 0: uniform);
* **drift**: from one step to the next every expert's log-weight takes a Gaussian step of
  standard deviation `drift`, independently in each layer, so a placement fitted on one
  window of steps meets somewhat different loads in the next;
* **group-limited routing** (DeepSeek-V3): the experts form `num_groups` contiguous groups,
  a token first keeps the `topk_groups` groups whose two best scores sum highest, then its
  `topk` best experts among those.

A token's scores are `weight / Exp(1)` draws: its top-k is then a sample without
replacement in proportion to the weights (the exponential race), so every token has
`topk` distinct experts and an expert's share of tokens follows its weight.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from .errors_eplb import EPError
from ..diagnostics.codes_eplb import BAD_TRACE

_CHUNK = 8192          # tokens scored at once: bounds the generator's memory to ~10 MB


@dataclass
class RoutingTrace:
    topk_idx: np.ndarray            # [steps, layers, tokens, topk], int16 logical experts
    num_experts: int
    num_groups: int = 1
    topk_groups: int = 1
    params: dict = field(default_factory=dict)   # how it was made (for the record)

    def __post_init__(self):
        if self.topk_idx.ndim != 4:
            raise EPError(f"topk_idx must be [steps, layers, tokens, topk], not shape "
                          f"{self.topk_idx.shape}", BAD_TRACE)
        if self.topk_idx.size and (self.topk_idx.max() >= self.num_experts
                                   or self.topk_idx.min() < -1):
            raise EPError(f"topk_idx holds experts outside 0..{self.num_experts - 1}",
                          BAD_TRACE)

    steps = property(lambda self: self.topk_idx.shape[0])
    layers = property(lambda self: self.topk_idx.shape[1])
    tokens = property(lambda self: self.topk_idx.shape[2])
    topk = property(lambda self: self.topk_idx.shape[3])

    def loads(self, steps=None) -> np.ndarray:
        """`[layers, experts]` tokens routed to each expert over `steps` (a slice or a
        sequence of step indices; default all)."""
        sel = self.topk_idx if steps is None else self.topk_idx[steps]
        if sel.ndim == 3:                     # a single step index
            sel = sel[None]
        out = np.zeros((self.layers, self.num_experts))
        for layer in range(self.layers):
            ids = sel[:, layer].reshape(-1)
            out[layer] = np.bincount(ids[ids >= 0], minlength=self.num_experts)
        return out

    def routing(self, step: int, layer: int, num_ranks: int) -> np.ndarray:
        """`[ranks, tokens per rank, topk]`: the step's routing of one layer, split over
        `num_ranks` source ranks in token order."""
        if self.tokens % num_ranks:
            raise EPError(f"the trace's {self.tokens} tokens a step do not split evenly "
                          f"over {num_ranks} ranks")
        return self.topk_idx[step, layer].reshape(num_ranks, -1, self.topk)

    def save(self, path) -> None:
        meta = dict(num_experts=self.num_experts, num_groups=self.num_groups,
                    topk_groups=self.topk_groups, params=self.params)
        with open(path, "wb") as f:           # a file object: savez adds no suffix
            np.savez(f, topk_idx=self.topk_idx, meta=np.array(json.dumps(meta)))

    @classmethod
    def load(cls, path) -> "RoutingTrace":
        try:
            with np.load(path, allow_pickle=False) as data:
                topk_idx = data["topk_idx"]
                meta = json.loads(str(data["meta"]))
        except (OSError, ValueError, KeyError) as e:
            raise EPError(f"`{path}` is not a routing trace: {e}", BAD_TRACE) from None
        try:
            return cls(topk_idx.astype(np.int16, copy=False), int(meta["num_experts"]),
                       int(meta.get("num_groups", 1)), int(meta.get("topk_groups", 1)),
                       dict(meta.get("params", {})))
        except (KeyError, TypeError, ValueError) as e:
            raise EPError(f"`{path}` is not a routing trace: {e}", BAD_TRACE) from None


def generate(*, num_experts: int, topk: int, tokens: int, steps: int = 2, layers: int = 1,
             zipf_s: float = 1.0, drift: float = 0.0, num_groups: int = 1,
             topk_groups: int = 1, seed: int = 0) -> RoutingTrace:
    """A synthetic trace (module docstring). `tokens` per step, over all ranks."""
    _check(num_experts, topk, tokens, steps, layers, zipf_s, drift, num_groups, topk_groups)
    rng = np.random.default_rng(seed)
    base = -zipf_s * np.log(np.arange(1, num_experts + 1))
    log_w = np.stack([base[rng.permutation(num_experts)] for _ in range(layers)])
    out = np.empty((steps, layers, tokens, topk), dtype=np.int16)
    for step in range(steps):
        if step and drift:
            log_w = log_w + rng.normal(0.0, drift, size=log_w.shape)
        for layer in range(layers):
            w = np.exp(log_w[layer] - log_w[layer].max()).astype(np.float32)
            for start in range(0, tokens, _CHUNK):
                n = min(_CHUNK, tokens - start)
                out[step, layer, start:start + n] = _route(
                    rng, w, n, topk, num_groups, topk_groups)
    params = dict(zipf_s=zipf_s, drift=drift, seed=seed, generator="tilelang.ep.trace")
    return RoutingTrace(out, num_experts, num_groups, topk_groups, params)


def _route(rng, weight, n: int, topk: int, num_groups: int, topk_groups: int):
    """[n, topk] experts for n tokens (group-limited top-k of weight / Exp(1) scores)."""
    experts = weight.shape[0]
    scores = rng.standard_exponential((n, experts), dtype=np.float32)
    with np.errstate(divide="ignore"):       # a draw of exactly 0 scores inf: picked
        np.divide(weight, scores, out=scores)
    if topk_groups >= num_groups:
        return _top(scores, topk)
    size = experts // num_groups
    grouped = scores.reshape(n, num_groups, size)
    best2 = np.sort(grouped, axis=2)[:, :, -2:].sum(axis=2) if size > 1 else grouped[:, :, 0]
    groups = np.argpartition(best2, num_groups - topk_groups, axis=1)[:, -topk_groups:]
    kept = grouped[np.arange(n)[:, None], groups].reshape(n, topk_groups * size)
    pick = _top(kept, topk)
    return np.take_along_axis(groups, pick // size, axis=1) * size + pick % size


def _top(scores, k: int):
    """Indices of the k largest scores of each row (in no particular order)."""
    return np.argpartition(scores, scores.shape[1] - k, axis=1)[:, -k:]


def _check(num_experts, topk, tokens, steps, layers, zipf_s, drift, num_groups,
           topk_groups) -> None:
    for name, value in (("num_experts", num_experts), ("topk", topk), ("tokens", tokens),
                        ("steps", steps), ("layers", layers), ("num_groups", num_groups),
                        ("topk_groups", topk_groups)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise EPError(f"{name} must be a positive integer, not {value!r}")
    if num_experts > np.iinfo(np.int16).max:
        raise EPError(f"num_experts ({num_experts}) above {np.iinfo(np.int16).max}")
    if num_experts % num_groups:
        raise EPError(f"num_experts ({num_experts}) must divide into num_groups "
                      f"({num_groups})")
    usable = min(topk_groups, num_groups) * (num_experts // num_groups)
    if topk > usable:
        raise EPError(f"topk ({topk}) exceeds the {usable} experts that topk_groups "
                      f"({topk_groups}) of {num_groups} groups leave")
    if not (np.isfinite(zipf_s) and zipf_s >= 0):
        raise EPError(f"zipf_s must be a number >= 0, not {zipf_s!r}")
    if not (np.isfinite(drift) and drift >= 0):
        raise EPError(f"drift must be a number >= 0, not {drift!r}")
