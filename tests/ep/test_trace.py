"""The routing-trace generator: distinct experts per token, group limits, the Zipf skew
and drift it promises, .npz round trips and bad files."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tilelang.ep.errors_eplb import EPError
from tilelang.ep.trace import RoutingTrace, generate


@settings(max_examples=15, deadline=None)
@given(st.sampled_from([(8, 1, 1), (16, 4, 2), (32, 8, 4), (24, 3, 3)]),
       st.integers(1, 4), st.integers(1, 300), st.floats(0, 2), st.integers(0, 99))
def test_every_token_has_distinct_experts_within_its_groups(groups, topk, tokens, s, seed):
    experts, num_groups, topk_groups = groups
    size = experts // num_groups
    topk = min(topk, topk_groups * size)
    tr = generate(num_experts=experts, topk=topk, tokens=tokens, steps=2, layers=2,
                  zipf_s=s, drift=0.1, num_groups=num_groups, topk_groups=topk_groups,
                  seed=seed)
    assert tr.topk_idx.shape == (2, 2, tokens, topk) and tr.topk_idx.dtype == np.int16
    idx = tr.topk_idx.astype(int)
    assert idx.min() >= 0 and idx.max() < experts
    srt = np.sort(idx, axis=3)
    assert (srt[..., 1:] != srt[..., :-1]).all()                # distinct
    used_groups = np.sort(idx // size, axis=3)
    n_groups = 1 + (used_groups[..., 1:] != used_groups[..., :-1]).sum(axis=3)
    assert (n_groups <= topk_groups).all()
    assert tr.loads().sum() == 2 * 2 * tokens * topk          # steps x layers


def test_top1_shares_follow_the_zipf_weights():
    """With top-1 and no groups a token's expert is drawn in proportion to its weight."""
    tr = generate(num_experts=16, topk=1, tokens=200_000, steps=1, zipf_s=1.0, seed=3)
    share = np.sort(tr.loads()[0])[::-1] / 200_000
    expected = 1 / np.arange(1, 17)
    expected /= expected.sum()
    np.testing.assert_allclose(share, expected, atol=0.004)


def test_zipf_zero_is_uniform_and_skew_grows_with_s():
    def peak(s):
        loads = generate(num_experts=64, topk=4, tokens=20_000, steps=1, zipf_s=s,
                         seed=1).loads()[0]
        return loads.max() / loads.mean()
    assert peak(0.0) < 1.15
    assert peak(0.0) < peak(0.8) < peak(1.5)


def test_layers_have_their_own_order_and_drift_moves_loads():
    tr = generate(num_experts=32, topk=2, tokens=20_000, steps=2, layers=2, zipf_s=1.2,
                  drift=0.0, seed=5)
    l0, l1 = tr.loads(0), tr.loads(1)
    assert np.argmax(l0[0]) != np.argmax(l0[1])                 # per-layer permutation
    np.testing.assert_allclose(l0 / l0.sum(1, keepdims=True), l1 / l1.sum(1, keepdims=True),
                               atol=0.01)                      # no drift: same law
    moved = generate(num_experts=32, topk=2, tokens=20_000, steps=2, layers=1, zipf_s=1.2,
                     drift=1.0, seed=5)
    a, b = moved.loads(0)[0], moved.loads(1)[0]
    assert np.abs(a - b).sum() / a.sum() > 0.2


def test_same_seed_same_trace():
    a = generate(num_experts=16, topk=2, tokens=100, seed=9)
    b = generate(num_experts=16, topk=2, tokens=100, seed=9)
    assert np.array_equal(a.topk_idx, b.topk_idx)


def test_save_load_round_trip(tmp_path):
    tr = generate(num_experts=16, topk=2, tokens=64, num_groups=4, topk_groups=2, seed=2)
    path = tmp_path / "t.npz"
    tr.save(path)
    back = RoutingTrace.load(path)
    assert np.array_equal(back.topk_idx, tr.topk_idx)
    assert (back.num_experts, back.num_groups, back.topk_groups) == (16, 4, 2)
    assert back.params["seed"] == 2
    assert back.routing(1, 0, 4).shape == (4, 16, 2)
    with pytest.raises(EPError, match="split evenly"):
        back.routing(0, 0, 5)


def test_bad_trace_files(tmp_path):
    np.savez(tmp_path / "x.npz", other=np.zeros(3))
    for path in (tmp_path / "x.npz", tmp_path / "missing.npz"):
        with pytest.raises(EPError, match="not a routing trace") as info:
            RoutingTrace.load(path)
        assert info.value.code == "TL1202"
    (tmp_path / "junk.npz").write_text("junk")
    with pytest.raises(EPError, match="not a routing trace"):
        RoutingTrace.load(tmp_path / "junk.npz")


@pytest.mark.parametrize("kwargs,words", [
    (dict(topk=9, num_experts=8), "topk (9) exceeds"),
    (dict(topk=3, num_experts=8, num_groups=4, topk_groups=1), "exceeds the 2 experts"),
    (dict(topk=1, num_experts=10, num_groups=4), "divide into num_groups"),
    (dict(topk=1, num_experts=8, zipf_s=-1.0), "zipf_s"),
    (dict(topk=0, num_experts=8), "topk must be a positive integer"),
])
def test_bad_generator_arguments(kwargs, words):
    with pytest.raises(EPError, match=None) as info:
        generate(tokens=4, **kwargs)
    assert words in str(info.value)
