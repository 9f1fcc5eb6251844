"""The reference interpreter: runs the IR of any target-neutral stage with numpy.

    result = run(module, "gemm", [a, b, c])          # arrays updated in place
    result = run(module, "gemm", [a, b, c], magnitudes=True)
    result.magnitudes["C"]                           # Σ|terms| of every element of C

It executes exactly what docs/semantics.md writes down: tile ops whole, loops and
element accesses of the lowered stages, the placement `memory_reuse` chose (buffers
sharing an arena share bytes), several grids one after another. It is slow on purpose
where that keeps it simple, and it checks what the language leaves undefined instead of
guessing: an out-of-bounds block-local access, two iterations of a parallel loop or two
blocks of a grid touching one element that one of them writes, an output (or an index,
a condition) that depends on memory never written, a float converted to an integer
outside its range. Each raises `UndefinedBehavior` (`.kind`, `.span`).

Only the standard library, numpy, ml_dtypes and the shared leaves are imported: `ir`
depends on no other layer.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..nodes import Buffer, Const, Module, PrimFunc, Var
from .machine import Machine
from .memory import Buf
from .values import NotSupported, UndefinedBehavior, V, eps, npdt, tiny

__all__ = ["run", "run_ranks", "Result", "UndefinedBehavior", "NotSupported", "bind_sizes", "eps",
           "tiny"]


@dataclass
class Result:
    """What a run leaves besides the updated arrays: `magnitudes` (tensor name -> float64
    array, when asked for) and `sizes` (the symbolic sizes the arguments bound)."""
    sizes: dict
    magnitudes: dict = field(default_factory=dict)


def run(module: Module | PrimFunc, name: str | None = None, args=(), *,
        magnitudes: bool = False, check_races: bool = True, block_order=None) -> Result:
    """Run kernel `name` of `module` (the only one when None) on `args` in signature
    order: numpy arrays of the parameters' dtypes, updated in place, and Python scalars.
    `block_order`: None (0, 1, ...), "reverse", or a numpy Generator to shuffle with."""
    func = _func(module, name)
    m = Machine(magnitudes=magnitudes, check_races=check_races, block_order=block_order)
    tensors, sizes = _bind(m, func, args)
    with np.errstate(all="ignore"):             # IEEE results, integer wrap-around
        m.stmt(func.body)
    return _finish(tensors, sizes)


def run_ranks(module: Module | PrimFunc, name: str | None, args_per_rank, *,
              magnitudes: bool = False, timeout: float = 30.0) -> list[Result]:
    """Run a multi-rank kernel on every rank at once: `args_per_rank[r]` are rank r's
    arguments (its copies of the symmetric tensors). One thread per rank."""
    import threading
    from .ranks import World
    func = _func(module, name)
    world = World(len(args_per_rank), timeout)
    machines, bound = [], []
    for r, args in enumerate(args_per_rank):
        m = Machine(magnitudes=magnitudes, rank=r, world=world)
        tensors, sizes = _bind(m, func, args)
        for buf in tensors:
            world.bufs[(r, buf.name)] = buf
        machines.append(m)
        bound.append((tensors, sizes))
    errors: list = [None] * len(machines)

    def one(r):
        try:
            with np.errstate(all="ignore"):
                machines[r].stmt(func.body)
        except BaseException as e:  # noqa: BLE001 - reported after every rank stopped
            errors[r] = e
            with world.cond:
                world.failed = e
                world.cond.notify_all()

    threads = [threading.Thread(target=one, args=(r,), daemon=True)
               for r in range(len(machines))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first = next((e for e in errors if e is not None and "another rank failed" not in str(e)),
                 next((e for e in errors if e is not None), None))
    if first is not None:
        raise first
    return [_finish(tensors, sizes) for tensors, sizes in bound]


def _bind(m: Machine, func: PrimFunc, args) -> tuple[list, dict]:
    if len(args) != len(func.params):
        raise TypeError(f"{func.name} takes {len(func.params)} arguments, got {len(args)}")
    sizes = bind_sizes(func, args)
    for sym in func.symbols:
        m.env[sym] = V(np.asarray(sizes[sym.name], dtype=npdt(sym.dtype)), sym.dtype)
    tensors = []
    for p, a in zip(func.params, args):
        if isinstance(p, Buffer):
            arr = _tensor(p, a)
            buf = Buf(p.name, p.dtype, arr.shape, "global", data=arr, initialized=True,
                      magnitudes=m.magnitudes)
            m.bufs[p.name] = buf
            tensors.append(buf)
        else:
            from .values import const, convert
            value = const(a, "float64" if isinstance(a, float) else "int64", m.magnitudes)
            m.env[p] = convert(value, p.dtype)
    return tensors, sizes


def _finish(tensors, sizes) -> Result:
    for buf in tensors:
        if buf.poison is not None and buf.poison.any():
            where = [int(i) for i in np.argwhere(buf.poison)[0]]
            raise UndefinedBehavior("uninitialized", f"`{buf.name}`{where} was written with "
                                                     f"a value computed from memory that "
                                                     f"was never written")
    return Result(sizes, {b.name: b.mag for b in tensors if b.mag is not None})


def _func(module, name) -> PrimFunc:
    if isinstance(module, PrimFunc):
        return module
    if name is None:
        if len(module.funcs) != 1:
            raise TypeError("the module has several kernels: name one")
        return module.funcs[0]
    return module.func(name)


def _tensor(p: Buffer, a) -> np.ndarray:
    if not isinstance(a, np.ndarray):
        raise TypeError(f"argument `{p.name}` must be a numpy array")
    if a.dtype != npdt(p.dtype):
        raise TypeError(f"argument `{p.name}` must be {p.dtype}, got {a.dtype}")
    if a.ndim != len(p.shape):
        raise TypeError(f"argument `{p.name}` must have {len(p.shape)} dims, got {a.ndim}")
    return a


def bind_sizes(func: PrimFunc, args) -> dict:
    """The symbolic sizes the tensor arguments' shapes give (checked for agreement)."""
    sizes: dict = {}
    for p, a in zip(func.params, args):
        if not isinstance(p, Buffer):
            continue
        for d, (entry, n) in enumerate(zip(p.shape, np.shape(a))):
            if isinstance(entry, Var):
                if sizes.setdefault(entry.name, int(n)) != int(n):
                    raise TypeError(f"`{p.name}` dim {d} is {n}, but {entry.name} is "
                                    f"{sizes[entry.name]}")
            elif isinstance(entry, Const) and int(entry.value) != int(n):
                raise TypeError(f"`{p.name}` dim {d} must be {entry.value}, got {n}")
    missing = [s.name for s in func.symbols if s.name not in sizes]
    if missing:
        raise TypeError(f"no tensor argument gives the size of {', '.join(missing)}")
    return sizes
