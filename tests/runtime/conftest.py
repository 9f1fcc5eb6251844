"""Fixtures for the runtime tests: hand-written ABI kernels built once per session."""
import os

import pytest

import runtime_ckernels as ck

needs_cc = pytest.mark.skipif(ck.CC is None, reason="no C compiler on this machine")


@pytest.fixture(scope="session")
def libpath(tmp_path_factory):
    if ck.CC is None:
        pytest.skip("no C compiler on this machine")
    out = tmp_path_factory.mktemp("rtlib")
    return ck.build(ck.library_source(list(ck.KERNELS)), str(out / "kernels.so"))


@pytest.fixture(scope="session")
def lib(libpath):
    from tilelang.runtime.artifact import load
    return load(libpath)


@pytest.fixture
def build_lib(tmp_path):
    """Build a one-off library: build_lib(names, manifest_overrides=..., omit_symbols=...)."""
    if ck.CC is None:
        pytest.skip("no C compiler on this machine")

    def build(names, name="one.so", **kw):
        return ck.build(ck.library_source(names, **kw), os.path.join(tmp_path, name))

    return build
