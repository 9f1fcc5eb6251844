"""Argument binding: check call arguments against a kernel's manifest and pack the ABI
`int64` args array (docs/interfaces.md: params, then symbols, then workspaces).

The one binder of every target: the CPU runtime launches from the packed slots, the tcsim
simulator from the same checked arguments by name (`bind_named`). Each mistake is one
`LaunchTypeError` / `LaunchValueError` with one TL06xx code, whichever target runs.

All the work that does not depend on the argument values (dtype objects, which dim binds
which symbol, slot numbers, error texts' ingredients) happens once per (kernel, out_idx) in
`BindingPlan.__init__`; `BindingPlan.bind` is the per-call hot path and stays flat.
"""
from __future__ import annotations

import ctypes
import numbers
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from .. import dtypes
from ..diagnostics import ArtifactError
from .errors import LaunchTypeError, LaunchValueError, codes
from .manifest import KernelSpec, ParamSpec
from .scalars import scalar_step
from .sizes import SizeExpr, show_env

_ndarray = np.ndarray
_SLOT_TYPES: dict = {}
_c_char_from_buffer = ctypes.c_char.from_buffer
_addressof = ctypes.addressof


def slots_type(n: int):
    """The ctypes array type of an `n`-slot args array: one type object per length, so
    function prototypes declared with it accept every plan's arrays."""
    t = _SLOT_TYPES.get(n)
    if t is None:
        t = _SLOT_TYPES[n] = ctypes.c_int64 * max(n, 1)
    return t


def numpy_name(dtype: str) -> str:
    """How numpy spells a tilelang dtype, for error messages."""
    np_dt = dtypes.numpy_dtype(dtype)
    if np_dt.type.__module__.startswith("numpy"):
        return f"numpy {np_dt.name}"
    return f"ml_dtypes.{np_dt.name}"


def _describe_dtype(np_dt) -> str:
    return dtypes.from_numpy(np_dt) or str(np_dt)


def _addr_fast(a) -> int:
    # ~4x faster than a.ctypes.data; needs a writeable, non-empty buffer with a
    # buffer-protocol format (not ml_dtypes), else fall back.
    try:
        return _addressof(_c_char_from_buffer(a))
    except (TypeError, ValueError, BufferError):
        return a.ctypes.data


def _addr_slow(a) -> int:
    return a.ctypes.data


def normalize_out_idx(spec: KernelSpec, out_idx) -> tuple:
    """`out_idx` as a tuple of non-negative parameter indices (negative count from the end)."""
    if out_idx is None:
        return ()
    if isinstance(out_idx, numbers.Integral) and not isinstance(out_idx, bool):
        items = [out_idx]
    elif isinstance(out_idx, (list, tuple)):
        items = list(out_idx)
    else:
        raise LaunchTypeError(f"out_idx must be an int or a list of ints, got {out_idx!r}",
                              codes.BAD_OPTION)
    n = len(spec.params)
    result = []
    for i in items:
        if not isinstance(i, numbers.Integral) or isinstance(i, bool):
            raise LaunchTypeError(f"out_idx entries must be ints, got {i!r}", codes.BAD_OPTION)
        j = int(i) + n if i < 0 else int(i)
        if not 0 <= j < n:
            raise LaunchValueError(f"out_idx {i} is out of range for {spec.name}, which has "
                                   f"{n} parameters", codes.BAD_OPTION)
        if j in result:
            raise LaunchValueError(f"out_idx names parameter {spec.params[j].name!r} twice",
                                   codes.BAD_OPTION)
        if not spec.params[j].is_tensor:
            raise LaunchValueError(f"out_idx {i} names scalar parameter "
                                   f"{spec.params[j].name!r}; only tensors can be outputs",
                                   codes.BAD_OPTION)
        result.append(j)
    return tuple(result)


class BindingPlan:
    """How to bind one kernel's arguments when the parameters in `out_idx` are allocated."""

    def __init__(self, spec: KernelSpec, out_idx=None):
        self.spec = spec
        self.out_idx = normalize_out_idx(spec, out_idx)
        outs = set(self.out_idx)
        inputs = [(i, p) for i, p in enumerate(spec.params) if i not in outs]
        self._inputs = tuple(inputs)
        self.names = tuple(p.name for _, p in inputs)
        self._pos = {name: k for k, name in enumerate(self.names)}
        self._outputs = {spec.params[i].name for i in self.out_idx}
        n_params, n_syms = len(spec.params), len(spec.symbols)
        self.n_slots = spec.num_slots
        self._array_type = slots_type(self.n_slots)
        self._sym_slot0 = n_params
        sym_index = {s: k for k, s in enumerate(spec.symbols)}
        binders: dict[int, str] = {}
        # Dims given by a size expression are checked after every symbol is bound.
        self._deferred: list = []
        steps, n_tensors = [], 0
        for i, p in inputs:
            if p.is_tensor:
                steps.append(_tensor_step(p, i, sym_index, binders, self._deferred, n_tensors))
                n_tensors += 1
            else:
                steps.append(scalar_step(p, i))
        self._steps = tuple(steps)
        self._tensors = tuple(p for _, p in inputs if p.is_tensor)
        self._pairs = _overlap_pairs(self._tensors)
        self._check_bound(sym_index, binders)
        self._int_scalars = tuple((p.name, i) for i, p in inputs
                                  if not p.is_tensor and not dtypes.is_float(p.dtype))
        self._check_names(inputs)
        self._allocs = tuple(_alloc_spec(spec.params[i], sym_index, i) for i in self.out_idx)
        self._workspaces = tuple(_alloc_spec(w, sym_index, n_params + n_syms + k)
                                 for k, w in enumerate(spec.workspaces))
        self._needs_env = bool(self._deferred) or any(
            kind == _EXPR for _, dims, _, _ in self._allocs + self._workspaces
            for kind, _ in dims)
        self._single = len(self._allocs) == 1

    @property
    def tensor_params(self) -> tuple:
        """The input tensor parameters, in the order `bind` keeps their arrays."""
        return self._tensors

    def _check_bound(self, sym_index: dict, binders: dict) -> None:
        for sym, k in sym_index.items():
            if k in binders:
                continue
            users = [p.name for p in self.spec.params if p.is_tensor and sym in p.shape]
            if users:
                raise LaunchValueError(
                    f"symbolic size {sym!r} of {self.spec.name} cannot be bound: it appears "
                    f"only in output {users[0]!r} (out_idx); pass {users[0]!r} explicitly",
                    codes.ARG_UNBOUND, users[0])
            raise LaunchValueError(
                f"symbolic size {sym!r} of {self.spec.name} is not the extent of any input "
                f"tensor dimension, so no argument tells its value", codes.ARG_UNBOUND)

    def _check_names(self, inputs) -> None:
        """Every name a size expression reads must be a symbol, an integer scalar
        parameter or an earlier `lets` entry of the manifest."""
        known = set(self.spec.symbols) | {n for n, _ in self._int_scalars}
        exprs = []
        for name, expr in self.spec.lets:
            exprs.append((f"let {name!r}", expr, set(known)))
            known.add(name)
        bufs = ([p for _, p in inputs if p.is_tensor] +
                [self.spec.params[i] for i in self.out_idx] + list(self.spec.workspaces))
        for buf in bufs:
            exprs += [(repr(buf.name), d, known) for d in buf.shape if isinstance(d, SizeExpr)]
        for what, expr, names in exprs:
            missing = sorted(expr.names - names)
            if missing:
                raise ArtifactError(
                    f"kernel {self.spec.name!r}: the size {expr.text} of {what} uses "
                    f"{missing[0]!r}, which is neither a symbol, an integer scalar parameter "
                    f"nor a manifest 'lets' entry, so the runtime cannot compute it")

    # -- the hot path -------------------------------------------------------------------

    def bind(self, args: tuple, kwargs: dict | None = None):
        """Validate `args` (+ `kwargs` by name) and pack them. Returns
        `(args_array, keepalive, result)`; `keepalive` must outlive the launch and
        `result` is None, the one output array, or a tuple of outputs."""
        if kwargs:
            args = self._merge_kwargs(args, kwargs)
        elif len(args) != len(self._steps):
            self._count_error(len(args))
        slots = self._array_type()
        syms = [0] * len(self.spec.symbols)
        arrays: list = []               # the input tensors as arrays, kept alive
        starts: list = []               # and their addresses
        for step, a in zip(self._steps, args):
            step(a, slots, syms, arrays, starts)
        pairs = self._pairs
        if pairs is not None:
            for i, j in pairs:
                si, sj = starts[i], starts[j]
                if si < sj + arrays[j].nbytes and sj < si + arrays[i].nbytes:
                    self._overlap_error(arrays, starts)
        elif len(arrays) > 1:
            self._sweep_overlap(arrays, starts)
        k = self._sym_slot0
        for v in syms:
            slots[k] = v
            k += 1
        env = self._env(slots, syms, arrays) if self._needs_env else None
        keep = [arrays]
        for slot, dims, dt, name in self._workspaces:
            buf = _allocate(dims, dt, syms, env, name)
            slots[slot] = buf.ctypes.data
            keep.append(buf)
        if not self._allocs:
            return slots, keep, None
        outs = []
        for slot, dims, dt, name in self._allocs:
            buf = _allocate(dims, dt, syms, env, name)
            slots[slot] = buf.ctypes.data
            outs.append(buf)
        return slots, keep, outs[0] if self._single else tuple(outs)

    def bind_named(self, args: tuple, kwargs: dict | None = None) -> "Bound":
        """`bind`, for a launcher that works with names rather than the ABI's slots (the
        tcsim simulator): the tensors (inputs, workspaces, out_idx outputs) and the values
        of the symbols and scalar parameters, by name."""
        slots, keep, result = self.bind(args, kwargs)
        given = self._merge_kwargs(args, kwargs) if kwargs else list(args)
        tensors = dict(zip((p.name for p in self._tensors), keep[0]))
        tensors.update((name, buf) for (_, _, _, name), buf in zip(self._workspaces, keep[1:]))
        outs = () if result is None else (result,) if self._single else result
        tensors.update((name, buf) for (_, _, _, name), buf in zip(self._allocs, outs))
        k = self._sym_slot0
        values = {s: slots[k + i] for i, s in enumerate(self.spec.symbols)}
        for p, v in zip((p for _, p in self._inputs), given):
            if not p.is_tensor:
                v = v.item() if isinstance(v, np.ndarray) else v
                values[p.name] = float(v) if dtypes.is_float(p.dtype) else int(v)
        return Bound(tensors, values, result)

    def _env(self, slots, syms: list, arrays: list) -> dict:
        """Names size expressions read (symbols, integer scalars, lets); checks the
        input dims given by expressions on the way."""
        env = dict(zip(self.spec.symbols, syms))
        for name, slot in self._int_scalars:
            env[name] = slots[slot]
        for name, expr in self.spec.lets:
            env[name] = expr.evaluate(env)
        for span_idx, i, expr, p in self._deferred:
            got, want = arrays[span_idx].shape[i], expr.evaluate(env)
            if got != want:
                raise LaunchValueError(
                    f"argument {p.name!r} expects shape {p.describe_shape()}: dimension {i} "
                    f"must be {expr.text} = {want} ({show_env(env, expr.names)}), got {got}",
                    codes.ARG_SHAPE, p.name)
        return env

    # -- aliasing -----------------------------------------------------------------------

    def _spans(self, arrays: list, starts: list) -> list:
        return [(start, a.nbytes, p.name, p.access != "read")
                for p, a, start in zip(self._tensors, arrays, starts)]

    def _overlap_error(self, arrays: list, starts: list) -> None:
        """A quick test saw two ranges touch; the exact check (sizes, access) decides."""
        _check_pairs(self._spans(arrays, starts))

    def _sweep_overlap(self, arrays: list, starts: list) -> None:
        _check_overlap(self._spans(arrays, starts))

    # -- error paths --------------------------------------------------------------------

    def _count_error(self, given: int):
        want = len(self._steps)
        names = ", ".join(self.names)
        note = ""
        if self.out_idx:
            outs = ", ".join(self.spec.params[i].name for i in self.out_idx)
            note = f" ({outs} allocated by out_idx)"
        if given < want:
            missing = ", ".join(repr(n) for n in self.names[given:])
            raise LaunchTypeError(f"{self.spec.name}() missing argument(s) {missing}: it takes "
                                  f"{want} ({names}){note} but {given} were given",
                                  codes.ARG_COUNT, self.names[given])
        raise LaunchTypeError(f"{self.spec.name}() takes {want} argument(s) ({names}){note} "
                              f"but {given} were given", codes.ARG_COUNT)

    def _merge_kwargs(self, args: tuple, kwargs: dict) -> list:
        if len(args) > len(self._steps):
            self._count_error(len(args))
        merged = list(args) + [_MISSING] * (len(self._steps) - len(args))
        for name, value in kwargs.items():
            k = self._pos.get(name)
            if k is None:
                if name in self._outputs:
                    raise LaunchTypeError(
                        f"{self.spec.name}() argument {name!r} is an output allocated by "
                        f"out_idx; do not pass it", codes.ARG_COUNT, name)
                raise LaunchTypeError(f"{self.spec.name}() got an unexpected keyword argument "
                                      f"{name!r}; parameters are ({', '.join(self.names)})",
                                      codes.ARG_COUNT, name)
            if merged[k] is not _MISSING:
                raise LaunchTypeError(f"{self.spec.name}() got multiple values for argument "
                                      f"{name!r}", codes.ARG_COUNT, name)
            merged[k] = value
        missing = [n for n, v in zip(self.names, merged) if v is _MISSING]
        if missing:
            raise LaunchTypeError(f"{self.spec.name}() missing argument(s) "
                                  f"{', '.join(repr(n) for n in missing)}",
                                  codes.ARG_COUNT, missing[0])
        return merged


_MISSING = object()


@dataclass
class Bound:
    """Checked arguments by name (`BindingPlan.bind_named`)."""
    tensors: dict           # name -> array (or ShapeOnly): inputs, workspaces, outputs
    values: dict            # name -> int / float: symbolic sizes and scalar parameters
    result: object          # None, the one out_idx output, or a tuple of them


class ShapeOnly:
    """A tensor argument known only by its shape and dtype, for a launcher that needs no
    data (a timing-only simulation of a shape too large to allocate). The binder checks it
    as it checks an array; it occupies no memory, so it aliases nothing."""
    __slots__ = ("shape", "dtype")
    nbytes = 0
    flags = SimpleNamespace(c_contiguous=True, aligned=True, writeable=True)
    ctypes = SimpleNamespace(data=0)

    def __init__(self, shape, dtype):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)

    def __repr__(self) -> str:
        return f"ShapeOnly({self.shape}, {self.dtype})"


_MAX_PAIRS = 6      # beyond this many pairs, a sort-and-sweep is cheaper than all pairs


def _overlap_pairs(tensors) -> tuple | None:
    """Index pairs of tensors that must not overlap (at least one may be written), or
    None when there are too many to test one by one."""
    pairs = tuple((i, j) for i in range(len(tensors)) for j in range(i + 1, len(tensors))
                  if tensors[i].access != "read" or tensors[j].access != "read")
    return pairs if len(pairs) <= _MAX_PAIRS else None


def _check_overlap(spans: list) -> None:
    """Tensor arguments are noalias in the generated code: reject any two whose bytes
    overlap unless both are only read. A sweep in address order finds whether any
    two overlap at all (the common answer is no); only then are pairs examined."""
    order = sorted(spans, key=_start)
    end = order[0][0] + order[0][1]
    for s in order[1:]:
        if s[1] and s[0] < end:
            return _check_pairs(spans)
        if s[0] + s[1] > end:
            end = s[0] + s[1]


def _start(span) -> int:
    return span[0]


def _check_pairs(spans: list) -> None:
    n = len(spans)
    for i in range(n):
        a0, size_a, name_a, w_a = spans[i]
        if not size_a:
            continue
        a1 = a0 + size_a
        for j in range(i + 1, n):
            b0, size_b, name_b, w_b = spans[j]
            if size_b and b0 < a1 and a0 < b0 + size_b and (w_a or w_b):
                raise LaunchValueError(
                    f"arguments {name_a!r} and {name_b!r} overlap in memory; the kernel "
                    f"assumes its tensor arguments do not alias (pass a copy of {name_b!r})",
                    codes.ARG_ALIAS, name_b)


_CONST, _SYM, _EXPR = 0, 1, 2


def _alloc_spec(buf, sym_index: dict, slot: int) -> tuple:
    dims = tuple((_SYM, sym_index[d]) if isinstance(d, str) else
                 (_EXPR, d) if isinstance(d, SizeExpr) else (_CONST, d) for d in buf.shape)
    return (slot, dims, dtypes.numpy_dtype(buf.dtype), buf.name)


def _allocate(dims, dt, syms: list, env: dict | None, name: str):
    """A zeroed buffer (an out_idx output or a workspace) of the planned dims."""
    shape = tuple(v if kind == _CONST else syms[v] if kind == _SYM else v.evaluate(env)
                  for kind, v in dims)
    if any(n < 0 for n in shape):
        raise LaunchValueError(f"buffer {name!r} would have the negative shape {shape}",
                               codes.ARG_SHAPE, name)
    return np.zeros(shape, dt)


# symbolic sizes are int32 in the kernel (IR index arithmetic is int32; addresses are
# widened to int64 only after indexing)
_INDEX_MAX = 2 ** 31 - 1


def _tensor_step(p: ParamSpec, slot: int, sym_index: dict, binders: dict, deferred: list,
                 span_idx: int):
    """A closure that checks one tensor argument and stores its address in `slots`.
    `binders` (symbol index -> "A.shape[0]") is filled as parameters are planned, in
    order, so the first dim naming a symbol binds it and later ones check against it.
    Dims given by a size expression go to `deferred`, checked once all are bound."""
    dt = dtypes.numpy_dtype(p.dtype)
    name, ndim, writes = p.name, len(p.shape), p.access != "read"
    consts, binds, checks, solves = [], [], [], []
    for i, d in enumerate(p.shape):
        if isinstance(d, int):
            consts.append((i, d))
        elif isinstance(d, SizeExpr):
            deferred.append((span_idx, i, d, p))
            solved = _affine_in_unbound(d, sym_index, binders)
            if solved is not None:                  # `n * 4`: n is (extent - 0) / 4
                sym, a, b = solved
                binders[sym_index[sym]] = f"{name}.shape[{i}] ({d.text})"
                solves.append((i, sym_index[sym], a, b, d.text))
        elif sym_index[d] in binders:
            checks.append((i, sym_index[d], binders[sym_index[d]]))
        else:
            binders[sym_index[d]] = f"{name}.shape[{i}]"
            binds.append((i, sym_index[d]))
    consts, binds, checks = tuple(consts), tuple(binds), tuple(checks)
    addr_of = _addr_fast if dt.type.__module__.startswith("numpy") else _addr_slow

    def step(a, slots, syms, arrays, starts):
        if type(a) is not _ndarray:
            a = to_array(a, p)
        if a.dtype is not dt and a.dtype != dt:
            raise LaunchTypeError(f"argument {name!r} expects {p.dtype} ({numpy_name(p.dtype)}),"
                                  f" got {_describe_dtype(a.dtype)}", codes.ARG_DTYPE, name)
        shape = a.shape
        if len(shape) != ndim:
            raise LaunchValueError(
                f"argument {name!r} expects a {ndim}-D tensor of shape {p.describe_shape()}, "
                f"got a {len(shape)}-D array of shape {shape}", codes.ARG_RANK, name)
        for i, v in consts:
            if shape[i] != v:
                raise LaunchValueError(
                    f"argument {name!r} expects shape {p.describe_shape()}: dimension {i} must "
                    f"be {v}, got {shape[i]} (shape {shape})", codes.ARG_SHAPE, name)
        for i, k in binds:
            v = syms[k] = shape[i]
            if v > _INDEX_MAX:
                raise LaunchValueError(
                    f"argument {name!r}: dimension {i} is {v} ({p.shape[i]}), beyond the "
                    f"kernel's 32-bit index arithmetic (at most 2**31 - 1 = {_INDEX_MAX}); "
                    f"split the tensor", codes.ARG_SHAPE, name)
        for i, k, coef, off, text in solves:
            q, r = divmod(shape[i] - off, coef)
            if r or q < 0:
                raise LaunchValueError(
                    f"argument {name!r}: dimension {i} is {shape[i]}, which is {text} for no "
                    f"size", codes.ARG_SHAPE, name)
            syms[k] = q
        for i, k, source in checks:
            if shape[i] != syms[k]:
                raise LaunchValueError(
                    f"{p.shape[i]} is {syms[k]} from {source} but {shape[i]} from "
                    f"{name}.shape[{i}] (argument {name!r})", codes.ARG_SYMBOL, name)
        flags = a.flags
        if not flags.c_contiguous:
            raise LaunchValueError(f"argument {name!r} must be C-contiguous; pass "
                                   f"np.ascontiguousarray({name})", codes.ARG_LAYOUT, name)
        if not flags.aligned:
            raise LaunchValueError(f"argument {name!r} is not aligned to its {dt.itemsize}-byte "
                                   f"elements; pass an aligned copy ({name}.copy())",
                                   codes.ARG_LAYOUT, name)
        if writes and not flags.writeable:
            raise LaunchValueError(f"argument {name!r} is read-only but the kernel may write "
                                   f"it; pass a writeable array (e.g. {name}.copy())",
                                   codes.ARG_READONLY, name)
        addr = addr_of(a)
        slots[slot] = addr
        arrays.append(a)
        starts.append(addr)

    return step


def _affine_in_unbound(expr: SizeExpr, sym_index: dict, binders: dict):
    """(symbol, a, b) when `expr` reads one symbol not bound yet and is `a * sym + b`
    with a > 0 (checked on sample values), so a dimension's extent tells the symbol."""
    if len(expr.names) != 1:
        return None
    (sym,) = expr.names
    if sym not in sym_index or sym_index[sym] in binders:
        return None
    try:
        b = expr.evaluate({sym: 0})
        a = expr.evaluate({sym: 1}) - b
        if a <= 0 or any(expr.evaluate({sym: x}) != a * x + b for x in (2, 3, 17, 1000)):
            return None
    except (ValueError, ArithmeticError):
        return None
    return sym, a, b


def to_array(a, p: ParamSpec):
    """A numpy view of an array-like argument, without copying."""
    if isinstance(a, (_ndarray, ShapeOnly)):
        return a
    try:
        if hasattr(a, "__dlpack__"):
            return np.from_dlpack(a)
        if hasattr(a, "__array_interface__") or hasattr(a, "__array_struct__"):
            return np.asarray(a)
    except (TypeError, ValueError, BufferError, RuntimeError) as e:
        raise LaunchTypeError(f"argument {p.name!r}: cannot view {type(a).__name__} as a "
                              f"host array ({e})", codes.ARG_NOT_TENSOR, p.name) from None
    raise LaunchTypeError(
        f"argument {p.name!r} expects a tensor {p.dtype}{p.describe_shape()} (a numpy array "
        f"or an object with __dlpack__ / __array_interface__), got {type(a).__name__}",
        codes.ARG_NOT_TENSOR, p.name)
