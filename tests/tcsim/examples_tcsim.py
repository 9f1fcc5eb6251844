"""Helpers for running the spine's example kernels on tcsim: compile once per
(example, defines, config), draw inputs, compare with the numpy references."""
from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _load_references():
    spec = importlib.util.spec_from_file_location("tcsim_example_refs",
                                                  EXAMPLES / "references.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ref = _load_references()


def tile_ir(module, reuse: bool = True):
    """The IR tcsim compiles: the tcsim pipeline's (`simplify`, then the arena plan of
    `memory_reuse` with the tcsim rules unless `reuse` is off)."""
    from tilelang.driver import make_options
    from tilelang.driver.stages import lower
    return lower(module, make_options(target="tcsim", memory_reuse=reuse))


@functools.lru_cache(maxsize=None)
def _build(name: str, defines: tuple, config: str, raster: int, reuse: bool,
           cluster: tuple = (1, 1, 1)):
    from tilelang.codegen.tcsim import compile_module
    from tilelang.frontend import parse_module
    path = EXAMPLES / f"{name}.tl"
    module = parse_module(path.read_text(), str(path), defines=dict(defines) or None)
    return compile_module(tile_ir(module, reuse), config, raster=raster, cluster=cluster)


def artifact(name: str, kernel: str | None = None, config="tiny", raster=0, reuse=True,
             cluster=(1, 1, 1), **defines):
    key = tuple(sorted(defines.items()))
    return _build(name, key, config, raster, reuse, tuple(cluster))[kernel or name]


def np_dtype(dtype: str):
    from tilelang.dtypes import numpy_dtype
    return numpy_dtype(dtype)


def random(rng, shape, dtype: str, scale: float = 1.0):
    return (rng.standard_normal(shape) * scale).astype(np_dtype(dtype))


def assert_close(got, want, rtol, atol=0.0, what=""):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=rtol, atol=atol, err_msg=what)


def assert_sum_close(got, want, abs_sum, tol, what=""):
    """|got - want| <= tol * sum|terms|: the rounding bound of a sum in any order."""
    err = np.abs(np.asarray(got, np.float64) - np.asarray(want, np.float64))
    bound = tol * np.asarray(abs_sum, np.float64) + 1e-30
    assert (err <= bound).all(), f"{what}: max err/bound {float((err / bound).max()):.3g}"
