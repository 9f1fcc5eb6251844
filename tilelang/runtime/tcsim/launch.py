"""Binding launch arguments to a program's signature: tensors by position (or keyword),
symbolic sizes from their shapes, the grid from the symbols.

In timing mode an argument may be a `(shape, dtype)` pair instead of an array: an
8192^3 GEMM is simulated without allocating its 400 MB of operands. Not so a tensor whose
*values* steer the program (an `LDG` reads it: a loop bound, a scale, an index): its
values decide addresses and trip counts, so it must be an array in both modes.
"""
from __future__ import annotations

import numpy as np

from ...dtypes import from_numpy, numpy_dtype
from .errors import LaunchError
from .grid import evaluate


class Shaped:
    """A stand-in for a tensor in timing-only mode: shape and dtype, no data."""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)


def _as_tensor(p, value, functional: bool):
    if isinstance(value, tuple) and len(value) == 2 and not functional:
        shape, dtype = value
        dt = numpy_dtype(dtype) if isinstance(dtype, str) else np.dtype(dtype)
        return Shaped(shape, dt)
    if not isinstance(value, np.ndarray):
        raise LaunchError(f"argument {p.name}: expected a numpy array, got "
                          f"{type(value).__name__}")
    if functional and not value.flags.c_contiguous:
        raise LaunchError(f"argument {p.name}: must be C-contiguous")
    return value        # timing mode keeps real arrays: scalar loads (LDG) read them


def value_params(program) -> set[str]:
    """Tensors whose values the program reads one by one (`LDG`), so that a timing-only
    run needs their data, not only their shape."""
    from ...targets.tcsim.isa import Glob
    return {a.tensor for ins in program.code if ins.op == "LDG"
            for a in ins.args if isinstance(a, Glob)}


def bind(program, args, kwargs, functional: bool):
    """(tensors by name, environment of symbol / scalar values and `__grid__`)."""
    inputs = [p for p in program.params if p.kind != "workspace"]
    if len(args) + len(kwargs) != len(inputs):
        raise LaunchError(f"{program.name} takes {len(inputs)} arguments "
                          f"({', '.join(p.name for p in inputs)}), got "
                          f"{len(args) + len(kwargs)}")
    values = dict(zip((p.name for p in inputs), args))
    for k, v in kwargs.items():
        if k in values or k not in {p.name for p in inputs}:
            raise LaunchError(f"{program.name}: bad keyword argument {k}")
        values[k] = v
    tensors, env = {}, {}
    by_value = set() if functional else value_params(program)
    for p in inputs:
        v = values[p.name]
        if p.kind == "scalar":
            env[p.name] = float(v) if p.dtype.startswith(("float", "bfloat")) else int(v)
            continue
        t = _as_tensor(p, v, functional)
        if isinstance(t, Shaped) and p.name in by_value:
            raise LaunchError(
                f"argument {p.name}: the program reads its values (LDG: loop bounds, "
                f"scales or indices), so a timing-only run needs the array, not only "
                f"(shape, dtype); pass the real {p.name} (or representative values)")
        _check_tensor(p, t, env)
        tensors[p.name] = t
    for p in program.params:
        if p.kind == "workspace":
            shape = tuple(s if isinstance(s, int) else env[s] for s in p.shape)
            dt = numpy_dtype(p.dtype)
            tensors[p.name] = np.zeros(shape, dt) if functional else Shaped(shape, dt)
    for name, _ in program.symbols:
        if name not in env:
            raise LaunchError(f"{program.name}: symbolic size {name} is not bound by any "
                              f"argument's shape")
    env["__grid__"] = [evaluate(g, env) for g in program.grid] + [1] * (3 - len(program.grid))
    if min(env["__grid__"]) <= 0:
        env["__grid__"] = [0, 0, 0]
    return tensors, env


def _check_tensor(p, t, env) -> None:
    if from_numpy(t.dtype) != p.dtype:
        raise LaunchError(f"argument {p.name}: dtype {t.dtype} is not {p.dtype}")
    if len(t.shape) != len(p.shape):
        raise LaunchError(f"argument {p.name}: rank {len(t.shape)} is not {len(p.shape)}")
    for dim, (want, got) in enumerate(zip(p.shape, t.shape)):
        if isinstance(want, int):
            if want != got:
                raise LaunchError(f"argument {p.name}: dim {dim} is {got}, not {want}")
        elif env.setdefault(want, got) != got:
            raise LaunchError(f"argument {p.name}: dim {dim} is {got} but {want} is "
                              f"{env[want]} from an earlier argument")
