"""`tilec simulate-ep`: the cluster model of the EP collectives (`tilelang.ep.cluster`)
from the command line.

Every setting is a flag and a key of the `--config` YAML file (`ep/cluster/config.py`);
a flag given on the command line wins over the file. `tilelang/cli.py` registers it with
`main.add_command(command(guarded))`, handing over its error wrapper (this module does
not import the CLI module: `python -m tilelang.cli` runs that as `__main__`). It lives
outside `tilelang.ep` and loads the model only when the command runs, so that `tilec`
starts without numpy; the defaults in the help are `Settings`' (a test holds them equal).
"""
from __future__ import annotations

import click

# flag name -> (Settings field, click type, help, the default `Settings` has)
_FLAGS = [
    ("--ranks", "ranks", click.IntRange(1), "Ranks (GPUs).", 16),
    ("--nodes", "nodes", click.IntRange(1), "Nodes [ranks / 8].", None),
    ("--experts", "experts", click.IntRange(1), "Logical experts.", 256),
    ("--redundant", "redundant", click.IntRange(0), "Redundant experts EPLB places "
     "[one per rank].", None),
    ("--topk", "topk", click.IntRange(1), "Experts per token.", 8),
    ("--tokens", "tokens", click.IntRange(1), "Tokens per rank.", 4096),
    ("--hidden", "hidden", click.IntRange(1), "Hidden size.", 7168),
    ("--groups", "groups", click.IntRange(1), "Expert groups (group-limited routing).", 8),
    ("--topk-groups", "topk_groups", click.IntRange(1), "Groups a token may use.", 4),
    ("--routing", "routing", click.Choice(["flat", "hierarchical", "both"]),
     "Flat (rank to rank) or hierarchical (DeepEP: RDMA, then NVLink) or both.", "both"),
    ("--zipf", "zipf", click.FloatRange(0), "Skew of expert popularity (Zipf s).", 1.0),
    ("--drift", "drift", click.FloatRange(0), "Per-step drift of the log popularity.", 0.05),
    ("--seed", "seed", click.IntRange(0), "Seed of the generated trace.", 0),
    ("--trace", "trace", click.Path(dir_okay=False), "A routing trace (.npz) to use.", None),
    ("--nvlink-bw", "nvlink_bw", click.FloatRange(0, min_open=True), "GB/s per rank.",
     160.0),
    ("--nvlink-latency", "nvlink_latency", click.FloatRange(0), "us.", 1.0),
    ("--rdma-bw", "rdma_bw", click.FloatRange(0, min_open=True), "GB/s per rank (NIC).",
     50.0),
    ("--rdma-latency", "rdma_latency", click.FloatRange(0), "us.", 3.0),
    ("--local-bw", "local_bw", click.FloatRange(0, min_open=True),
     "GB/s of copies within a rank (with --self-copies local).", 1675.0),
    ("--self-copies", "self_copies", click.Choice(["port", "local"]),
     "A rank's copies to itself share its NVLink port, or use a local engine.", "port"),
    ("--chunk", "chunk", click.IntRange(1), "Tokens a message.", 128),
    ("--dispatch-dtype", "dispatch_dtype", click.Choice(["fp8", "bf16"]), "Dispatch dtype.",
     "fp8"),
    ("--intermediate", "intermediate", click.IntRange(1), "Expert FFN size (projection).",
     2048),
    ("--tcsim-config", "tcsim_config", click.Choice(["h100_like", "h200_like"]),
     "Simulated accelerator for compute times (projection).", "h100_like"),
    ("--compute-tflops", "compute_tflops", click.FloatRange(0, min_open=True),
     "Time GEMMs at this rate instead of simulating them (projection).", None),
    ("--comm-sms", "comm_sms", click.IntRange(0), "SMs the collectives take (projection).",
     24),
]


def _options(fn):
    for flag, field, kind, text, default in reversed(_FLAGS):
        shown = f" [{default}]" if default is not None else ""
        fn = click.option(flag, field, type=kind, default=None, help=text + shown)(fn)
    return fn


def command(guarded) -> click.Command:
    """The `simulate-ep` click command, its body wrapped in the CLI's `guarded`."""
    @click.command("simulate-ep")
    @click.option("--config", "config_file", default=None, type=click.Path(dir_okay=False),
                  help="YAML configuration (training / cluster / workload / projection).")
    @_options
    @click.option("--eplb/--no-eplb", default=None, help="Also place experts with EPLB [on].")
    @click.option("--shared-memory", is_flag=True, default=None,
                  help="Ranks copy through shared memory on one host (a CPU): a copy passes "
                       "the sending rank's pool only, --nvlink-bw being its copy bandwidth.")
    @click.option("--project", is_flag=True, default=None,
                  help="Project a training step (compute from tcsim, comm from the model).")
    @click.option("--svg", default=None, type=click.Path(dir_okay=False),
                  help="Write the projection as an SVG picture.")
    @click.option("--save-trace", default=None, type=click.Path(dir_okay=False),
                  help="Save the routing trace used (.npz).")
    @click.option("--links", is_flag=True, help="Also print the bytes and load of every link.")
    @click.option("--error-format", type=click.Choice(["human", "json"]), default="human")
    @guarded
    def simulate_ep(config_file, svg, save_trace, links, error_format, **flags):
        """Model MoE dispatch / combine on a cluster: per-link bytes and utilisation, times,
        the bottleneck link, with and without EPLB placement; --project adds a training
        step (communication share, iteration efficiency) and --svg its picture."""
        from .ep.errors_eplb import EPError
        try:
            _simulate(config_file, svg, save_trace, links, flags)
        except EPError as e:
            from .diagnostics import Diagnostic, TileLangError
            raise TileLangError(Diagnostic(e.code, str(e), primary=e.label, help=e.help)) \
                from None
    return simulate_ep


def _simulate(config_file, svg, save_trace, links, flags) -> None:
    from .ep.cluster import report
    from .ep.cluster.config import load_config
    from .ep.cluster.scenario import run
    from .ep.cluster.settings import Settings
    from .ep.trace import RoutingTrace
    settings = Settings()
    if config_file:
        settings.update(load_config(config_file))
    settings.update({k: v for k, v in flags.items() if v is not None})
    spec, work = settings.spec(), settings.workload()
    trace = RoutingTrace.load(settings.trace) if settings.trace else work.trace(spec.ranks)
    if save_trace:
        trace.save(save_trace)
    click.echo(_header(settings, spec, trace))
    scenarios = run(spec, work, trace, settings.cases(), bf16_dispatch=settings.project)
    click.echo("\n" + report.collectives_table(scenarios))
    if links:
        click.echo("\n" + report.links_table(scenarios))
    for sc in scenarios:
        if sc.placement == "eplb":
            click.echo(f"\nEPLB placed two replicas of one expert on one rank "
                       f"{sc.extra['colocated']} time(s).")
            break
    if settings.project:
        _project(settings, scenarios, svg)


def _project(settings, scenarios, svg) -> None:
    from .ep.cluster import report
    from .ep.cluster.projection import Model, project
    model = Model(hidden=settings.hidden, intermediate=settings.intermediate,
                  comm_sms=settings.comm_sms, config=settings.tcsim_config,
                  tflops=settings.compute_tflops)
    rows = project(scenarios, settings.tokens, model)
    source = (f"GEMMs at {settings.compute_tflops} TFLOPS" if settings.compute_tflops
              else f"tcsim:{settings.tcsim_config}")
    click.echo(f"\ntraining step of one MoE layer, forward + backward (compute: {source})")
    click.echo(report.projection_table(rows))
    if svg:
        from .ep.cluster.svg import step_svg
        title = (f"{settings.ranks} ranks, {settings.experts} experts, top-{settings.topk}, "
                 f"{settings.tokens} tokens/rank, hidden {settings.hidden}")
        try:
            with open(svg, "w", encoding="utf-8") as f:
                f.write(step_svg(rows, title))
        except OSError as e:
            from .ep.errors_eplb import EPError
            raise EPError(f"cannot write `{svg}`: {e.strerror or e}") from None
        click.echo(f"picture: {svg}")


def _header(settings, spec, trace) -> str:
    src = (f"loaded from {settings.trace}" if settings.trace else
           f"generated: zipf {settings.zipf}, drift {settings.drift}, seed {settings.seed}")
    red = settings.redundant_experts()
    return (f"{spec.ranks} ranks ({spec.nodes} node{'s' * (spec.nodes > 1)} x "
            f"{spec.local_ranks}), {trace.num_experts} experts"
            f"{f' + {red} redundant (EPLB)' if red else ''}, top-{trace.topk}, "
            f"{trace.tokens // spec.ranks} tokens/rank, hidden {settings.hidden}\n"
            f"links per rank: NVLink {settings.nvlink_bw:g} GB/s {settings.nvlink_latency:g} us, "
            f"RDMA {settings.rdma_bw:g} GB/s {settings.rdma_latency:g} us; copies to itself "
            f"through {'its NVLink port' if spec.self_copies == 'port' else 'a local engine'}\n"
            f"trace {src}; {trace.num_groups} groups, top-{trace.topk_groups} groups a token")
