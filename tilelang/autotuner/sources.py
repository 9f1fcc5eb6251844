"""What the autotuner tunes: something that makes a kernel from a config.

* `FactorySource`: a kernel factory — a function of the config's parameters (and the
  fixed ones: shapes, dtypes) that returns a `@T.prim_func`, bare or under
  `@tilelang.jit` (TileLang's `kernel(block_M=None, ...)` builders and `@jit` factories);
* `TextSource`: a `.tl` file or text, or a `KernelFunction` compiled from one, whose
  configs are constants set as defines (`{"BLOCK_M": 128, "NUM_STAGES": 3}`).

Each gives an uncompiled `KernelFunction` for a config, the parsed kernel (for the
pruning model, without compiling), and the text that keys the result cache.
"""
from __future__ import annotations

import inspect


class FactorySource:
    def __init__(self, factory, args=(), kwargs=None, out_idx=None, options=None,
                 defines=None):
        self.factory = factory
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})
        self.out_idx = out_idx
        self.options = dict(options or {})
        self.defines = dict(defines or {})
        self.name = getattr(factory, "__name__", "kernel")
        self.parameters = _parameters(factory)

    def check(self, config: dict) -> None:
        """TileLang's rule: a config may only set parameters of the factory."""
        if self.parameters is None:
            return
        unknown = sorted(set(config) - set(self.parameters))
        if unknown:
            raise ValueError(f"Unused keys in config: {set(unknown)} (parameters of "
                             f"{self.name}: {', '.join(self.parameters)})")

    def kernel(self, config: dict, out_idx="default"):
        from ..decorators import KernelFunction, _check_function
        pyfunc = self.factory(*self.args, **{**self.kwargs, **config})
        _check_function(pyfunc, f"the kernel factory `{self.name}`", returned=True)
        return KernelFunction(pyfunc=pyfunc, defines=self.defines,
                              out_idx=self.out_idx if out_idx == "default" else out_idx,
                              **self.options)

    def key_text(self) -> str:
        try:
            source = inspect.getsource(self.factory)
        except (OSError, TypeError):
            source = getattr(getattr(self.factory, "__code__", None), "co_code", b"").hex()
        return f"{source}\nargs={self.args!r}\nkwargs={sorted(self.kwargs.items())!r}"


class EagerSource:
    """A current-style `@tilelang.jit` kernel called with its tensors: a config sets
    some of its compile-time parameters; the tensors fix the T.const sizes."""

    def __init__(self, jit, args=(), kwargs=None):
        self.jit = jit
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})
        self.options = dict(jit.options)
        self.defines = dict(jit.defines)
        self.name = jit.__name__
        self.parameters = _parameters(jit.factory)
        self.out_idx = self._out_idx()

    check = FactorySource.check

    def _out_idx(self):
        """The outputs' positions (T.empty), from the declarations the arguments given
        so far build (outputs do not depend on the tuned parameters)."""
        eager = self.jit.eager
        try:
            bound = eager._bind(self.args, self.kwargs, partial=True)
            return eager.signature(eager._compile_args(bound, None)).out_idx
        except Exception:                   # noqa: BLE001 - the tuned kernels still say
            return None

    def kernel(self, config: dict, out_idx="default"):
        """The compiled kernel for this config (its outputs are the T.empty ones)."""
        return self.jit.eager.compile(self.args, {**self.kwargs, **config})

    def key_text(self) -> str:
        try:
            source = inspect.getsource(self.jit.factory)
        except (OSError, TypeError):
            source = self.name
        return f"{source}\nargs={_shapes(self.args)!r}\nkwargs={_shapes(self.kwargs)!r}"


def _shapes(values):
    """Arrays by shape and dtype (their values do not change the kernel)."""
    if isinstance(values, dict):
        return sorted((k, _shapes(v)) for k, v in values.items())
    if isinstance(values, (tuple, list)):
        return [_shapes(v) for v in values]
    if hasattr(values, "shape") and hasattr(values, "dtype"):
        return ("array", tuple(values.shape), str(values.dtype))
    return values


class TextSource:
    def __init__(self, text: str, filename: str = "<string>", out_idx=None, options=None,
                 defines=None, kernel=None):
        self.text, self.filename = text, filename
        self.out_idx = out_idx
        self.options = dict(options or {})
        self.defines = dict(defines or {})
        self.kernel_name = kernel
        self.name = kernel or filename

    def check(self, config: dict) -> None:
        bad = [k for k in config if not isinstance(k, str) or not k.isidentifier()]
        if bad:
            raise ValueError(f"config keys must be constant names of the kernel, got {bad}")

    def kernel(self, config: dict, out_idx="default"):
        from ..decorators import KernelFunction
        return KernelFunction(text=self.text, filename=self.filename,
                              out_idx=self.out_idx if out_idx == "default" else out_idx,
                              defines={**self.defines, **config}, kernel=self.kernel_name,
                              **self.options)

    def key_text(self) -> str:
        return self.text


def source_of(kernel, out_idx=None, options=None):
    """The source for what `AutoTuner.from_kernel(kernel=...)` was given."""
    from ..decorators import JITFactory, KernelFunction
    if isinstance(kernel, JITFactory):
        return FactorySource(kernel.factory, out_idx=out_idx or kernel.out_idx,
                             options={**kernel.options, **(options or {})},
                             defines=kernel.defines)
    if isinstance(kernel, KernelFunction):
        if kernel._text is None:
            raise TypeError("AutoTuner.from_kernel: a @tilelang.kernel function has no "
                            "parameters to tune; pass its factory or its .tl source")
        opts = {"target": kernel.options.target, "opt": kernel.options.opt,
                **(options or {})}
        return TextSource(kernel._text, kernel._filename, out_idx or kernel.out_idx, opts,
                          dict(kernel.options.defines), kernel.options.kernel)
    if isinstance(kernel, str):
        from ..decorators import _source_text
        text, filename = _source_text(kernel)
        return TextSource(text, filename, out_idx, options)
    if callable(kernel):
        return FactorySource(kernel, out_idx=out_idx, options=options)
    raise TypeError(f"AutoTuner.from_kernel: cannot tune a {type(kernel).__name__}; pass a "
                    f"kernel factory, a @tilelang.jit function or a .tl path")


def _parameters(fn) -> list | None:
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None
