"""The artifact manifest: parsed and validated into plain records the binder works from.

The manifest is the JSON a library returns from `tilelang_manifest()` (docs/interfaces.md).
Everything the runtime needs to bind and launch a kernel comes from here, never from the
compiler, so a library loads in a process that has no compiler.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from .. import dtypes
from ..diagnostics import ArtifactError
from .sizes import SizeExpr

FORMAT = 1                   # the manifest format this runtime reads
ACCESS = ("read", "write", "readwrite")


@dataclass(frozen=True)
class ParamSpec:
    name: str
    kind: str                      # "tensor" | "scalar"
    dtype: str                     # canonical tilelang dtype name
    shape: tuple = ()              # ints and symbol names (tensors only)
    access: str = "readwrite"      # "read" when the kernel never writes the tensor

    @property
    def is_tensor(self) -> bool:
        return self.kind == "tensor"

    def describe_shape(self) -> str:
        inner = ", ".join(str(d) for d in self.shape)
        return f"({inner},)" if len(self.shape) == 1 else f"({inner})"


@dataclass(frozen=True)
class BufferSpec:
    """A global workspace the caller allocates (zeroed) for each launch."""
    name: str
    dtype: str
    shape: tuple


@dataclass(frozen=True)
class RankSpec:
    """A multi-rank kernel: the tensors it reaches on peers (they must live in one
    symmetric heap) and its statements that may fail at run time (`sites`: dicts with
    op, buffer and where, indexed by the rank table's ERR_SITE)."""
    symmetric: tuple
    sites: tuple


@dataclass(frozen=True)
class GridSpec:
    """One grid of a kernel: its entry symbols and (for people) its size formulas."""
    blocks: str                    # void (const int64_t *args, int64_t begin, int64_t end)
    num_blocks: str                # int64_t (const int64_t *args)
    grid: tuple = ()
    threads: int | None = None


@dataclass(frozen=True)
class KernelSpec:
    name: str
    params: tuple                  # of ParamSpec
    symbols: tuple                 # of str, in args-slot order
    workspaces: tuple              # of BufferSpec
    grid: tuple                    # human-readable grid formulas (of the first grid)
    threads: int | None
    raw: dict                      # the manifest entry as read
    lets: tuple = ()               # (name, SizeExpr) computed from symbols and scalars
    grids: tuple = ()              # of GridSpec, in launch order (each runs to completion)
    ranks: "RankSpec | None" = None  # multi-rank kernels: one more slot, the rank table

    @property
    def num_slots(self) -> int:
        return len(self.params) + len(self.symbols) + len(self.workspaces) + \
            (self.ranks is not None)

    def signature(self) -> str:
        parts = []
        for p in self.params:
            if p.is_tensor:
                parts.append(f"{p.name}: {p.dtype}[{', '.join(str(d) for d in p.shape)}]")
            else:
                parts.append(f"{p.name}: {p.dtype}")
        return f"{self.name}({', '.join(parts)})"


def parse(text, where: str) -> dict:
    """Decode and validate a manifest (bytes, str or dict); `where` names its source in
    errors. Returns the manifest dict with `kernels` replaced by KernelSpec records under
    the extra key `specs`."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8", errors="replace")
    if isinstance(text, str):
        try:
            manifest = json.loads(text)
        except json.JSONDecodeError as e:
            raise ArtifactError(f"{where}: the manifest is not valid JSON ({e})") from None
    else:
        manifest = text
    if not isinstance(manifest, dict):
        raise ArtifactError(f"{where}: the manifest must be a JSON object")
    fmt = manifest.get("format")
    if fmt != FORMAT:
        raise ArtifactError(
            f"{where}: manifest format {fmt!r} is not supported by this runtime (it reads "
            f"format {FORMAT}); rebuild the library with this version of tilelang")
    kernels = manifest.get("kernels")
    if not isinstance(kernels, list):
        raise ArtifactError(f"{where}: the manifest has no 'kernels' list")
    specs = [kernel_spec(k, where) for k in kernels]
    names = [s.name for s in specs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ArtifactError(f"{where}: kernel {sorted(dup)[0]!r} appears twice in the manifest")
    return {**manifest, "specs": specs}


def kernel_spec(entry, where: str) -> KernelSpec:
    """One manifest kernel entry (a dict) as a validated KernelSpec."""
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise ArtifactError(f"{where}: a manifest kernel entry has no name")
    name = entry["name"]
    ctx = f"{where}: kernel {name!r}"
    symbols = entry.get("symbols", [])
    if not (isinstance(symbols, list) and all(isinstance(s, str) for s in symbols)):
        raise ArtifactError(f"{ctx}: 'symbols' must be a list of names")
    if len(set(symbols)) != len(symbols):
        raise ArtifactError(f"{ctx}: 'symbols' lists a name twice")
    params = tuple(_param(p, symbols, ctx) for p in _list(entry, "params", ctx))
    pnames = [p.name for p in params]
    if len(set(pnames)) != len(pnames):
        raise ArtifactError(f"{ctx}: two parameters share a name")
    workspaces = tuple(_workspace(w, symbols, ctx) for w in _list(entry, "workspaces", ctx))
    threads = entry.get("threads")
    return KernelSpec(name, params, tuple(symbols), workspaces,
                      tuple(str(g) for g in entry.get("grid", [])),
                      threads if isinstance(threads, int) else None, entry,
                      _lets(entry, ctx), _grids(entry, ctx), _ranks(entry, pnames, ctx))


def _ranks(entry: dict, pnames: list, ctx: str) -> RankSpec | None:
    ranks = entry.get("ranks")
    if ranks is None:
        return None
    if not isinstance(ranks, dict):
        raise ArtifactError(f"{ctx}: 'ranks' must be an object")
    symmetric = ranks.get("symmetric", [])
    if not (isinstance(symmetric, list) and all(n in pnames for n in symmetric)):
        raise ArtifactError(f"{ctx}: 'ranks.symmetric' must list parameter names")
    sites = ranks.get("sites", [])
    if not (isinstance(sites, list) and all(isinstance(x, dict) for x in sites)):
        raise ArtifactError(f"{ctx}: 'ranks.sites' must be a list of objects")
    return RankSpec(tuple(symmetric), tuple(sites))


def _grids(entry: dict, ctx: str) -> tuple:
    """The grids in launch order; a manifest without `grids` describes one grid whose
    entries have the one-grid names `<name>__blocks` / `<name>__num_blocks`."""
    if "grids" not in entry:
        name = entry["name"]
        threads = entry.get("threads")
        return (GridSpec(f"{name}__blocks", f"{name}__num_blocks",
                         tuple(str(g) for g in entry.get("grid", [])),
                         threads if isinstance(threads, int) else None),)
    grids = []
    for i, g in enumerate(_list(entry, "grids", ctx)):
        if not (isinstance(g, dict) and isinstance(g.get("blocks"), str)
                and isinstance(g.get("num_blocks"), str)):
            raise ArtifactError(f"{ctx}: grid {i} needs the names of its 'blocks' and "
                                f"'num_blocks' entries")
        threads = g.get("threads")
        grids.append(GridSpec(g["blocks"], g["num_blocks"],
                              tuple(str(x) for x in g.get("grid", [])),
                              threads if isinstance(threads, int) else None))
    if not grids:
        raise ArtifactError(f"{ctx}: 'grids' is empty")
    return tuple(grids)


def _list(entry: dict, key: str, ctx: str) -> list:
    value = entry.get(key, [])
    if not isinstance(value, list):
        raise ArtifactError(f"{ctx}: {key!r} must be a list")
    return value


def _dtype(value, ctx: str) -> str:
    name = dtypes.canonical(value) if isinstance(value, str) else None
    if name is None:
        raise ArtifactError(f"{ctx}: unknown dtype {value!r}")
    return name


def _shape(value, symbols: list, ctx: str) -> tuple:
    """Dims as ints, symbol names (str) or SizeExpr for any other expression text."""
    if not isinstance(value, list):
        raise ArtifactError(f"{ctx}: shape must be a list")
    dims = []
    for d in value:
        if isinstance(d, int) and not isinstance(d, bool) and d >= 0:
            dims.append(d)
        elif isinstance(d, str) and d in symbols:
            dims.append(d)
        elif isinstance(d, str):
            dims.append(SizeExpr(d, ctx))
        else:
            raise ArtifactError(f"{ctx}: shape entry {d!r} is neither a non-negative int, "
                                f"a symbol nor a size expression")
    return tuple(dims)


def _lets(entry: dict, ctx: str) -> tuple:
    """Optional named sizes computed before the grid (prologue values that workspace
    shapes may use): `[{"name": ..., "expr": ...}]`, evaluated in order."""
    lets = []
    for item in _list(entry, "lets", ctx):
        if not (isinstance(item, dict) and isinstance(item.get("name"), str)
                and isinstance(item.get("expr"), (str, int))):
            raise ArtifactError(f"{ctx}: each of 'lets' needs a name and an expr")
        lets.append((item["name"], SizeExpr(str(item["expr"]), f"{ctx}, let {item['name']!r}")))
    return tuple(lets)


def _param(p, symbols: list, ctx: str) -> ParamSpec:
    if not isinstance(p, dict) or not isinstance(p.get("name"), str):
        raise ArtifactError(f"{ctx}: a parameter entry has no name")
    pctx = f"{ctx}, parameter {p['name']!r}"
    kind = p.get("kind")
    dtype = _dtype(p.get("dtype"), pctx)
    if kind == "scalar":
        return ParamSpec(p["name"], "scalar", dtype)
    if kind != "tensor":
        raise ArtifactError(f"{pctx}: kind must be 'tensor' or 'scalar', not {kind!r}")
    access = p.get("access", "readwrite")
    if access not in ACCESS:
        raise ArtifactError(f"{pctx}: access must be one of {ACCESS}, not {access!r}")
    return ParamSpec(p["name"], "tensor", dtype, _shape(p.get("shape"), symbols, pctx), access)


def _workspace(w, symbols: list, ctx: str) -> BufferSpec:
    if not isinstance(w, dict) or not isinstance(w.get("name"), str):
        raise ArtifactError(f"{ctx}: a workspace entry has no name")
    wctx = f"{ctx}, workspace {w['name']!r}"
    return BufferSpec(w["name"], _dtype(w.get("dtype"), wctx),
                      _shape(w.get("shape"), symbols, wctx))
