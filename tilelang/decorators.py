"""The Python entry points: `@tilelang.kernel`, `@tilelang.jit`, `tilelang.compile`.

    @tilelang.kernel(out_idx=[-1], BLOCK=64)     # keywords besides the options are defines
    def add(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"),
            C: T.Tensor((N,), "float32")): ...
    c = add(a, b)                                # compiles on first use (disk-cached), runs
    print(add.ir(after="lower_tile_ops"))

The function body is never executed by Python: the frontend parses its source. Errors in
the kernel surface as `TileLangError` whose message points into the user's `.py` file.
"""
from __future__ import annotations

import inspect
import os

from .diagnostics import Diagnostic, TileLangError
from .diagnostics.codes_driver import NOT_A_KERNEL

__all__ = ["kernel", "jit", "compile", "KernelFunction", "JITFactory"]

# Keywords of the decorators and `compile` that are compile options, not defines.
_OPTION_NAMES = ("target", "opt", "cpu", "features", "verify_each", "dump_after", "dump_dir",
                 "memory_reuse", "raster", "fast_math", "strict_dtypes")


def _split_options(kwargs: dict) -> tuple[dict, dict]:
    options = {k: v for k, v in kwargs.items() if k in _OPTION_NAMES}
    defines = {k: v for k, v in kwargs.items() if k not in _OPTION_NAMES}
    return options, defines


class KernelFunction:
    """A kernel from a Python function or `.tl` text: parsed on first use, compiled
    through the disk cache on first call, then called like the runtime kernel."""

    def __init__(self, *, pyfunc=None, text=None, filename="<string>", out_idx=None,
                 defines=None, kernel=None, parser=None, **options):
        from .driver import make_options
        self._pyfunc, self._text, self._filename = pyfunc, text, filename
        self._parser = parser          # options -> Module, for a current-style jit body
        self.out_idx = out_idx
        self.options = make_options(defines=defines, kernel=kernel, **options)
        self._module = None
        self._library = None
        self._runtime_kernel = None
        if pyfunc is not None:
            self.__name__ = getattr(pyfunc, "__name__", "kernel")
            self.__doc__ = getattr(pyfunc, "__doc__", None)
            self.__wrapped__ = pyfunc

    # -- stages ---------------------------------------------------------------------

    def module(self):
        """The IR module straight from the frontend (parsed once)."""
        if self._module is None:
            from .driver import stages
            try:
                if self._parser is not None:
                    self._module = self._parser(self.options)
                elif self._pyfunc is not None:
                    self._module = stages.parse_pyfunc(self._pyfunc, self.options)
                else:
                    self._module = stages.parse_text(self._text, self._filename, self.options)
            except TileLangError as err:
                raise err.with_traceback(None) from None   # the diagnostic says it all
        return self._module

    @property
    def name(self) -> str:
        if self._runtime_kernel is not None:
            return self._runtime_kernel.name
        return self._func().name

    def _func(self):
        from .driver.stages import only_kernel
        return only_kernel(self.module())

    def library(self):
        """The runtime `Library` (compiled through the disk cache on first use)."""
        if self._library is None:
            from .driver import build_module
            from .driver.build import build_source
            try:
                if self._text is not None and self._module is None:
                    # `.tl` text: the source index may serve it without parsing
                    self._library = build_source(self._text, self._filename, self.options,
                                                 out_idx=self.out_idx)
                else:
                    self._library = build_module(self.module(), self.options,
                                                 out_idx=self.out_idx)
            except TileLangError as err:
                raise err.with_traceback(None) from None
        return self._library

    def compile(self):
        """Compile now (through the cache) instead of on the first call; returns self."""
        if self._runtime_kernel is None:
            library = self.library()
            name = next(iter(library)).name if len(library) == 1 else self.name
            self._runtime_kernel = library[name]
        return self

    def __call__(self, *args, **kwargs):
        self.compile()
        return self._runtime_kernel(*args, **kwargs)     # out_idx: the library's default

    # -- inspection -----------------------------------------------------------------

    def ir(self, after: str | None = None) -> str:
        """The IR as `.tl` text after pass `after` (straight from the parser if None)."""
        from .driver import ir_text
        from .driver.stages import PARSE_STAGE
        return ir_text(self.module(), self.options, after=after or PARSE_STAGE)

    def memory_report(self):
        """The memory plan (the `--stats` figures): `.kernels[i].scopes` with each
        buffer's bytes, live range and offset, `.before` / `.after` per scope, the
        module's global workspaces; `str()` gives the table."""
        from .driver.stages import memory_report
        return memory_report(self.module(), self.options)

    def llvm(self) -> str:
        """The optimised LLVM IR."""
        from .driver import text_output
        return text_output(self.module(), self.options, "llvm")

    def asm(self) -> str:
        """The host assembly."""
        from .driver import text_output
        return text_output(self.module(), self.options, "asm")

    def get_kernel_source(self, kernel_only: bool = False) -> str:
        """TileLang's: the generated code as text — the target's first text kind (cpu:
        the optimised LLVM IR, tcsim: its assembly). `kernel_only` is accepted."""
        from .driver import text_output
        kind = next(k.name for k in self.options.target.kinds if k.text)
        return text_output(self.module(), self.options, kind)

    # -- profiling ------------------------------------------------------------------

    def get_profiler(self, tensor_supply_type=None, sizes: dict | None = None,
                     num_threads: int | None = None, index=None):
        """TileLang's profiler: `.do_bench()`, `.assert_allclose(ref)`, `.run_once()` on
        inputs made by `tensor_supply_type` (default `TensorSupplyType.Auto`); `sizes`
        gives the symbolic sizes (T.dynamic) of the generated inputs, `index` how to
        make integer tensors ({"block_table": "paged:64"}, as `tilec run --index`)."""
        from .profiler.profiler import Profiler, TensorSupplyType
        return Profiler(self, self.out_idx, tensor_supply_type or TensorSupplyType.Auto,
                        sizes=sizes, num_threads=num_threads, index=index)

    def run_once(self, sizes: dict | None = None):
        """One call on generated inputs (TileLang's `kernel.run_once()`): its outputs."""
        return self.get_profiler(sizes=sizes).run_once()

    def profile(self, sizes: dict | None = None, **kwargs):
        """Where the time goes: time, FLOPs, bytes, the roofline and the fraction of it
        reached, the bound and advice (a `ProfileReport`; `str()` gives the text)."""
        from .profiler.analyze import profile
        return profile(self, sizes=sizes, **kwargs)

    @property
    def last_report(self):
        """tcsim targets: the simulator's Report of the last call (cycles, MMA
        utilisation, bytes, stalls; `.summary()`); None before a call and on cpu."""
        return getattr(self._runtime_kernel, "last_report", None)

    @property
    def runtime_kernel(self):
        """The runtime's kernel object (signature, manifest), compiling if needed."""
        return self.compile()._runtime_kernel

    def __repr__(self) -> str:
        what = getattr(self, "__name__", None) or self._filename
        return f"<tilelang.KernelFunction {what}>"


def kernel(fn=None, *, out_idx=None, **kwargs):
    """`@tilelang.kernel` or `@tilelang.kernel(out_idx=[-1], NAME=value, target=..., opt=...)`
    on a `T.Tensor`-annotated function. Keywords that are not options are constants
    overriding the function's globals (like `-D`)."""
    options, defines = _split_options(kwargs)

    def wrap(pyfunc):
        _check_function(pyfunc, "@tilelang.kernel")
        return KernelFunction(pyfunc=pyfunc, out_idx=out_idx, defines=defines, **options)

    return wrap(fn) if fn is not None else wrap


class JITFactory:
    """TileLang's `@tilelang.jit`. The factory form: `factory(*params)` returns a
    `@T.prim_func`; each distinct parameter tuple is compiled once (and cached on disk
    across processes). The current style — the function is the kernel (`T.const` sizes,
    `T.empty` outputs, `return C`) — is served by `eager.EagerJIT`: a call compiles for
    the arguments' shapes and runs, `.compile(M=..., block_M=...)` gives the kernel."""

    def __init__(self, factory, out_idx=None, **kwargs):
        from . import jit_options
        self.factory = factory
        self.out_idx = out_idx
        jit = jit_options.parse(kwargs)
        jit_options.check_defines(jit.defines, _parameters(factory),
                                  getattr(factory, "__name__", "jit"))
        self.options, self.defines = jit.compile, jit.defines
        self.verbose, self.debug_root_path = jit.verbose, jit.debug_root_path
        self._kernels: dict = {}
        self._eager = None
        self.__name__ = getattr(factory, "__name__", "jit")
        self.__doc__ = getattr(factory, "__doc__", None)
        self.__wrapped__ = factory

    @property
    def eager(self):
        """The current-style implementation, or None for a factory."""
        if self._eager is None:
            from .eager import EagerJIT, is_eager
            self._eager = EagerJIT(self) if is_eager(self.factory) else False
        return self._eager or None

    def __call__(self, *args, **kwargs):
        if self.eager is not None:
            return self.eager.call(args, kwargs)
        key = self._key(args, kwargs)
        k = self._kernels.get(key)
        if k is None:
            pyfunc = self.factory(*args, **kwargs)
            _check_function(pyfunc, f"the @tilelang.jit factory `{self.__name__}`",
                            returned=True)
            k = self.make_kernel(pyfunc=pyfunc, out_idx=self.out_idx)
            self._kernels[key] = k
        return k

    def compile(self, *args, **kwargs) -> KernelFunction:
        """The compiled kernel for these parameters (TileLang's `.compile`): the factory's
        arguments, or in the current style the compile-time parameters and the T.const
        sizes by name (`matmul.compile(M=1024, N=1024, K=1024, block_M=128, ...)`)."""
        if self.eager is not None:
            return self.eager.compile(args, kwargs)
        return self(*args, **kwargs)

    def par_compile(self, configs, num_workers=None, ignore_error=False) -> list:
        """TileLang's `par_compile`: the kernels of several parameter sets, in order (a
        set is a tuple of positional arguments or a dict of keywords). They compile one
        after another, each through the cache; `num_workers` is accepted for TileLang's
        signature. With `ignore_error`, a set that fails to compile gives None."""
        out = []
        for config in configs:
            args, kwargs = ((), config) if isinstance(config, dict) else (tuple(config), {})
            try:
                out.append(self.compile(*args, **kwargs))
            except TileLangError:
                if not ignore_error:
                    raise
                out.append(None)
        return out

    def get_kernel_source(self, *args, **kwargs) -> str:
        """The generated code of the kernel for these parameters (none for a function
        that takes none, as TileLang's `f.get_kernel_source()`)."""
        return self.compile(*args, **kwargs).get_kernel_source()

    def make_kernel(self, **kwargs) -> KernelFunction:
        """A compiled KernelFunction with this decorator's options (`verbose` reports the
        compile, `debug_root_path` receives the kernel's IR)."""
        k = KernelFunction(defines=self.defines, **self.options, **kwargs)
        if self.verbose:
            _say(f"tilelang.jit: compiling `{self.__name__}` for {k.options.target}")
        k.compile()
        if self.debug_root_path:
            _write_debug(k, self.debug_root_path)
        return k

    def _key(self, args, kwargs):
        """The parameters as the factory sees them, so `f(32)`, `f(block=32)` and a
        default spelled out are one kernel."""
        try:
            bound = inspect.signature(self.factory).bind(*args, **kwargs)
        except (TypeError, ValueError):   # a bad call: the factory itself will say why
            return _freeze((self.target_key(), args, sorted(kwargs.items())))
        bound.apply_defaults()
        return _freeze((self.target_key(), tuple(bound.arguments.items())))

    def target_key(self):
        """The default target a kernel without `target=` compiles for now: a change of
        $TILELANG_TARGET between calls compiles anew instead of reusing the other
        target's kernel. None when the decorator names its target."""
        from .targets import default_spec, names_default
        if not names_default(self.options.get("target")):
            return None
        return default_spec()

    def __repr__(self) -> str:
        return f"<tilelang.JITFactory {self.__name__}: {len(self._kernels)} compiled>"


def jit(fn=None, *, out_idx=None, **kwargs):
    """`@tilelang.jit` / `@tilelang.jit(out_idx=[-1], target=..., pass_configs=...)` on a
    factory or a current-style kernel; an unknown keyword is an error (TL0780)."""
    def wrap(factory):
        _check_function(factory, "@tilelang.jit")
        return JITFactory(factory, out_idx=out_idx, **kwargs)

    return wrap(fn) if fn is not None else wrap


def compile(source, kernel=None, out_idx=None, **kwargs):
    """Compile a `.tl` path, `.tl` source text or a `T.Tensor`-annotated function.

    One kernel (or the one `kernel=` names) gives a callable `KernelFunction`; a `.tl`
    source with several kernels gives the runtime `Library` (`lib["row_sum"](...)`).
    `out_idx` becomes the kernels' default. Keywords: the compile options (target, opt,
    cpu, features, verify_each, dump_after, dump_dir, memory_reuse, raster) and
    `defines={...}`. With `target="tcsim[:CONFIG]"` a call simulates the kernel on that
    machine (outputs written in place; `.last_report` holds the simulator's report).
    TileLang's `@tilelang.jit` options are taken as the decorator takes them."""
    from .jit_options import TILELANG_OPTIONS
    from .passconfig import options_for
    tilelang_opts = {k: kwargs.pop(k) for k in TILELANG_OPTIONS if k in kwargs}
    options, unknown = _split_options(kwargs)
    options.update(options_for(tilelang_opts.get("pass_configs")))
    defines = unknown.pop("defines", None)
    if unknown:
        raise TypeError(f"tilelang.compile() got unexpected keyword(s) {sorted(unknown)}; "
                        f"constants go in defines={{...}}")
    result = _compile(source, kernel, out_idx, defines, options)
    if isinstance(result, KernelFunction):
        if tilelang_opts.get("verbose"):
            _say(f"tilelang.compile: compiled `{result.name}` for {result.options.target}")
        if tilelang_opts.get("debug_root_path"):
            _write_debug(result, tilelang_opts["debug_root_path"])
    return result


def _compile(source, kernel, out_idx, defines, options):
    if isinstance(source, KernelFunction) and source._pyfunc is not None:
        source = source._pyfunc           # recompile the function with these options
    if isinstance(source, JITFactory):
        raise TileLangError(Diagnostic(
            NOT_A_KERNEL, f"`{source.__name__}` is a @tilelang.jit factory",
            help=f"call it with its parameters instead: `{source.__name__}(...)`"))
    if callable(source) and not isinstance(source, str):
        return KernelFunction(pyfunc=source, out_idx=out_idx, defines=defines, kernel=kernel,
                              **options).compile()
    text, filename = _source_text(source)
    k = KernelFunction(text=text, filename=filename, out_idx=out_idx, defines=defines,
                       kernel=kernel, **options)
    library = k.library()           # a warm start: served from the cache, nothing parsed
    return k.compile() if len(library) == 1 else library


def _source_text(source) -> tuple[str, str]:
    from .driver import read_source
    if isinstance(source, os.PathLike):
        path = os.fspath(source)
        return read_source(path), path
    if isinstance(source, str):
        if "\n" not in source and (source.endswith(".tl") or os.path.isfile(source)):
            return read_source(source), source
        return source, "<string>"
    raise TileLangError(Diagnostic(
        NOT_A_KERNEL, f"cannot compile a {type(source).__name__}",
        help="pass a .tl path, .tl source text or a T.Tensor-annotated function"))


def _check_function(obj, where: str, returned: bool = False) -> None:
    if not callable(obj):
        verb = "returned" if returned else "was applied to"
        raise TileLangError(Diagnostic(
            NOT_A_KERNEL, f"{where} {verb} a {type(obj).__name__}, not a function",
            help="a factory must define a `@T.prim_func` and return it" if returned else None))


def _parameters(fn) -> list:
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return []


def _say(message: str) -> None:
    """`verbose`: a line on stderr."""
    import sys
    print(message, file=sys.stderr)


def _write_debug(k: KernelFunction, root: str) -> None:
    """`debug_root_path`: the kernel's IR as `.tl` text, one file per kernel."""
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, f"tilelang_jit_program_{k.name}.tl"), "w") as f:
        f.write(k.ir())


def _freeze(value):
    """A hashable stand-in for the factory's parameters (lists, dicts, dtypes...)."""
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)
