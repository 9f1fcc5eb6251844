"""`tilec run`'s inputs: the `--shape` / `--arg` assignments, and random arrays of the
right dtypes and shapes for a kernel's signature.

Shapes come from the kernel's IR signature with the symbolic sizes the user gives; the
target makes the arrays of integer tensors (`Target.make_index_input`: often indices).
How the kernel then runs, and what is printed, is the target's (`Target.run`).
"""
from __future__ import annotations

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
    missing = [s.name for s in func.symbols if s.name not in sizes]
    if missing:
        raise TileLangError(Diagnostic(
            MISSING_SIZE, f"kernel `{func.name}` needs sizes for {', '.join(missing)}",
            help="give them as `--shape " + ",".join(f"{n}=..." for n in missing) + "`"))
    unknown = [n for n in scalars if n not in {p.name for p in func.params}]
    if unknown:
        raise TileLangError(Diagnostic(BAD_ARG, f"kernel `{func.name}` has no parameter "
                                                f"{', '.join(unknown)}"))
    from .index_inputs import make_inputs
    rng = np.random.default_rng(seed)
    ints = {p.name: (_shape(p, sizes), dtypes.numpy_dtype(p.dtype)) for p in func.params
            if isinstance(p, ir.Buffer) and dtypes.is_int(p.dtype)}
    made = make_inputs(index or {}, ints, rng)
    args = []
    for p in func.params:
        if isinstance(p, ir.Buffer) and p.name in made:
            args.append(made[p.name])
        elif isinstance(p, ir.Buffer) and not materialize and p.name not in needs_data:
            args.append((_shape(p, sizes), p.dtype))
        elif isinstance(p, ir.Buffer):
            args.append(_random_tensor(rng, _shape(p, sizes), p, index_input))
        else:
            default = 1.0 if dtypes.is_float(p.dtype) else 1
            args.append(scalars.get(p.name, default))
    return args


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
        values = rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)
        return values.astype(dtypes.numpy_dtype(dtype))
    if dtypes.is_bool(dtype):
        return rng.random(size=shape) < 0.5
    if index_input is not None:
        return index_input(rng, shape, dtype, param)
    return default_input(shape, dtypes.numpy_dtype(dtype), rng)
