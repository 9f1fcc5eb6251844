"""`tilec`: the command line of the tile-language compiler.

Every command goes through the driver (`tilelang.driver`), and what depends on the target
through its Target object: this file names no target. Exit codes: 0 ok, 1 user error (a
diagnostic was printed), 2 usage error (click), 3 internal error (a compiler bug: says so,
and where the details were written). A user never sees a Python traceback for their own
mistake.
"""
from __future__ import annotations

import functools
import json
import os
import sys
import tempfile
import time
import traceback

import click

from .version import __version__
from .diagnostics import Diagnostic, InternalError, TileLangError, render_json

EXIT_USER, EXIT_INTERNAL = 1, 3


# ----------------------------------------------------------------------------- errors

def _report_user_error(err: TileLangError, error_format: str) -> None:
    if error_format == "json":
        for diag in err.diagnostics:
            click.echo(render_json(diag), err=True)
    else:
        click.echo(err.render(), err=True)


def _report_internal(message: str, reproducer: str | None, error_format: str) -> None:
    if error_format == "json":
        click.echo(json.dumps({"level": "internal", "message": message,
                               "reproducer": reproducer}), err=True)
    else:
        click.echo(message, err=True)


def _write_crash_report(exc: BaseException) -> str | None:
    """The traceback of an unexpected exception, kept in a file for the bug report."""
    try:
        fd, path = tempfile.mkstemp(prefix="tilec-crash-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(f"tilec {__version__}\ncommand: {' '.join(sys.argv)}\n\n")
            f.write("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
        return path
    except OSError:
        return None


def _launch_diagnostic(exc: Exception) -> Diagnostic | None:
    """The runtime reports bad arguments (`tilec run --arg`) as TypeError / ValueError
    carrying a TL06xx code, and the tcsim simulator what it finds in a program (races,
    deadlocks, a program that does not fit the machine) as RuntimeError / ValueError
    carrying a TL08xx code: user errors, not crashes."""
    code = getattr(exc, "code", None)
    if not isinstance(code, str):
        return None
    if isinstance(exc, (TypeError, ValueError)) and code.startswith("TL06"):
        return Diagnostic(code, str(exc))
    if isinstance(exc, (RuntimeError, ValueError)) and code.startswith("TL08"):
        return Diagnostic(code, str(exc))
    return None


def _exit_unexpected(exc: Exception, error_format: str) -> None:
    """A runtime argument error is the user's; any other exception is a bug in tilec:
    say so, keep the traceback in a file for the report, exit 3."""
    launch = _launch_diagnostic(exc)
    if launch is not None:
        _report_user_error(TileLangError(launch), error_format)
        sys.exit(EXIT_USER)
    report = _write_crash_report(exc)
    msg = (f"internal compiler error: {type(exc).__name__}: {exc}\n"
           "  this is a bug in tilec, not in your kernel")
    if report:
        msg += f"\n  the traceback was written to {report}"
    _report_internal(msg, report, error_format)
    sys.exit(EXIT_INTERNAL)


def guarded(fn):
    """Turn the compiler's exceptions into diagnostics and exit codes."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        error_format = kwargs.get("error_format", "human")
        try:
            return fn(*args, **kwargs)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except TileLangError as err:
            _report_user_error(err, error_format)
            sys.exit(EXIT_USER)
        except InternalError as err:
            _report_internal(str(err), err.reproducer, error_format)
            sys.exit(EXIT_INTERNAL)
        except KeyboardInterrupt:
            raise click.Abort() from None
        except BrokenPipeError:
            # the reader went away (`tilec ir k.tl | head`): nothing failed on our side;
            # point stdout at /dev/null so the interpreter's final flush stays quiet
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(0)
        except Exception as exc:  # noqa: BLE001 - anything else is a compiler bug
            _exit_unexpected(exc, error_format)
    return wrapper


# ----------------------------------------------------------------------------- shared options

def _defines_callback(ctx, param, values):
    from .driver.options import parse_define
    out = []
    for value in values:
        try:
            out.append(parse_define(value))
        except ValueError as e:
            raise click.BadParameter(str(e), ctx=ctx, param=param) from None
    return tuple(out)


def _split_commas(ctx, param, values):
    return tuple(v.strip() for value in values for v in value.split(",") if v.strip())


class EmitKind(click.ParamType):
    """`--emit KIND`: any kind some registered target offers (whether the chosen target
    offers it is the driver's check, TL0713)."""
    name = "kind"

    def _kinds(self) -> list[str]:
        from .driver import emit_kinds
        return emit_kinds()

    def get_metavar(self, param, *args, **kwargs) -> str:
        return "[" + "|".join(self._kinds()) + "]"

    def convert(self, value, param, ctx):
        if value not in self._kinds():
            self.fail(f"{value!r} is not one of {', '.join(map(repr, self._kinds()))}.",
                      param, ctx)
        return value


def _target_help() -> str:
    from .driver import targets_help
    return targets_help()


def source_options(fn):
    """Options every command that compiles a file takes."""
    for decorator in reversed([
        click.argument("file"),
        click.option("-k", "--kernel", default=None, help="Only this kernel of the file."),
        click.option("-D", "defines", multiple=True, metavar="NAME=VALUE",
                     callback=_defines_callback, help="Override a module-level constant."),
        click.option("--target", default=None, help=_target_help()),
        click.option("--error-format", type=click.Choice(["human", "json"]), default="human",
                     show_default=True, help="How diagnostics are printed."),
        strict_dtypes_option,
    ]):
        fn = decorator(fn)
    return fn


def _set_strict(ctx, _param, value):
    ctx.meta["strict_dtypes"] = bool(value)


strict_dtypes_option = click.option(
    "--strict-dtypes", is_flag=True, expose_value=False, callback=_set_strict,
    help="Mixed dtypes are errors (write T.cast) instead of following TVM's promotion.")


no_memory_reuse_option = click.option(
    "--no-memory-reuse", is_flag=True,
    help="Give every block-local buffer memory of its own (no memory_reuse pass; also "
         "TILELANG_DISABLE_MEMORY_REUSE=1).")


raster_option = click.option(
    "--raster", type=click.IntRange(0, None), default=0, show_default=True,
    help="tcsim: launch blocks in panels of this many grid rows (L2 reuse); 0: row-major.")


def _reuse(no_memory_reuse: bool):
    """The flag turns reuse off; without it the environment decides (None)."""
    return False if no_memory_reuse else None


def _read(file: str) -> tuple[str, str]:
    """(text, name used in diagnostics); `-` reads standard input."""
    from .driver import read_source
    if file == "-":
        return sys.stdin.read(), "<stdin>"
    return read_source(file), file


def _echo_text(text: str) -> None:
    click.echo(text, nl=not text.endswith("\n"))


def _options(**kwargs):
    from .driver import make_options
    _refuse_gpu_target(kwargs.get("target"))
    strict = click.get_current_context().meta.get("strict_dtypes", False)
    return make_options(strict_dtypes=strict, **kwargs)


def _refuse_gpu_target(spec):
    """A TileLang program's `target="cuda"` compiles for the default target so that it runs
    unchanged; on the command line the user chooses the output, so a GPU name is an error
    rather than a silent CPU artifact."""
    from .targets import names_default
    if spec and spec != "auto" and names_default(spec):
        from .targets.base import bad_spec
        raise bad_spec(spec, f"tilec has no `{spec}` backend; in Python, a TileLang program's "
                             f"`target=\"{spec}\"` compiles for the default target (cpu, or "
                             "$TILELANG_TARGET) so that it runs unchanged")


# ----------------------------------------------------------------------------- commands

@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tilec")
def main():
    """tilec: compile, inspect and run tile-language kernels."""


@main.command()
@source_options
@click.option("-o", "--output", default=None, help="Output file (text kinds: stdout if absent).")
@click.option("--emit", type=EmitKind(), default=None,
              help="What to write; default: the target's artifact (cpu: so, which also "
                   "writes OUT's `.h` header; tcsim: tcsim). tcasm: tcsim assembly.")
@click.option("-O", "opt", type=click.IntRange(0, 3), default=3, show_default=True,
              help="Optimisation level, -O0 .. -O3.")
@click.option("--cpu", default=None,
              help="cpu: LLVM CPU name (AOT cross-target; `--target cpu:NAME`); default: host.")
@click.option("--features", default=None,
              help="cpu: LLVM feature string, e.g. +avx2,+fma (`--target cpu+avx2,+fma`).")
@click.option("--dump-after", multiple=True, callback=_split_commas, metavar="PASS|all",
              help="Print the IR after this pass (or all passes).")
@click.option("--dump-dir", default=None, type=click.Path(file_okay=False),
              help="Write the --dump-after IR into this directory instead.")
@click.option("--verify-each", is_flag=True, help="Run the IR verifier after every pass.")
@click.option("--stats", is_flag=True,
              help="Print the time of every pass and stage, and the memory plan.")
@no_memory_reuse_option
@raster_option
@guarded
def compile(file, kernel, defines, target, error_format, output, emit, opt, cpu, features,
            dump_after, dump_dir, verify_each, stats, no_memory_reuse, raster):
    """Compile FILE.tl to IR, LLVM IR, assembly, an object or a shared library (cpu), or
    to tcsim assembly or a tcsim artifact (tcsim[:CONFIG])."""
    from .driver import emit as emitter, parse
    options = _options(defines=defines, target=target, opt=opt, kernel=kernel, cpu=cpu,
                       features=features, dump_after=dump_after, dump_dir=dump_dir,
                       verify_each=verify_each, memory_reuse=_reuse(no_memory_reuse),
                       raster=raster)
    emit = emit or emitter.default_kind(options)
    text_kind = emitter.is_text(options, emit)
    text, name = _read(file)
    start = time.perf_counter()
    module = parse(text, name, options)
    timings = [("parse", time.perf_counter() - start)]
    if output is None and text_kind:
        _echo_text(emitter.text_output(module, options, emit, timings))
    else:
        output = output or emitter.default_output(name, options, emit)
        try:
            emitter.write_output(module, options, emit, output, timings)
        except OSError as e:
            from .diagnostics.codes_driver import CANNOT_WRITE
            raise TileLangError(Diagnostic(
                CANNOT_WRITE, f"cannot write `{output}`: {e.strerror or e}")) from None
    if stats:
        from .driver.stages import memory_report
        click.echo(emitter.format_timings(timings), err=True)
        click.echo(memory_report(module, options).text(), err=True)


@main.command()
@source_options
@click.option("--after", default=None, metavar="PASS",
              help="Print the IR after this pass (default: straight after parsing).")
@no_memory_reuse_option
@guarded
def ir(file, kernel, defines, target, error_format, after, no_memory_reuse):
    """Print the IR of FILE.tl as `.tl` text (it parses back to the same IR)."""
    from .driver import ir_text, parse
    from .driver.stages import PARSE_STAGE
    options = _options(defines=defines, target=target, kernel=kernel,
                       memory_reuse=_reuse(no_memory_reuse))
    text, name = _read(file)
    _echo_text(ir_text(parse(text, name, options), options, after=after or PARSE_STAGE))


@main.command()
@source_options
@click.option("--shape", "shapes", multiple=True, metavar="M=..,N=..",
              help="The symbolic sizes (T.dynamic) of the kernel.")
@click.option("--arg", "scalar_args", multiple=True, metavar="NAME=VALUE",
              help="Values of scalar parameters (default 1).")
@click.option("--index", "index_specs", multiple=True, metavar="NAME=KIND[:ARG..]",
              help="Integer (index) tensors: paged:PAGE, uniform:LO:HI, perm, const:V, "
                   "mla_schedule:LENS, mla_splits:LENS:META (default: values 0..7).")
@click.option("--repeat", type=click.IntRange(1, None), default=10, show_default=True,
              help="Timed calls after one warm-up call (cpu).")
@click.option("--threads", type=click.IntRange(1, None), default=None,
              help="Worker threads (cpu; default: TILELANG_NUM_THREADS, else all cores).")
@click.option("-O", "opt", type=click.IntRange(0, 3), default=3, show_default=True)
@click.option("--timing-only", is_flag=True,
              help="tcsim: simulate cycles only, no numerics (fast on large shapes).")
@click.option("--trace", default=None, metavar="OUT.json",
              help="tcsim: write a Chrome trace (chrome://tracing, Perfetto) of the run.")
@no_memory_reuse_option
@raster_option
@guarded
def run(file, kernel, defines, target, error_format, shapes, scalar_args, index_specs, repeat,
        threads, opt, timing_only, trace, no_memory_reuse, raster):
    """Run a kernel of FILE.tl on random inputs; print its time, GB/s and GFLOP/s (cpu),
    or simulate one launch and print the machine's report (tcsim[:CONFIG])."""
    from .driver import RunSettings, bench, parse, run_kernel
    from .driver.stages import only_kernel
    options = _options(defines=defines, target=target, opt=opt, kernel=kernel,
                       memory_reuse=_reuse(no_memory_reuse), raster=raster)
    text, name = _read(file)
    func = only_kernel(parse(text, name, options))
    sizes = bench.parse_assignments(shapes, "size")
    scalars = bench.parse_assignments(scalar_args, "argument")
    from .driver.index_inputs import parse_specs
    settings = RunSettings(repeat=repeat, threads=threads, timing_only=timing_only,
                           trace=trace)
    click.echo("\n".join(run_kernel(func, options, sizes, scalars, settings, label=name,
                                    index=parse_specs(index_specs))))


@main.command()
@click.option("--target", default=None, help=_target_help())
@guarded
def passes(target):
    """List the passes of the target's pipeline, in order."""
    from .driver import pipeline_of
    items = pipeline_of(target)
    width = max((len(n) for n, _ in items), default=0)
    for n, description in items:
        click.echo(f"{n.ljust(width)}  {description}")


@main.group()
def cache():
    """Inspect or clear the compile cache (TILELANG_CACHE_DIR)."""


@cache.command("info")
@guarded
def cache_info():
    """Where the cache is, how many artifacts it holds and their size."""
    from .driver.cachecmd import info
    for key, value in info().items():
        click.echo(f"{key}: {value}")


@cache.command("clear")
@guarded
def cache_clear():
    """Remove every cached artifact."""
    from .driver.cachecmd import clear
    removed = clear()
    click.echo(f"removed {removed} cached artifact{'s' if removed != 1 else ''}")


@main.command()
@click.argument("code", required=False)
@click.option("--list", "list_all", is_flag=True, help="List every code with its title.")
@guarded
def explain(code, list_all):
    """Explain a diagnostic code (for example `tilec explain TL0203`)."""
    from .diagnostics.codes import all_codes, explain as explain_code
    from .diagnostics.codes_driver import UNKNOWN_CODE
    if list_all or code is None:
        if code is None and not list_all:
            raise click.UsageError("give a CODE (e.g. TL0203), or --list")
        for name, (title, _) in sorted(all_codes().items()):
            click.echo(f"{name}  {title}")
        return
    text = explain_code(code)
    if text is None:
        raise TileLangError(Diagnostic(UNKNOWN_CODE, f"unknown diagnostic code `{code}`",
                                       help="codes look like TL0203; see the brackets in an "
                                            "error message"))
    click.echo(text, nl=False)


# commands that live in modules of their own, built with this module's options
from .profiler.command import command as _profile_command  # noqa: E402

from .launchcmd import launch as _launch  # noqa: E402

main.add_command(_profile_command(sys.modules[__name__]))
main.add_command(_launch)

# `tilec simulate-ep` (the EP cluster model) lives in a module of its own
from .simulate_ep import command as _simulate_ep  # noqa: E402
main.add_command(_simulate_ep(guarded))


if __name__ == "__main__":
    main()
