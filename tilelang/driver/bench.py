"""`tilec run`: random inputs of the right dtypes and shapes, a timed run, the figures.

Shapes come from the kernel's IR signature with the symbolic sizes the user gives; the
runtime does the launch, so what is timed is what a Python caller gets.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from .. import dtypes
from ..diagnostics import Diagnostic, TileLangError
from ..diagnostics.codes_driver import BAD_ARG, MISSING_SIZE
from ..ir import nodes as ir
from .evaluate import NotConstant, evaluate, gemm_flops


@dataclass
class RunReport:
    kernel: str
    sizes: dict
    times: list              # seconds, one per timed call
    bytes_moved: int
    flops: int | None        # None: not countable; 0: no T.gemm

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    def lines(self) -> list[str]:
        t = self.median
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items()) or "no symbolic sizes"
        out = [f"{self.kernel} ({sizes})",
               f"  time     {t * 1e3:.4f} ms  (median of {len(self.times)}, "
               f"min {min(self.times) * 1e3:.4f} ms)",
               f"  memory   {self.bytes_moved / t / 1e9:.3f} GB/s  "
               f"({self.bytes_moved / 1e6:.3f} MB in arguments)"]
        if self.flops:
            out.append(f"  compute  {self.flops / t / 1e9:.3f} GFLOP/s  "
                       f"({self.flops / 1e9:.4f} GFLOP of T.gemm tiles)")
        elif self.flops is None:
            out.append("  compute  (not counted: a loop around T.gemm has a trip count that "
                       "depends on more than the sizes)")
        return out


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
                   materialize: bool = True, needs_data=frozenset()) -> list:
    """Random tensors (integer tensors are zeros: they are often indices, and a random
    index could point outside a buffer) and the scalar values, in signature order.
    `materialize=False` gives `(shape, dtype)` pairs instead of tensors (a timing-only
    simulation of a large shape needs no data), except for the tensors in `needs_data`
    (a timing simulation reads their values: loop bounds, scales, indices)."""
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
    rng = np.random.default_rng(seed)
    args = []
    for p in func.params:
        if isinstance(p, ir.Buffer) and not materialize and p.name not in needs_data:
            args.append((_shape(p, sizes), p.dtype))
        elif isinstance(p, ir.Buffer):
            args.append(_random_tensor(rng, _shape(p, sizes), p.dtype))
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


def _random_tensor(rng, shape, dtype):
    import numpy as np
    np_dtype = dtypes.numpy_dtype(dtype)
    if dtypes.is_float(dtype):
        return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32).astype(np_dtype)
    if dtypes.is_bool(dtype):
        return rng.random(size=shape) < 0.5
    return np.zeros(shape, dtype=np_dtype)


def run(kernel_obj, func, sizes: dict, scalars: dict, repeat: int,
        num_threads: int | None = None) -> RunReport:
    """One untimed warm-up call, then `repeat` timed calls."""
    args = make_arguments(func, sizes, scalars)
    kernel_obj(*args, num_threads=num_threads)
    times = []
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        kernel_obj(*args, num_threads=num_threads)
        times.append(time.perf_counter() - start)
    moved = sum(a.nbytes for a in args if hasattr(a, "nbytes"))
    env = dict(sizes)
    env.update((p.name, a) for p, a in zip(func.params, args) if isinstance(p, ir.Var))
    return RunReport(func.name, {s.name: sizes[s.name] for s in func.symbols}, times, moved,
                     gemm_flops(func, env))
