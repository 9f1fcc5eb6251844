"""Binding launch arguments to a program's signature, with the runtime's one binder
(`runtime/binding.py`: the same checks, error types and TL06xx codes as a CPU kernel's),
then the grid from the bound symbols.

In timing mode an argument may be a `(shape, dtype)` pair instead of an array: an
8192^3 GEMM is simulated without allocating its 400 MB of operands. Not so a tensor whose
*values* steer the program (an `LDG` reads it: a loop bound, a scale, an index): its
values decide addresses and trip counts, so it must be an array in both modes.
"""
from __future__ import annotations

from ...dtypes import numpy_dtype
from ..binding import BindingPlan, ShapeOnly
from ..errors import LaunchTypeError, codes
from ..manifest import kernel_spec
from .grid import evaluate


def signature(program):
    """The program's signature as the binder's KernelSpec (a manifest entry's record). A
    tensor no DMA.ST writes is read-only: it may be a read-only array and alias others."""
    written = {i.args[0].tensor for i in program.code if i.op == "DMA.ST"}

    def entry(p):
        access = "readwrite" if p.name in written else "read"
        return {"name": p.name, "kind": p.kind, "dtype": p.dtype, "shape": list(p.shape),
                "access": access}
    return kernel_spec({
        "name": program.name,
        "params": [entry(p) for p in program.params if p.kind not in ("workspace", "view")],
        "symbols": [name for name, _ in program.symbols],
        "workspaces": [entry(p) for p in program.params if p.kind == "workspace"],
        "grid": list(program.grid)}, f"tcsim program {program.name!r}")


def value_params(program) -> set[str]:
    """Tensors whose values the program reads one by one (`LDG`), so that a timing-only
    run needs their data, not only their shape."""
    from ...targets.tcsim.isa import Glob
    return {a.tensor for ins in program.code if ins.op in ("LDG", "ATOM.ADD")
            for a in ins.args if isinstance(a, Glob)}


def bind(program, args, kwargs, functional: bool, out_idx=None):
    """(tensors by name, environment of symbol / scalar values and `__grid__`, the
    outputs the binder allocated for `out_idx`: None, one array or a tuple)."""
    plan = BindingPlan(signature(program), out_idx)
    if not functional:
        by_value = value_params(program)
        names = plan.names
        args = tuple(_shape_only(a, n, by_value) for a, n in zip(args, names)) + \
            tuple(args[len(names):])
        kwargs = {k: _shape_only(v, k, by_value) for k, v in kwargs.items()}
    bound = plan.bind_named(tuple(args), kwargs)
    env = dict(bound.values)
    tensors = add_views(program, dict(bound.tensors), env)
    env["__grid__"] = grid_of(program, env)
    return tensors, env, bound.result


def add_views(program, tensors: dict, env: dict) -> dict:
    """`tensors` with the program's views: their source's memory, reshaped."""
    from ..sizes import SizeExpr
    for p in program.params:
        if p.kind == "view" and p.name not in tensors:
            shape = tuple(d if isinstance(d, int) else SizeExpr(str(d), p.name).evaluate(env)
                          for d in p.shape)
            src = tensors[p.source]
            tensors[p.name] = ShapeOnly(shape, src.dtype) if isinstance(src, ShapeOnly) \
                else src.reshape(shape)       # a C-contiguous array: the same memory
    return tensors


def grid_of(program, env) -> list:
    """The program's grid (x, y, z) for the bound sizes; all zeros when it is empty."""
    grid = [evaluate(g, env) for g in program.grid] + [1] * (3 - len(program.grid))
    return [0, 0, 0] if min(grid) <= 0 else grid


def _shape_only(value, name: str, by_value: set):
    """A `(shape, dtype)` pair as a ShapeOnly stand-in (refused for a tensor whose values
    the program reads); anything else as it is."""
    if not (isinstance(value, tuple) and len(value) == 2
            and isinstance(value[0], (tuple, list))):
        return value
    if name in by_value:
        raise LaunchTypeError(
            f"argument {name!r}: the program reads its values (LDG: loop bounds, scales or "
            f"indices), so a timing-only run needs the array, not only (shape, dtype); pass "
            f"the real {name} (or representative values)", codes.ARG_NOT_TENSOR, name)
    shape, dtype = value
    return ShapeOnly(shape, numpy_dtype(dtype) if isinstance(dtype, str) else dtype)
