"""`@tilelang.jit` in the current style: the decorated function is the kernel.

    @tilelang.jit
    def matmul(A, B, block_M, block_N, block_K, dtype=T.float16):
        M, N, K = T.const("M, N, K")
        A: T.Tensor((M, K), dtype)
        B: T.Tensor((K, N), dtype)
        C = T.empty((M, N), dtype)
        with T.Kernel(...): ...
        return C

    c = matmul(a, b, 128, 128, 32)                      # compile for a's and b's shapes, run
    kernel = matmul.compile(M=1024, N=1024, K=1024, block_M=128, block_N=128, block_K=32)
    c = kernel(a, b)

A call binds the function's arguments: the annotated ones are tensors, the others
compile-time parameters. The T.const sizes come from the tensors' shapes (the signature
of the kernel, built once per set of parameters, says which dimension gives which size),
and each distinct (parameters, sizes) is compiled once — T.const sizes are compile-time
constants, as in TileLang. `.compile(...)` takes the parameters and the sizes by name.
"""
from __future__ import annotations

import ast
import inspect
import textwrap

from .diagnostics import Diagnostic, TileLangError
from .diagnostics.codes_compat import EAGER_FORM


def is_eager(fn) -> bool:
    """Whether `fn` is a current-style kernel (its body opens `with T.Kernel` or
    annotates a parameter) rather than a factory returning a `@T.prim_func`."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(inspect.unwrap(fn))))
    except (OSError, TypeError, SyntaxError):
        return False
    func = next((n for n in tree.body if isinstance(n, (ast.FunctionDef,
                                                        ast.AsyncFunctionDef))), None)
    if func is None:
        return False
    return any(isinstance(s, ast.With) or (isinstance(s, ast.AnnAssign) and s.value is None)
               for s in func.body)


class EagerJIT:
    """Calls and `.compile` of a current-style `@tilelang.jit` function (its
    `JITFactory` holds the options)."""

    def __init__(self, jit):
        self.jit = jit
        self.fn = jit.factory
        self.params = list(inspect.signature(self.fn).parameters)
        self._signatures: dict = {}
        self._kernels: dict = {}

    # -- the two entry points --------------------------------------------------------
    def call(self, args, kwargs):
        """Compile for these arguments (once per parameters and sizes) and run."""
        bound = self._bind(args, kwargs, partial=False)
        sig = self.signature(self._compile_args(bound, None))
        tensors = [n for n, _ in sig.tensors]
        compile_args = self._compile_args(bound, tensors)
        arrays = [bound[n] for n in tensors]
        consts = _sizes_from(sig, arrays)
        return self.kernel(compile_args, consts)(*arrays)

    def compile(self, args, kwargs):
        """The kernel for these parameters and T.const sizes (given by name)."""
        own = {k: v for k, v in kwargs.items() if k in self.params}
        sizes = {k: v for k, v in kwargs.items() if k not in self.params}
        bound = self._bind(args, own, partial=True)
        sig = self.signature(self._compile_args(bound, None))
        tensors = [n for n, _ in sig.tensors]
        unknown = [k for k in sizes if k not in sig.consts]
        if unknown:
            raise TileLangError(Diagnostic(
                EAGER_FORM, f"`{self.jit.__name__}.compile` got `{unknown[0]}`, which is "
                            "neither a parameter nor a T.const size",
                notes=[f"parameters: {', '.join(self.params)}; sizes: "
                       f"{', '.join(sig.consts) or '(none)'}"]))
        arrays = [bound[n] for n in tensors if n in bound]
        if len(arrays) == len(tensors):
            sizes = {**_sizes_from(sig, arrays), **sizes}
        return self.kernel(self._compile_args(bound, tensors), sizes)

    # -- the two builds --------------------------------------------------------------
    def signature(self, compile_args: dict):
        """The kernel's tensors, outputs and sizes for these parameters (T.const sizes
        as symbols; only the declarations are built)."""
        from .decorators import _freeze
        key = _freeze(sorted(compile_args.items()))
        sig = self._signatures.get(key)
        if sig is None:
            from .frontend.eager import build_eager
            _, sig = build_eager(self.fn, {**compile_args, **self.jit.defines}, None, True)
            self._signatures[key] = sig
        return sig

    def kernel(self, compile_args: dict, sizes: dict):
        """The compiled kernel for these parameters and sizes."""
        from .decorators import _freeze
        key = _freeze((self.jit.target_key(), sorted(compile_args.items()),
                       sorted(sizes.items())))
        k = self._kernels.get(key)
        if k is None:
            sig = self.signature({k2: v for k2, v in compile_args.items()})
            missing = [c for c in sig.consts if c not in sizes]
            if missing:
                raise TileLangError(Diagnostic(
                    EAGER_FORM, f"the size `{missing[0]}` of `{self.jit.__name__}` is not "
                                "known", help=f"give it: `{self.jit.__name__}.compile("
                                              f"{missing[0]}=...)`, or call the function "
                                              "with its tensor arguments"))
            constants = {**compile_args, **self.jit.defines}

            def parse(options):
                from .frontend.eager import build_eager
                module, _ = build_eager(self.fn, constants, dict(sizes), False,
                                        options.strict_dtypes)
                return module
            k = self.jit.make_kernel(pyfunc=self.fn, parser=parse, out_idx=sig.out_idx)
            self._kernels[key] = k
        return k

    # -- arguments ---------------------------------------------------------------------
    def _bind(self, args, kwargs, partial: bool) -> dict:
        sig = inspect.signature(self.fn)
        try:
            bound = sig.bind_partial(*args, **kwargs) if partial else \
                sig.bind(*args, **kwargs)
        except TypeError as err:
            raise TileLangError(Diagnostic(
                EAGER_FORM, f"`{self.jit.__name__}`: {err}",
                notes=[f"signature: {self.jit.__name__}{sig}"])) from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def _compile_args(self, bound: dict, tensors) -> dict:
        """The compile-time parameters: everything bound that is not a tensor (with
        `tensors` None, everything that is not an array)."""
        if tensors is None:
            return {k: v for k, v in bound.items() if not hasattr(v, "shape")}
        return {k: v for k, v in bound.items() if k not in tensors}


def _sizes_from(sig, arrays) -> dict:
    """T.const sizes read from the tensors' shapes (a size given twice must agree)."""
    from .ir.nodes import Var
    sizes, where = {}, {}
    for (name, shape), arr in zip(sig.tensors, arrays):
        if shape is None:
            continue
        got = getattr(arr, "shape", None)
        if got is None or len(got) != len(shape):
            raise TileLangError(Diagnostic(
                EAGER_FORM, f"argument `{name}` of `{sig.name}` must be a {len(shape)}-d "
                            f"array, got {type(arr).__name__} of shape {got}"))
        for d, (entry, n) in enumerate(zip(shape, got)):
            if isinstance(entry, Var) and entry.name in sig.consts:
                if entry.name in sizes and sizes[entry.name] != int(n):
                    raise TileLangError(Diagnostic(
                        EAGER_FORM, f"size `{entry.name}` is {sizes[entry.name]} in "
                                    f"{where[entry.name]} but {int(n)} in dimension {d} of "
                                    f"`{name}`"))
                sizes[entry.name] = int(n)
                where[entry.name] = f"dimension {d} of `{name}`"
    return sizes


__all__ = ["EagerJIT", "is_eager"]
