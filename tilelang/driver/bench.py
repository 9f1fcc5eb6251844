"""`tilec run`'s inputs: the `--shape` / `--arg` assignments, and random arrays of the
right dtypes and shapes for a kernel's signature.

Shapes come from the kernel's IR signature with the symbolic sizes the user gives; the
target makes the arrays of integer tensors (`Target.make_index_input`: often indices).
How the kernel then runs, and what is printed, is the target's (`Target.run`).
"""
from __future__ import annotations

import math

from .. import dtypes
from ..diagnostics import Diagnostic, TileLangError
from ..diagnostics.codes_driver import BAD_ARG, MISSING_SIZE
from ..ir import nodes as ir
from ..ir.evaluate import NotConstant, evaluate


def parse_assignments(text_items, what: str) -> dict:
    """`M=1024,N=512` (possibly repeated) -> {"M": 1024, "N": 512}."""
    out = {}
    for item in text_items:
        for pair in filter(None, (p.strip() for p in item.split(","))):
            name, sep, raw = pair.partition("=")
            try:
                if not sep or not name.strip().isidentifier():
                    raise ValueError
                value = float(raw) if any(c in raw for c in ".eE") else int(raw)
            except ValueError:
                raise TileLangError(Diagnostic(
                    BAD_ARG, f"bad {what} `{pair}`: expected NAME=NUMBER")) from None
            if isinstance(value, float) and not math.isfinite(value):
                raise TileLangError(Diagnostic(
                    BAD_ARG, f"bad {what} `{pair}`: {raw.strip()} is beyond the range of "
                             f"float64"))
            out[name.strip()] = value
    return out


def make_arguments(func, sizes: dict, scalars: dict, seed: int = 0,
                   materialize: bool = True, needs_data=frozenset(),
                   index_input=None, index: dict | None = None) -> list:
    """Random float (and bool) tensors, the integer tensors (indices, lengths, a
    schedule) as `index` says ({name: IndexSpec}: `tilec run --index`, index_inputs.py),
    else as `index_input(rng, shape, dtype, param)` makes them (a target's
    `make_index_input`), and the scalar values, in signature order. `materialize=False`
    gives `(shape, dtype)` pairs instead of tensors (a timing-only simulation of a large
    shape needs no data), except for the tensors in `needs_data` (a timing simulation
    reads their values: loop bounds, scales, indices) and the integer tensors `index`
    makes."""
    import numpy as np
    check_sizes(func, sizes)
    scalar_names = [p.name for p in func.params if isinstance(p, ir.Var)]
    unknown = [n for n in scalars if n not in scalar_names]
    if unknown:
        tensors = [n for n in unknown if n in {p.name for p in func.params}]
        what = (f"`{tensors[0]}` is a tensor (`--arg` gives scalar parameters)" if tensors
                else f"kernel `{func.name}` has no parameter {', '.join(unknown)}")
        raise TileLangError(Diagnostic(
            BAD_ARG, what, notes=[f"its scalar parameters are: "
                                  f"{', '.join(scalar_names) if scalar_names else '(none)'}"]))
    shapes = {p.name: _shape(p, sizes) for p in func.params if isinstance(p, ir.Buffer)}
    if materialize:
        _check_memory(func, shapes)
    from .index_inputs import make_inputs
    rng = np.random.default_rng(seed)
    ints = {p.name: (shapes[p.name], dtypes.numpy_dtype(p.dtype)) for p in func.params
            if isinstance(p, ir.Buffer) and dtypes.is_int(p.dtype)}
    made = make_inputs(index or {}, ints, rng)
    args = []
    for p in func.params:
        if isinstance(p, ir.Buffer) and p.name in made:
            args.append(made[p.name])
        elif isinstance(p, ir.Buffer) and not materialize and p.name not in needs_data:
            args.append((shapes[p.name], p.dtype))
        elif isinstance(p, ir.Buffer):
            args.append(_random_tensor(rng, shapes[p.name], p, index_input))
        else:
            default = 1.0 if dtypes.is_float(p.dtype) else 1
            args.append(scalars.get(p.name, default))
    return args


MAX_SIZE = 2**31 - 1        # symbolic sizes are int32 in the kernel


def check_sizes(func, sizes: dict) -> None:
    """Every symbolic size given, each a whole number in 0 .. 2**31 - 1, and no other
    name: the user's mistakes, said before anything is allocated."""
    names = [s.name for s in func.symbols]
    unknown = [n for n in sizes if n not in names]
    if unknown:
        raise TileLangError(Diagnostic(
            BAD_ARG, f"kernel `{func.name}` has no symbolic size {', '.join(unknown)}",
            notes=[f"its sizes are: {', '.join(names) if names else '(none)'}"]))
    missing = [n for n in names if n not in sizes]
    if missing:
        raise TileLangError(Diagnostic(
            MISSING_SIZE, f"kernel `{func.name}` needs sizes for {', '.join(missing)}",
            help="give them as `--shape " + ",".join(f"{n}=..." for n in missing) + "`"))
    for name in names:
        value = sizes[name]
        if not isinstance(value, int) or not 0 <= value <= MAX_SIZE:
            raise TileLangError(Diagnostic(
                BAD_ARG, f"bad size `{name}={value}`: a size is a whole number from 0 to "
                         f"{MAX_SIZE}"))


def _check_memory(func, shapes: dict) -> None:
    """The random inputs must fit in the memory this machine has free (each float one
    is drawn in float32 and converted: count one float32 copy of the largest on top)."""
    import numpy as np
    tensors = [p for p in func.params if isinstance(p, ir.Buffer)]
    count = {p.name: int(np.prod(shapes[p.name], dtype=object)) for p in tensors}
    total = sum(count[p.name] * dtypes.nbytes(p.dtype) for p in tensors)
    total += 4 * max(count.values(), default=0)
    available = _available_memory()
    if available is not None and total > available:
        biggest = max(tensors, key=lambda p: count[p.name] * dtypes.nbytes(p.dtype))
        raise TileLangError(Diagnostic(
            BAD_ARG, f"the tensors of `{func.name}` need {_gib(total)} but this machine "
                     f"has {_gib(available)} of memory available",
            notes=[f"the largest is `{biggest.name}`, {biggest.dtype} of shape "
                   f"{shapes[biggest.name]}"],
            help="use smaller `--shape` sizes"))


def _available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux MemAvailable), else None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def _shape(buf, sizes) -> tuple:
    try:
        return tuple(int(evaluate(d, sizes)) for d in buf.shape)
    except NotConstant as e:
        raise TileLangError(Diagnostic(MISSING_SIZE, f"cannot size `{buf.name}`: "
                                                     f"{e} is not given")) from None


def _random_tensor(rng, shape, param, index_input):
    import numpy as np
    from .index_inputs import default_input
    dtype = param.dtype
    if dtypes.is_float(dtype):
        x = rng.random(size=shape, dtype=np.float32)      # uniform in [-1, 1), in place
        x *= 2
        x -= 1
        return x.astype(dtypes.numpy_dtype(dtype), copy=False)
    if dtypes.is_bool(dtype):
        return rng.random(size=shape) < 0.5
    if index_input is not None:
        return index_input(rng, shape, dtype, param)
    return default_input(shape, dtypes.numpy_dtype(dtype), rng)
