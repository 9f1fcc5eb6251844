"""The EP kernels compile once in the test process; the ranks then hit the disk cache."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def ep_kernels():
    from tilelang.ops.ep import combine_kernels, dispatch_kernels, layout_kernels
    layout_kernels()
    for dt in ("bfloat16", "float32", "float8_e4m3"):
        dispatch_kernels(dt)
    for dt in ("bfloat16", "float32"):
        combine_kernels(dt)
