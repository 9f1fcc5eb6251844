"""Realistic inputs for the index tensors of `tilec run` (`--index NAME=KIND[:ARG...]`).

An integer tensor often holds indices or lengths the kernel follows (a block table,
sequence lengths, a schedule): zeros would make every request empty and every block
the first one, random values would point anywhere. Each kind makes one such tensor:

  paged:PAGE            a block table (rows = requests): every entry a distinct block of
                        a cache of rows * cols blocks of PAGE tokens, in permuted order
  uniform:LO:HI         integers drawn uniformly from LO..HI (sequence lengths); when a
                        paged table of the same rows was made, clipped to what a row of
                        it covers
  perm                  a permutation of 0 .. size - 1
  const:V               every entry V
  mla_schedule:LENS     FlashMLA's tile scheduler metadata for the lengths tensor LENS,
                        over as many parts as the tensor has rows
  mla_splits:LENS:META  ... and the cumulative split counts of that schedule (META: the
                        metadata tensor, whose rows are the parts)

An integer tensor without `--index` gets small non-negative values (0..7), never zeros
only. The generator is one function, `make_inputs`, so that a target can offer it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..diagnostics import Diagnostic, TileLangError
from ..diagnostics.codes_driver import BAD_ARG

DEFAULT_HIGH = 7
# kinds that live with the kernels they serve: "module:function(spec, shape, made)"
_PLUGINS = {"mla_schedule": "tilelang.ops.mla.scheduler:metadata_input",
            "mla_splits": "tilelang.ops.mla.scheduler:splits_input"}
_BUILTIN = ("paged", "uniform", "perm", "const")


@dataclass(frozen=True)
class IndexSpec:
    name: str
    kind: str
    args: tuple[str, ...]

    def text(self) -> str:
        return ":".join((self.kind,) + self.args)


def _bad(message: str, help: str | None = None) -> TileLangError:
    return TileLangError(Diagnostic(BAD_ARG, message, help=help))


def parse_specs(items) -> dict[str, IndexSpec]:
    """`block_table=paged:64,cache_seqlens=uniform:1:8192` (possibly repeated)."""
    out = {}
    for item in items:
        for pair in filter(None, (p.strip() for p in item.split(","))):
            name, sep, rest = pair.partition("=")
            parts = rest.split(":")
            if not sep or not name.strip().isidentifier() or not parts[0]:
                raise _bad(f"bad --index `{pair}`: expected NAME=KIND[:ARG...]",
                           help="e.g. --index block_table=paged:64,cache_seqlens=uniform:1:8192")
            kind = parts[0]
            if kind not in _BUILTIN and kind not in _PLUGINS:
                raise _bad(f"unknown index kind `{kind}` in --index `{pair}`",
                           help="kinds: " + ", ".join(_BUILTIN + tuple(_PLUGINS)))
            out[name.strip()] = IndexSpec(name.strip(), kind, tuple(parts[1:]))
    return out


def make_inputs(specs: dict, tensors: dict, rng) -> dict:
    """{name: array} for every spec; `tensors` maps each integer tensor parameter to
    (shape, numpy dtype). Specs that name another tensor are made after it."""
    for name in specs:
        if name not in tensors:
            raise _bad(f"--index names `{name}`, which is not an integer tensor parameter "
                       f"of the kernel", help="integer tensors: " + (", ".join(tensors)
                                                                      or "none"))
    made: dict = {}
    pending = dict(specs)
    while pending:
        ready = [s for s in pending.values() if _source(s) is None or _source(s) in made
                 or _source(s) not in pending]
        if not ready:
            raise _bad("--index specs refer to each other in a cycle: "
                       + ", ".join(s.text() for s in pending.values()))
        for spec in ready:
            shape, dtype = tensors[spec.name]
            made[spec.name] = np.ascontiguousarray(
                _make(spec, shape, rng, made, tensors)).astype(dtype)
            del pending[spec.name]
    return made


def default_input(shape, dtype, rng):
    """An integer tensor nobody described: small non-negative values, not all zeros."""
    return rng.integers(0, DEFAULT_HIGH + 1, size=shape).astype(dtype)


def _source(spec: IndexSpec) -> str | None:
    return spec.args[0] if spec.kind in _PLUGINS and spec.args else None


def _ints(spec: IndexSpec, count: int) -> list[int]:
    try:
        values = [int(a) for a in spec.args]
    except ValueError:
        values = []
    if len(values) != count:
        raise _bad(f"--index {spec.name}={spec.text()}: `{spec.kind}` takes {count} "
                   f"integer argument{'s' if count != 1 else ''}")
    return values


def _make(spec: IndexSpec, shape, rng, made: dict, tensors: dict):
    size = int(np.prod(shape))
    if spec.kind == "paged":
        (page,) = _ints(spec, 1)
        if len(shape) != 2 or page < 1:
            raise _bad(f"--index {spec.name}=paged:{page}: a block table is 2-D "
                       f"(requests, blocks) with a positive page size")
        made.setdefault("__pages__", {})[shape[0]] = shape[1] * page
        return rng.permutation(size).reshape(shape)
    if spec.kind == "uniform":
        lo, hi = _ints(spec, 2)
        if hi < lo:
            raise _bad(f"--index {spec.name}={spec.text()}: LO is above HI")
        values = rng.integers(lo, hi + 1, size=shape)
        cover = made.get("__pages__", {}).get(shape[0] if shape else None)
        return np.minimum(values, cover) if cover is not None else values
    if spec.kind == "perm":
        _ints(spec, 0)
        return rng.permutation(size).reshape(shape)
    if spec.kind == "const":
        (value,) = _ints(spec, 1)
        return np.full(shape, value)
    return _plugin(spec, shape, made, tensors)


def _plugin(spec: IndexSpec, shape, made: dict, tensors: dict):
    import importlib
    module, _, fn = _PLUGINS[spec.kind].partition(":")
    source = _source(spec)
    if source is None or source not in made:
        raise _bad(f"--index {spec.name}={spec.text()}: `{spec.kind}` needs the lengths "
                   f"tensor it schedules, made by --index too (e.g. "
                   f"{spec.kind}:cache_seqlens with cache_seqlens=uniform:1:8192)")
    extra = []
    if spec.kind == "mla_splits":           # the parts: rows of the metadata tensor
        meta = spec.args[1] if len(spec.args) > 1 else None
        if meta not in tensors:
            raise _bad(f"--index {spec.name}={spec.text()}: name the metadata tensor, "
                       f"e.g. mla_splits:cache_seqlens:sched")
        extra.append(int(tensors[meta][0][0]))
    try:
        return getattr(importlib.import_module(module), fn)(made[source], shape, *extra)
    except ValueError as e:
        raise _bad(f"--index {spec.name}={spec.text()}: {e}") from None


__all__ = ["IndexSpec", "parse_specs", "make_inputs", "default_input"]
