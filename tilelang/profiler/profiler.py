"""TileLang's `Profiler`: what `kernel.get_profiler(tensor_supply_type=...)` returns.

    profiler = kernel.get_profiler(tensor_supply_type=TensorSupplyType.Auto)
    ms = profiler.do_bench()                      # the kernel, on generated inputs
    ref_ms = profiler.do_bench(ref_program)       # any callable, on the same inputs
    profiler.assert_allclose(ref_program, rtol=1e-2, atol=1e-2)
    outs = profiler.run_once()

Inputs are the kernel's parameters except its outputs (`out_idx`), made by the supply
type; outputs are allocated by the profiler and returned, as the kernel returns them.
Symbolic sizes (T.dynamic) come from `sizes=` at `get_profiler` or from
`dynamic_symbolic_constraints=` at each call; integer tensors as `index=` describes them
(`tilec run --index` kinds), else as supply.py says.
"""
from __future__ import annotations

from ..ir import nodes as ir
from .runners import runner_for
from .supply import InputSupply, MissingSizes, TensorSupplyType


class Profiler:
    def __init__(self, kernel_function, result_idx=None,
                 supply_type=TensorSupplyType.Auto, sizes: dict | None = None,
                 num_threads: int | None = None, index=None):
        self.kernel = kernel_function
        self.prim_func: ir.PrimFunc = kernel_function._func()    # the kernel's IR
        self.result_idx = _legalize(result_idx, self.prim_func)
        self.supply = InputSupply(self.prim_func, supply_type,
                                  target=kernel_function.options.target, index=index)
        self.sizes = dict(sizes or {})
        self.num_threads = num_threads
        self.runner = runner_for(kernel_function.options)
        self._rk = None

    @property
    def supply_type(self) -> TensorSupplyType:
        return self.supply.supply_type

    @property
    def runtime_kernel(self):
        if self._rk is None:
            self._rk = self.runner.runtime_kernel(self.kernel)
        return self._rk

    # -- inputs ---------------------------------------------------------------------

    def _sizes(self, constraints) -> dict:
        return {**self.sizes, **(constraints or {})}

    def _get_inputs(self, with_output: bool = False, dynamic_symbolic_constraints=None):
        """The generated arguments: inputs only (outputs too with `with_output`)."""
        skip = () if with_output else self.result_idx
        return self.supply.make(self._sizes(dynamic_symbolic_constraints), skip=skip)

    def _full_args(self, ins: list, sizes: dict) -> tuple[list, list]:
        """(every argument in signature order, the output arrays) for inputs `ins`."""
        import numpy as np
        from .. import dtypes
        it = iter(ins)
        full, outs = [], []
        sizes = dict(sizes)
        sizes.update(_sizes_from(self.prim_func, ins, self.result_idx))
        for i, p in enumerate(self.prim_func.params):
            if i in self.result_idx:
                arr = np.zeros(self.supply.shape(p, sizes), dtypes.numpy_dtype(p.dtype))
                full.append(arr)
                outs.append(arr)
            else:
                try:
                    full.append(next(it))
                except StopIteration:
                    raise TypeError(f"{self.prim_func.name}: expected {self._n_inputs()} "
                                    f"inputs, got {len(ins)}") from None
        return full, outs

    def _n_inputs(self) -> int:
        return len(self.prim_func.params) - len(self.result_idx)

    # -- calls ----------------------------------------------------------------------

    @property
    def func(self):
        """TileLang's `profiler.func`: the kernel as a callable (inputs in, outputs
        returned), as `profiler(...)` calls it."""
        return self.__call__

    def __call__(self, *ins, dynamic_symbolic_constraints=None):
        """Run the kernel on `ins` (its non-output arguments); return its outputs (one
        array, a list of several, or None without outputs)."""
        full, outs = self._full_args(list(ins), self._sizes(dynamic_symbolic_constraints))
        self.runner.call(self.runtime_kernel, full, self.num_threads)
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else outs

    def run_once(self, func=None):
        """One call of the kernel (or `func`) on freshly generated inputs."""
        ins = self._get_inputs()
        return (func or self)(*ins)

    def do_bench(self, func=None, warmup: float = 25, rep: float = 100, n_warmup: int = 0,
                 n_repeat: int = 0, input_tensors=None, backend: str = "event",
                 quantiles=None, return_mode: str = "mean",
                 dynamic_symbolic_constraints=None, device=None,
                 early_stop_baseline: float | None = None):
        """Milliseconds per call of the kernel (or of `func` on the same inputs). On
        tcsim the kernel's time is the simulated one (a timing-only launch)."""
        from . import bench
        ins = input_tensors if input_tensors is not None else \
            self._get_inputs(dynamic_symbolic_constraints=dynamic_symbolic_constraints)
        if func is not None:
            return bench.do_bench(lambda: func(*ins), warmup, rep, n_warmup, n_repeat,
                                  quantiles=quantiles, backend=backend,
                                  return_mode=return_mode, device=device,
                                  early_stop_baseline=early_stop_baseline)
        if device not in (None, "cpu"):
            raise ValueError(f"device={device!r}: kernels run on the CPU here (device=None)")
        full, _ = self._full_args(list(ins), self._sizes(dynamic_symbolic_constraints))
        return self.runner.time_ms(self.runtime_kernel, full, warmup=warmup, rep=rep,
                                   n_warmup=n_warmup, n_repeat=n_repeat, quantiles=quantiles,
                                   return_mode=return_mode, early_stop=early_stop_baseline,
                                   num_threads=self.num_threads)

    # -- checks ---------------------------------------------------------------------

    def assert_allclose(self, reference_program, input_tensors=None, atol: float = 1e-2,
                        rtol: float = 1e-2, max_mismatched_ratio: float = 0.01):
        """The kernel's outputs match `reference_program(*inputs)` elementwise within
        `atol + rtol * |ref|`, except at most `max_mismatched_ratio` of the elements.
        A kernel without `out_idx` is compared through the tensors it writes."""
        ins = list(input_tensors) if input_tensors is not None else self._get_inputs()
        ref_outs = _as_list(reference_program(*ins))
        if self.result_idx:
            lib_outs = _as_list(self(*ins))
        else:
            self(*ins)
            lib_outs = [ins[i] for i in written_params(self.prim_func)]
        if len(lib_outs) != len(ref_outs):
            raise AssertionError(f"{self.prim_func.name} gives {len(lib_outs)} output(s), "
                                 f"the reference program {len(ref_outs)}")
        for k, (lib, ref) in enumerate(zip(lib_outs, ref_outs)):
            if ref is not None:
                check_close(lib, ref, rtol, atol, max_mismatched_ratio,
                            f"output {k} of {self.prim_func.name}")

    def manual_assert_close(self, reference_program, input_tensors=None,
                            manual_check_prog=None):
        """`manual_check_prog(kernel_outputs, reference_outputs)` decides."""
        ins = list(input_tensors) if input_tensors is not None else self._get_inputs()
        ref_outs = _as_list(reference_program(*ins))
        manual_check_prog(_as_list(self(*ins)), ref_outs)

    def assert_consistent(self, repeat: int = 10):
        """`repeat` further calls on the same inputs give the same outputs (no race)."""
        import numpy as np
        ins = self._get_inputs()
        first = [np.array(o, copy=True) for o in _as_list(self(*ins))]
        for _ in range(repeat):
            for a, b in zip(_as_list(self(*ins)), first):
                if not np.array_equal(np.asarray(a), b, equal_nan=True):
                    raise AssertionError(f"{self.prim_func.name}: outputs differ between "
                                         f"calls on the same inputs (a race between blocks?)")

    def __repr__(self) -> str:
        return (f"<tilelang Profiler of {self.prim_func.name}: supply "
                f"{self.supply_type.name}, outputs {list(self.result_idx)}, "
                f"{self.runner.name}>")


def _legalize(result_idx, func) -> tuple:
    """`result_idx` (None, an int or a list, negatives from the end) as a tuple."""
    n = len(func.params)
    if result_idx is None:
        return ()
    items = [result_idx] if isinstance(result_idx, int) else list(result_idx)
    out = []
    for i in items:
        if not isinstance(i, int) or isinstance(i, bool) or not -n <= i < n:
            raise ValueError(f"result_idx entries must be ints in [{-n}, {n - 1}] for "
                             f"{func.name}, got {i!r}")
        out.append(i + n if i < 0 else i)
    return tuple(out)


def _sizes_from(func, ins, result_idx) -> dict:
    """Symbolic sizes read off the given inputs' shapes (`A` is (M, K): M, K)."""
    sizes = {}
    it = iter(ins)
    for i, p in enumerate(func.params):
        if i in result_idx:
            continue
        arg = next(it, None)
        shape = getattr(arg, "shape", None)
        if isinstance(p, ir.Buffer) and shape is not None and len(shape) == len(p.shape):
            for dim, n in zip(p.shape, shape):
                if isinstance(dim, ir.Var):
                    sizes.setdefault(dim.name, int(n))
    return sizes


def written_params(func) -> list[int]:
    """Positions of the tensor parameters the kernel writes (stores, copies into,
    atomics, gemm outputs)."""
    from ..ir.visitor import walk
    names = set()
    for node in walk(func.body):
        if isinstance(node, (ir.Store, ir.Atomic)):
            names.add(node.buffer.name)
        elif isinstance(node, ir.Copy):
            names.add(node.dst.buffer.name)
        elif isinstance(node, ir.Gemm):
            names.add(node.c.buffer.name)
        elif isinstance(node, (ir.TileAtomic, ir.Fill, ir.Reduce)):
            for name in ("dst", "buffer", "region"):
                target = getattr(node, name, None)
                buf = getattr(target, "buffer", target)
                if isinstance(buf, ir.Buffer):
                    names.add(buf.name)
                    break
    return [i for i, p in enumerate(func.params)
            if isinstance(p, ir.Buffer) and p.name in names]


def _as_list(value) -> list:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def to_numpy(x):
    """A numpy float64 (or bool/int) view of an array-like (torch tensors too)."""
    import numpy as np
    if hasattr(x, "detach"):                       # a torch tensor, without importing torch
        x = x.detach().cpu()
        if "float8" in str(x.dtype) or "bfloat16" in str(x.dtype):
            x = x.float()
        x = x.numpy()
    arr = np.asarray(x)
    if arr.dtype.kind == "V" or arr.dtype.kind == "f" or str(arr.dtype).startswith(
            ("bfloat16", "float8")):
        return arr.astype(np.float64)
    return arr


def check_close(lib, ref, rtol, atol, max_mismatched_ratio, what: str) -> None:
    import numpy as np
    a, b = to_numpy(lib), to_numpy(ref)
    if a.shape != b.shape:
        try:
            b = np.broadcast_to(b, a.shape)
        except ValueError:
            raise AssertionError(f"{what}: shape {a.shape}, reference {b.shape}") from None
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    bad = int(close.size - np.count_nonzero(close))
    if bad and bad / max(1, close.size) > max_mismatched_ratio:
        idx = tuple(int(i) for i in np.argwhere(~close)[0])
        with np.errstate(invalid="ignore"):
            diff = np.nanmax(np.abs(a.astype(np.float64) - b.astype(np.float64)))
        raise AssertionError(
            f"{what}: {bad} of {close.size} elements ({bad / close.size:.2%}) differ beyond "
            f"atol={atol}, rtol={rtol} (allowed {max_mismatched_ratio:.2%}); largest "
            f"difference {diff:.4g}; first at {idx}: {_num(a[idx])} vs reference {_num(b[idx])}")


def _num(x) -> str:
    try:
        return f"{float(x):.6g}"
    except (TypeError, ValueError):
        return repr(x)


__all__ = ["Profiler", "TensorSupplyType", "MissingSizes", "check_close", "written_params"]
