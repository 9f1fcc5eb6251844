"""`tilec launch -n N script.py [ARGS...]`: run a Python program as N ranks on this host
(the `shm` transport; `tilelang.ep.init()` in the program returns its group). The exit
status is 0 when every rank succeeded, else the first failed rank's."""
from __future__ import annotations

import os

import click


@click.command(context_settings={"ignore_unknown_options": True,
                                 "help_option_names": ["-h", "--help"]})
@click.option("-n", "--num-ranks", type=click.IntRange(1, 64), required=True,
              help="How many ranks (processes) to start.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds a wait may take before it fails (TILELANG_EP_TIMEOUT; "
                   "default 60).")
@click.argument("script", type=click.Path(exists=True, dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def launch(num_ranks, timeout, script, args):
    """Run SCRIPT as NUM_RANKS ranks sharing memory (multi-rank kernels, tilelang.ep)."""
    from .runtime.ranks.launcher import launch as run
    env = {} if timeout is None else {"TILELANG_EP_TIMEOUT": str(timeout)}
    result = run([os.fspath(script), *args], num_ranks, env=env)
    for rank, rc in enumerate(result.returncodes):
        if rc:
            how = f"was killed by signal {-rc}" if rc < 0 else f"exited with status {rc}"
            click.echo(f"tilec launch: rank {rank} {how}", err=True)
    raise SystemExit(result.returncode)


__all__ = ["launch"]
