"""The profiler and autotuner tests use a private cache directory, never the user's.

That directory holds a fixed host-peaks memo (the figures of a plausible 2-core AVX-512
host), so the CPU roofline the tests read — its ridge, hence a kernel's named bound,
and the autotuner's model — does not depend on what other processes did to a quick
measurement of this host. The memo is of the first layout (no cache levels: every
kernel's memory ceiling is the DRAM read, whatever its working set) and not
provisional, so no profile measures it again. The measuring, the cache levels and
the re-measuring policy are tested in test_hostpeaks.py and test_cache_roofline.py.
"""
import pytest

GFLOP, GB = 1e9, 1e9


def _rates(one: float) -> dict:
    return {"1": one, "2": 2 * one}


PEAKS = {
    "format": 1, "quick": False, "cpu": "fixed figures of the profiler tests",
    "threads": ["1", "2"], "vector_widths": [128, 256, 512],
    "fma": {"float32": {"128": _rates(32 * GFLOP), "256": _rates(64 * GFLOP),
                        "512": _rates(128 * GFLOP)},
            "float64": {"128": _rates(16 * GFLOP), "256": _rates(32 * GFLOP),
                        "512": _rates(64 * GFLOP)}},
    "bandwidth": {"read": {"1": 10 * GB, "2": 14 * GB},
                  "copy": {"1": 8 * GB, "2": 12 * GB}},
    "stream_bytes": 1 << 28, "bf16_dot": {"512": _rates(256 * GFLOP)}, "amx": None,
}


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory):
    from tilelang.profiler import hostpeaks
    path = str(tmp_path_factory.mktemp("tilelang-cache"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TILELANG_CACHE_DIR", path)
        assert PEAKS["format"] in hostpeaks.READS and not hostpeaks.provisional(PEAKS)
        hostpeaks.store(PEAKS)
        assert hostpeaks.load() == PEAKS
    return path


@pytest.fixture(autouse=True)
def private_cache(shared_cache, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", shared_cache)
    monkeypatch.delenv("TILELANG_DISABLE_CACHE", raising=False)
    return shared_cache
