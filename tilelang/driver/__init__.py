"""The driver: ties frontend -> passes -> codegen -> cache -> runtime together.

    compile_source(text, filename, ...) -> Library      (`.tl` text)
    compile_file(path, ...) -> Library                  (`.tl` file)
    compile_pyfunc(fn, ...) -> Library                  (a `T.Tensor`-annotated function)
    run_kernel(func, options, sizes, scalars, settings) -> lines   (`tilec run`)
    pipeline_of(spec) -> [(pass name, description)]                (`tilec passes`)

The target (`options.target`, a `tilelang.targets` Target) decides the pipeline, the
code, the emit kinds and how kernels load and run; nothing here tests its name.
Importing this package loads neither lark nor llvmlite; each stage imports its layer when
it first runs, so a warm start served from the cache stays fast.
"""
from __future__ import annotations

from ..diagnostics import Diagnostic, TileLangError
from ..diagnostics.codes_driver import FILE_NOT_FOUND
from .build import build_module, build_source
from .emit import ir_text, text_output, write_output
from .log import STATS
from .options import Options, make_options
from . import stages
from ..targets.base import RunSettings

__all__ = ["compile_source", "compile_file", "compile_pyfunc", "read_source", "parse",
           "make_options", "Options", "ir_text", "text_output", "write_output", "STATS",
           "build_module", "run_kernel", "pipeline_of", "RunSettings", "emit_kinds",
           "targets_help"]


def compile_source(text: str, filename: str = "<string>", *, defines=None, target=None,
                   opt=3, kernel=None, cpu=None, features=None, dump_after=(),
                   dump_dir=None, verify_each=False, out_idx=None, memory_reuse=None):
    """Compile `.tl` source text and load it: a runtime `Library` of its kernels
    (`out_idx` becomes their default, as in `Kernel(..., out_idx=)`). `memory_reuse`:
    None follows TILELANG_DISABLE_MEMORY_REUSE."""
    options = make_options(defines=defines, target=target, opt=opt, kernel=kernel, cpu=cpu,
                           features=features, dump_after=dump_after, dump_dir=dump_dir,
                           verify_each=verify_each, memory_reuse=memory_reuse)
    return build_source(text, filename, options, out_idx=out_idx)


def compile_file(path, **kwargs):
    """Compile a `.tl` file and load it (keywords as `compile_source`)."""
    path = str(path)
    return compile_source(read_source(path), path, **kwargs)


def compile_pyfunc(pyfunc, *, out_idx=None, **kwargs):
    """Compile a `T.Tensor`-annotated Python function (keywords as `compile_source`)."""
    options = make_options(**kwargs)
    return build_module(stages.parse_pyfunc(pyfunc, options), options, out_idx=out_idx)


def parse(text: str, filename: str, options: Options):
    """`.tl` text to the IR module the options select (for `tilec ir` and the emitters)."""
    return stages.parse_text(text, filename, options)


def run_kernel(func, options: Options, sizes: dict, scalars: dict, settings,
               label: str | None = None, index: dict | None = None) -> list[str]:
    """`tilec run`: compile the kernel `func` (IR) for `options.target` and let the
    target run it on random inputs for `sizes` / `scalars` (`index`: how to make the
    integer tensors, `tilec run --index`); the lines to print."""
    from ..ir.nodes import Module
    from .bench import make_arguments
    target = options.target
    kernel = build_module(Module((func,)), options, label=label)[func.name]

    def make_args(materialize: bool = True, needs_data=frozenset()) -> list:
        return make_arguments(func, sizes, scalars, materialize=materialize,
                              needs_data=needs_data, index_input=target.make_index_input,
                              index=index)
    return target.run(kernel, func, sizes, make_args, settings)


def pipeline_of(spec) -> list[tuple[str, str]]:
    """(name, one-line description) of each pass of the target's pipeline, in order."""
    from .. import targets
    return [(p.name, p.description) for p in targets.get(spec).pipeline()]


def emit_kinds() -> list[str]:
    """Every `--emit` kind some target offers."""
    from .. import targets
    return targets.emit_kinds()


def targets_help() -> str:
    """How each registered target's spec is written, and the default."""
    from .. import targets
    return "; ".join(cls.syntax for cls in targets.classes()) + f". Default: {targets.DEFAULT}."


def read_source(path: str) -> str:
    """The text of a source file; a missing or unreadable file is a user error."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        reason = "no such file"
    except IsADirectoryError:
        reason = "it is a directory"
    except UnicodeDecodeError:
        reason = "it is not UTF-8 text"
    except OSError as e:
        reason = e.strerror or str(e)
    raise TileLangError(Diagnostic(FILE_NOT_FOUND, f"cannot read `{path}`: {reason}"))
