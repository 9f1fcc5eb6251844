"""The projection's compute times: tcsim runs of step_kernels.tl, a slice of a large grid
scaled to the whole, memoised in memory and in the cache directory."""
from __future__ import annotations

import pytest

from tilelang.ep.cluster import timings
from tilelang.ep.cluster.projection import Model


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(timings, "_MEMO", {})
    calls = []
    real = timings._simulate
    monkeypatch.setattr(timings, "_simulate",
                        lambda *a: calls.append(a[1:]) or real(*a))
    return calls


def test_scaled_gemm_is_close_to_the_whole_grid(fresh, monkeypatch):
    """10 x 30 tiles = 300 blocks: timed on 8 rows of tiles (240 blocks) and scaled;
    with a slice of 3 waves the whole grid runs at once."""
    scaled = timings.gemm_seconds(1280, 7680, 64)
    assert fresh[-1][1][0] == ((1024, 64), "bfloat16")          # the slice
    monkeypatch.setattr(timings, "WAVES", 3)
    whole = timings.gemm_seconds(1280, 7680, 64)
    assert fresh[-1][1][0] == ((1280, 64), "bfloat16")
    assert scaled == pytest.approx(whole, rel=0.15)


def test_timings_are_memoised_on_disk(fresh, monkeypatch, tmp_path):
    a = timings.gemm_seconds(256, 512, 128)
    assert len(fresh) == 1 and (tmp_path / "ep-step-timings.json").exists()
    assert timings.gemm_seconds(256, 512, 128) == a and len(fresh) == 1
    monkeypatch.setattr(timings, "_MEMO", {})                     # a new process
    assert timings.gemm_seconds(256, 512, 128) == a and len(fresh) == 1
    assert timings.gemm_seconds(0, 512, 128) == 0.0


def test_attention_grows_with_heads_and_causal_length(fresh):
    one = timings.attention_seconds(256, 1)
    assert one > 0
    assert timings.attention_seconds(256, 8) > one
    assert timings.attention_seconds(512, 1) > one


def test_model_rate_override_needs_no_simulation(fresh):
    m = Model(tflops=100.0)
    assert m.gemm(1000, 1000, 1000) == pytest.approx(2e9 / 100e12)
    assert m.experts(0) == 0.0 and m.attention(128) > 0
    assert fresh == []
