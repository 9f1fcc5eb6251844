"""The kernels the ranks run (the EP collectives, the ring test's, the MoE example's
grouped GEMM) compile once in the test process; the ranks then hit the disk cache
instead of each compiling them at once."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def ep_kernels():
    from tilelang.ops.ep import (cast_kernels, combine_kernels, dispatch_kernels,
                                 layout_kernels)
    layout_kernels()
    dispatch_kernels()
    cast_kernels()
    for dt in ("bfloat16", "float32"):
        combine_kernels(dt)
    import tilelang
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    for path in (os.path.join(here, "kernels", "ring.tl"),
                 os.path.join(root, "examples", "moe", "grouped_gemm.tl")):
        tilelang.compile(path)


@pytest.fixture
def solo(monkeypatch):
    """A one-rank group of this process (and no group afterwards)."""
    from tilelang.runtime import ranks
    from tilelang.runtime.ranks import group as group_mod
    monkeypatch.setattr(group_mod, "_current", None)
    g = ranks.init()
    yield g
    monkeypatch.setattr(group_mod, "_current", None)
