"""Input tensors for profiling and tuning: TileLang's `TensorSupplyType`, on numpy.

    supply = InputSupply(func, TensorSupplyType.Auto, target=target)
    arrays = supply.make(sizes={"M": 1024}, skip=(2,))   # every tensor but parameter 2

Each supply type fills a tensor as TileLang's does (`Integer`: small integers in
[-2, 2], `Uniform` in [-1, 1], `Normal`, `Randn`, `Zero`, `One`, `Auto`: uniform
floats). Integer tensors often hold indices, lengths or a schedule the kernel follows,
so they are made, in this order of preference:
* as `index` describes them (`{"block_table": "paged:64"}`: the kinds of `tilec run
  --index`, driver/index_inputs.py — block tables, lengths, FlashMLA's schedule);
* when the kernel reads one inside another tensor's subscript (e.g.
  `KV[block_table[b, p], t]`; `index_bounds` finds the dimension in the IR): values
  spread over the extent of that dimension, never all zeros and never out of range;
* otherwise, with `Auto`, as the target makes an integer tensor nobody described
  (`Target.make_index_input`, what `tilec run` passes: small non-negative values);
  the other supply types fill them as they fill any tensor.
"""
from __future__ import annotations

import enum

from .. import dtypes
from ..ir import nodes as ir
from ..ir.visitor import walk


class TensorSupplyType(enum.Enum):
    """How input tensors are filled (the values of TileLang's enum)."""
    Integer = 1
    Uniform = 2
    Normal = 3
    Randn = 4
    Zero = 5
    One = 6
    Auto = 7


def tensor_supply_type(value) -> TensorSupplyType:
    """`value` as a TensorSupplyType (the enum itself, its name or its number)."""
    if isinstance(value, TensorSupplyType):
        return value
    try:
        if isinstance(value, str):
            return TensorSupplyType[value[:1].upper() + value[1:].lower()]
        if isinstance(value, int) and not isinstance(value, bool):
            return TensorSupplyType(value)
    except (KeyError, ValueError):
        pass
    names = ", ".join(t.name for t in TensorSupplyType)
    raise ValueError(f"unknown tensor supply type {value!r}; use TensorSupplyType.<{names}>")


class MissingSizes(ValueError):
    """A symbolic size the inputs need was not given."""


def fill(rng, shape: tuple, dtype: str, supply: TensorSupplyType):
    """A numpy array of `shape` and `dtype` filled as `supply` says."""
    import numpy as np
    np_dtype = dtypes.numpy_dtype(dtype)
    kind = "bool" if dtypes.is_bool(dtype) else ("float" if dtypes.is_float(dtype) else "int")
    if supply is TensorSupplyType.Zero:
        return np.zeros(shape, np_dtype)
    if supply is TensorSupplyType.One:
        return np.ones(shape, np_dtype)
    if kind == "bool":
        return rng.random(shape) < 0.5
    if kind == "int" or supply is TensorSupplyType.Integer:
        low = 0 if not dtypes.is_signed(dtype) else -2
        return rng.integers(low, 3, size=shape).astype(np_dtype)
    if supply is TensorSupplyType.Normal:
        values = rng.normal(-1.0, 1.0, size=shape)     # TileLang's normal_(-1, 1)
    elif supply is TensorSupplyType.Randn:
        values = rng.standard_normal(size=shape)
    else:                                              # Uniform, Auto
        values = rng.uniform(-1.0, 1.0, size=shape)
    return values.astype(np.float32).astype(np_dtype)


def index_bounds(func: ir.PrimFunc) -> dict:
    """{parameter name: (buffer, dim)} for each integer tensor parameter the kernel uses
    as an index: a load of it inside the subscript of `buffer`'s dimension `dim`. The
    first such use wins (a table indexing several tensors indexes same-sized dims)."""
    int_params = {p.name for p in func.params
                  if isinstance(p, ir.Buffer) and dtypes.is_int(p.dtype)}
    found: dict = {}
    if not int_params:
        return found
    for node in walk(func.body):
        for buf, indices in _subscripts(node):
            for dim, index in enumerate(indices):
                for inner in walk(index):
                    if isinstance(inner, ir.Load) and inner.buffer.name in int_params:
                        found.setdefault(inner.buffer.name, (buf, dim))
    return found


def _subscripts(node):
    """(buffer, indices) pairs a node addresses: loads, stores, tile-op regions."""
    if isinstance(node, (ir.Load, ir.Store, ir.Atomic)):
        yield node.buffer, node.indices
    elif isinstance(node, ir.Region):
        yield node.buffer, node.starts


class InputSupply:
    """Makes a kernel's input tensors for given symbolic sizes (`target`: whose
    `make_index_input` fills undescribed integer tensors; `index`: {name: "KIND[:ARG]"}
    or `tilec run --index` text)."""

    def __init__(self, func: ir.PrimFunc, supply_type=TensorSupplyType.Auto, seed: int = 0,
                 target=None, index=None):
        from ..driver.index_inputs import parse_specs
        self.func = func
        self.supply_type = tensor_supply_type(supply_type)
        self.seed = seed
        self.target = target
        self.specs = parse_specs(index_items(index))
        self.indices = index_bounds(func)

    def shape(self, param: ir.Buffer, sizes: dict) -> tuple:
        from ..ir.evaluate import NotConstant, evaluate
        try:
            return tuple(int(evaluate(d, sizes)) for d in param.shape)
        except NotConstant as e:
            missing = [s.name for s in self.func.symbols if s.name not in sizes]
            raise MissingSizes(
                f"kernel `{self.func.name}` has symbolic sizes "
                f"{', '.join(missing) or e}: give them, e.g. "
                f"dynamic_symbolic_constraints={{{', '.join(repr(n) + ': ...' for n in missing)}}}"
            ) from None

    def make(self, sizes: dict | None = None, skip=(), scalars: dict | None = None) -> list:
        """Arrays (and scalar values) for every parameter whose position is not in `skip`,
        in signature order."""
        import numpy as np
        sizes = dict(sizes or {})
        scalars = scalars or {}
        rng = np.random.default_rng(self.seed)
        described = self._described(rng, sizes)
        out = []
        for i, p in enumerate(self.func.params):
            if i in skip:
                continue
            if isinstance(p, ir.Var):
                out.append(scalars.get(p.name, 1.0 if dtypes.is_float(p.dtype) else 1))
                continue
            shape = self.shape(p, sizes)
            bound = self.indices.get(p.name)
            if p.name in described:
                out.append(described[p.name])
            elif bound is not None and self.supply_type is not TensorSupplyType.Zero:
                out.append(self._indices(rng, p, shape, bound, sizes))
            elif dtypes.is_int(p.dtype) and self.supply_type is TensorSupplyType.Auto:
                out.append(self._undescribed(rng, shape, p))
            else:
                out.append(fill(rng, shape, p.dtype, self.supply_type))
        return out

    def _described(self, rng, sizes: dict) -> dict:
        """{name: array} of the integer tensors `index` describes."""
        from ..driver.index_inputs import make_inputs
        if not self.specs:
            return {}
        ints = {p.name: (self.shape(p, sizes), dtypes.numpy_dtype(p.dtype))
                for p in self.func.params
                if isinstance(p, ir.Buffer) and dtypes.is_int(p.dtype)}
        return make_inputs(self.specs, ints, rng)

    def _undescribed(self, rng, shape, param):
        """What the target makes for an integer tensor nobody described."""
        if self.target is not None:
            return self.target.make_index_input(rng, shape, param.dtype, param)
        from ..driver.index_inputs import default_input
        return default_input(shape, dtypes.numpy_dtype(param.dtype), rng)

    def _indices(self, rng, param, shape, bound, sizes):
        """Indices spread over the indexed dimension: a random permutation of its range,
        repeated as needed, so every table entry is valid and most are distinct (a paged
        block table that maps each page once)."""
        import numpy as np
        buf, dim = bound
        try:
            extent = self.shape(buf, sizes)[dim] if buf.scope == "global" else None
        except MissingSizes:
            extent = None
        extent = max(1, extent or 1)
        count = int(np.prod(shape)) if shape else 1
        reps = -(-count // extent)
        values = np.concatenate([rng.permutation(extent) for _ in range(max(1, reps))])
        np_dtype = dtypes.numpy_dtype(param.dtype)
        hi = np.iinfo(np_dtype).max
        return np.minimum(values[:count], hi).astype(np_dtype).reshape(shape)


def index_items(index) -> list:
    """`index` as `tilec run --index` items: None, "a=KIND:ARG,b=...", a list of such
    strings, or {name: "KIND:ARG"}."""
    if not index:
        return []
    if isinstance(index, str):
        return [index]
    if isinstance(index, dict):
        return [f"{name}={spec}" for name, spec in index.items()]
    return [str(item) for item in index]
