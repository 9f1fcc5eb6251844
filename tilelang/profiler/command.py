"""`tilec profile FILE.tl --shape M=..,N=..`: the profile of one launch, as text, JSON
(`--json`) or a self-contained HTML page (`--html report.html`).

`command(cli)` builds the click command from the CLI module's shared options and error
wrapper, passed in, so that this module never imports the CLI that registers it.
"""
from __future__ import annotations

import click

from ..diagnostics import Diagnostic, TileLangError

_OPTIONS = [
    click.option("--shape", "shapes", multiple=True, metavar="M=..,N=..",
                 help="The symbolic sizes (T.dynamic) of the kernel."),
    click.option("--arg", "scalar_args", multiple=True, metavar="NAME=VALUE",
                 help="Values of scalar parameters (default 1)."),
    click.option("--index", "index_specs", multiple=True, metavar="NAME=KIND[:ARG..]",
                 help="Integer (index) tensors, as `tilec run --index` makes them: "
                      "paged:PAGE, uniform:LO:HI, perm, const:V, mla_schedule:LENS, "
                      "mla_splits:LENS:META."),
    click.option("--threads", type=click.IntRange(1, None), default=None,
                 help="cpu: worker threads (default: TILELANG_NUM_THREADS, else all cores)."),
    click.option("--rep", type=click.FloatRange(0, None), default=100.0, show_default=True,
                 help="cpu: milliseconds of timed calls."),
    click.option("--no-timers", is_flag=True,
                 help="cpu: skip the timers build (no phase breakdown)."),
    click.option("--json", "as_json", is_flag=True, help="Print the profile as JSON."),
    click.option("--html", "html_path", default=None, metavar="REPORT.html",
                 help="Also write the profile as an HTML page (roofline chart, time bars)."),
]


def command(cli) -> click.Command:
    """The `profile` command, with `cli`'s source options, raster option and guard."""
    def profile_command(**kwargs):
        return profile(cli, **kwargs)
    profile_command.__doc__ = profile.__doc__
    fn = cli.raster_option(cli.guarded(profile_command))
    for option in reversed(_OPTIONS):
        fn = option(fn)
    return click.command("profile")(cli.source_options(fn))


def profile(cli, file, kernel, defines, target, error_format, shapes, scalar_args,
            index_specs, threads, rep, no_timers, as_json, html_path, raster):
    """Profile a kernel of FILE.tl on generated inputs: time, FLOPs, bytes, the roofline
    and the fraction of it reached, the bound, and advice citing its evidence."""
    from ..decorators import KernelFunction
    from ..driver import bench
    from ..driver.stages import only_kernel
    from .analyze import profile as run_profile
    from .supply import MissingSizes
    options = cli._options(defines=defines, target=target, kernel=kernel, raster=raster)
    text, name = cli._read(file)
    kfn = KernelFunction(text=text, filename=name, defines=dict(options.defines),
                         kernel=kernel, target=options.target, raster=raster)
    func = only_kernel(kfn.module())
    sizes = bench.parse_assignments(shapes, "size")
    scalars = bench.parse_assignments(scalar_args, "argument")
    bench.make_arguments(func, sizes, scalars, materialize=False)   # checks sizes, names
    try:
        report = run_profile(kfn, sizes=sizes, scalars=scalars, num_threads=threads,
                             rep=rep, timers=not no_timers, index=list(index_specs))
    except MissingSizes as e:
        from ..diagnostics.codes_driver import MISSING_SIZE
        raise TileLangError(Diagnostic(MISSING_SIZE, str(e))) from None
    click.echo(report.to_json() if as_json else report.text())
    if html_path:
        try:
            with open(html_path, "w", encoding="utf-8") as f:
                f.write(report.html())
        except OSError as e:
            from ..diagnostics.codes_driver import CANNOT_WRITE
            raise TileLangError(Diagnostic(
                CANNOT_WRITE, f"cannot write `{html_path}`: {e.strerror or e}")) from None
        if not as_json:
            click.echo(f"html        {html_path}")
