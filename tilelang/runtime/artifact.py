"""Loading compiled kernels: a `.so` with an embedded manifest, or (for the JIT) any
already loaded code whose symbols can be resolved to addresses.

    lib = load("gemm.so")
    lib.gemm(a, b, c)                 # or lib["gemm"](...)
    c = lib.gemm(a, b, out_idx=[-1])  # allocate and return the last parameter
"""
from __future__ import annotations

import ctypes
import os

from .binding import BindingPlan, normalize_out_idx, slots_type
from .errors import LaunchTypeError, LaunchValueError
from ..diagnostics import ArtifactError
from .kernel_map import KernelMap
from .launch import check_num_threads, launch
from .manifest import KernelSpec, parse

_MANIFEST_T = ctypes.CFUNCTYPE(ctypes.c_char_p)
_UNSET = object()


class Kernel:
    """One kernel of a library: call it with arguments matching its manifest signature.

    `kernel(*args, out_idx=..., num_threads=..., **kwargs)`: arguments by position or
    by parameter name; `out_idx` and `num_threads` given here override the defaults the
    kernel was created with (a parameter literally named `out_idx` or `num_threads`
    can only be passed by position).
    """

    def __init__(self, spec: KernelSpec, grid_addrs, owner, out_idx=None, num_threads=None):
        """`grid_addrs`: the (blocks, num_blocks) code addresses of each grid, in order."""
        self.spec = spec
        self.name = spec.name
        self._owner = owner                        # keeps the code mapped while we live
        # Declared with the exact args-array type: ctypes then passes the array without
        # converting it (the cheapest argument conversion it has).
        args_t = slots_type(spec.num_slots)
        i64 = ctypes.c_int64
        self._grids = tuple((ctypes.CFUNCTYPE(None, args_t, i64, i64)(blocks),
                             ctypes.CFUNCTYPE(i64, args_t)(num_blocks))
                            for blocks, num_blocks in grid_addrs)
        # A library-wide default may not suit every kernel: checked at the first call.
        self._default_out_idx = out_idx
        self._num_threads = None if num_threads is None else check_num_threads(num_threads)
        self._plans: dict = {}
        self._plan: BindingPlan | None = None      # for the default out_idx, built lazily
        self._ranks = None
        if spec.ranks is not None:                 # the rank table: ranks/kernels.py
            from .ranks.kernels import RankLaunch
            self._ranks = RankLaunch(spec)

    @property
    def params(self):
        return self.spec.params

    @property
    def symbols(self):
        return self.spec.symbols

    @property
    def manifest(self) -> dict:
        return self.spec.raw

    def signature(self) -> str:
        return self.spec.signature()

    @property
    def __signature__(self):
        """For `inspect.signature` / `help`: the arguments a caller passes by default."""
        import inspect
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        params = [inspect.Parameter(n, kind) for n in self.plan().names]
        params += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None)
                   for n in ("out_idx", "num_threads")]
        return inspect.Signature(params)

    def __repr__(self) -> str:
        return f"<tilelang.Kernel {self.spec.signature()}>"

    def plan(self, out_idx=_UNSET) -> BindingPlan:
        """The binding plan for `out_idx` (the kernel's default when not given)."""
        if out_idx is _UNSET:
            if self._plan is None:
                self._plan = BindingPlan(self.spec, self._default_out_idx)
            return self._plan
        # Keyed by the normalised indices: 2.0 == 2 as a dict key, yet only 2 is valid.
        key = normalize_out_idx(self.spec, out_idx)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = BindingPlan(self.spec, out_idx)
        return plan

    def __call__(self, *args, out_idx=_UNSET, num_threads=None, **kwargs):
        plan = self._plan if out_idx is _UNSET and self._plan is not None else self.plan(out_idx)
        try:
            slots, keep, result = plan.bind(args, kwargs)
        except (LaunchTypeError, LaunchValueError) as err:
            raise err.with_traceback(None) from None    # it names the argument: no frames
        if num_threads is None:
            num_threads = self._num_threads
        else:
            check_num_threads(num_threads)
        table = None if self._ranks is None else self._ranks.prepare(plan, slots, keep[0])
        for blocks, num_blocks in self._grids:     # in order, each to completion
            launch(blocks, num_blocks, slots, num_threads)
        if table is not None:
            self._ranks.check(table, plan, keep[0])
        del keep                                   # arrays stayed alive through the launch
        return result


class Library(KernelMap):
    """The kernels of one manifest, resolved to code addresses.

    Build with `load(path)` for a shared library, or `Library.from_cdll` /
    `Library.from_symbols` (the JIT path) to wrap code that is already loaded.
    """

    def __init__(self, manifest, resolve, owner, path: str | None = None, out_idx=None,
                 num_threads=None):
        where = path or "<in-memory library>"
        parsed = parse(manifest, where)
        self.path = path
        self._owner = owner
        self.manifest = {k: v for k, v in parsed.items() if k != "specs"}
        self._kernels: dict[str, Kernel] = {}
        for spec in parsed["specs"]:
            addrs = [(_resolve(resolve, g.blocks, where), _resolve(resolve, g.num_blocks, where))
                     for g in spec.grids]
            default = out_idx.get(spec.name) if isinstance(out_idx, dict) else out_idx
            self._kernels[spec.name] = Kernel(spec, addrs, owner, default, num_threads)

    @classmethod
    def from_cdll(cls, cdll: ctypes.CDLL, manifest=None, *, path=None, out_idx=None,
                  num_threads=None) -> "Library":
        """Wrap a loaded shared library; the manifest is read from it unless given.
        `out_idx` is a default for every kernel, or a dict kernel name -> out_idx."""
        path = path or getattr(cdll, "_name", None)
        if manifest is None:
            manifest = _read_manifest(lambda n: _cdll_address(cdll, n), path or "<library>")
        return cls(manifest, lambda n: _cdll_address(cdll, n), cdll, path, out_idx,
                   num_threads)

    @classmethod
    def from_symbols(cls, manifest, resolve, owner, *, out_idx=None,
                     num_threads=None) -> "Library":
        """Wrap in-memory code (e.g. an MCJIT engine): `resolve(symbol) -> address` (0 or
        None when missing); `owner` is kept alive as long as any kernel is. The manifest
        (dict or JSON) is read through `tilelang_manifest` when None."""
        if manifest is None:
            manifest = _read_manifest(resolve, "<in-memory library>")
        return cls(manifest, resolve, owner, None, out_idx, num_threads)

    def __repr__(self) -> str:
        return f"<tilelang.Library {self.path or '(in memory)'}: {', '.join(self._kernels)}>"


def load(path, *, out_idx=None, num_threads=None) -> Library:
    """Load a tilelang shared library (`tilec compile --emit so`) and its kernels."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such library: {path}")
    try:
        cdll = ctypes.CDLL(os.path.abspath(path))
    except OSError as e:
        raise ArtifactError(f"{path}: cannot load as a shared library ({e})") from None
    return Library.from_cdll(cdll, path=path, out_idx=out_idx, num_threads=num_threads)


def _cdll_address(cdll: ctypes.CDLL, symbol: str):
    try:
        fn = getattr(cdll, symbol)
    except AttributeError:
        return None
    return ctypes.cast(fn, ctypes.c_void_p).value


def _resolve(resolve, symbol: str, where: str) -> int:
    addr = resolve(symbol)
    if not addr:
        raise ArtifactError(f"{where}: the manifest names a kernel but the symbol {symbol!r} "
                            f"is missing; rebuild the library")
    return addr


def _read_manifest(resolve, where: str) -> bytes:
    addr = resolve("tilelang_manifest")
    if not addr:
        raise ArtifactError(f"{where}: not a tilelang library (no tilelang_manifest symbol); "
                            f"build one with `tilec compile --emit so`")
    text = _MANIFEST_T(addr)()
    if text is None:
        raise ArtifactError(f"{where}: tilelang_manifest() returned NULL")
    return text
