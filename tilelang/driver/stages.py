"""The compiler's stages as the driver calls them: parse, pick a kernel, lower (the
target's pipeline), codegen (the target's).

Each stage imports its layer on first use, so that `import tilelang.driver` (and a warm
start served from the cache) loads neither lark nor llvmlite.
"""
from __future__ import annotations

from ..diagnostics import Diagnostic, TileLangError
from ..diagnostics.codes_driver import (AMBIGUOUS_KERNEL, NO_KERNEL, UNKNOWN_KERNEL,
                                        UNKNOWN_PASS)

PARSE_STAGE = "parse"      # the IR straight from the frontend, before any pass
MEMORY_REUSE = "memory_reuse"


def parse_text(text: str, filename: str, options):
    from ..frontend import parse_module
    module = parse_module(text, filename, defines=options.defines_dict() or None,
                          strict_dtypes=options.strict_dtypes)
    if not module.funcs:
        raise TileLangError(Diagnostic(NO_KERNEL, f"`{filename}` defines no kernel",
                                       help="define one with `@T.prim_func`"))
    return select_kernel(module, options.kernel)


def parse_pyfunc(pyfunc, options):
    from ..frontend import parse_function
    return select_kernel(parse_function(pyfunc, constants=options.defines_dict() or None,
                                        strict_dtypes=options.strict_dtypes), options.kernel)


def select_kernel(module, kernel: str | None):
    """The module with only `kernel` in it (all kernels when `kernel` is None)."""
    if kernel is None:
        return module
    names = [f.name for f in module.funcs]
    if kernel not in names:
        raise TileLangError(Diagnostic(
            UNKNOWN_KERNEL, f"no kernel named `{kernel}`",
            notes=[f"kernels defined: {', '.join(names) if names else '(none)'}"]))
    from dataclasses import replace
    return replace(module, funcs=tuple(f for f in module.funcs if f.name == kernel))


def only_kernel(module):
    """The module's one kernel; several are a user error asking for `-k` / `kernel=`."""
    if len(module.funcs) != 1:
        names = ", ".join(f.name for f in module.funcs)
        raise TileLangError(Diagnostic(AMBIGUOUS_KERNEL,
                                       f"the source defines {len(module.funcs)} kernels: {names}",
                                       help="pick one with `-k KERNEL` (`kernel=` in Python)"))
    return module.funcs[0]


def canonical_text(module) -> str:
    from ..ir.printer import print_module
    return print_module(module)


def pass_names(target) -> list[str]:
    return [p.name for p in target.pipeline()]


def check_pass_names(names, target, for_dump: bool) -> None:
    """Unknown names are a user error listing the valid ones. `--after` also takes
    `parse` (the IR before any pass); `--dump-after` also takes `all`."""
    valid = pass_names(target)
    extra = "all" if for_dump else PARSE_STAGE
    for name in names:
        if name not in valid and name != extra:
            hint = "`all` for every pass" if for_dump else "`parse` for the IR before any pass"
            raise TileLangError(Diagnostic(
                UNKNOWN_PASS, f"unknown pass `{name}`",
                notes=[f"the {target} pipeline is: {', '.join(valid)}"],
                help=f"use one of the names above, or {hint}"))


def lower(module, options, until: str | None = None, timings: list | None = None):
    """Run the target's pipeline (up to and including pass `until`, if given); the
    per-pass (name, seconds) are appended to `timings` when given (`--stats`)."""
    from ..passes.manager import PassManager
    check_pass_names(options.dump_after, options.target, for_dump=True)
    if until is not None:
        check_pass_names([until], options.target, for_dump=False)
        if until == PARSE_STAGE:
            return module
    passes = options.target.pipeline()
    if until is not None:
        passes = passes[:[p.name for p in passes].index(until) + 1]
    if not options.memory_reuse:
        passes = [p for p in passes if p.name != MEMORY_REUSE]
    manager = PassManager(passes, verify_each=options.verify_each,
                          dump_after=tuple(options.dump_after), dump_dir=options.dump_dir)
    lowered = manager.run(module)
    if timings is not None:
        timings.extend(manager.timings)
    return lowered


def compile_module(module, options, timings: list | None = None):
    """Lower `module` (the parsed IR) and generate the target's code: what its emitters,
    `artifact` and `library` take. `timings` collects (stage, seconds) for `--stats`."""
    import time
    check_ranks(module, options.target)
    lowered = lower(module, options, timings=timings)
    start = time.perf_counter()
    compiled = options.target.codegen(lowered, options)
    if timings is not None:
        timings.append(("codegen", time.perf_counter() - start))
    return compiled


def check_ranks(module, target) -> None:
    """A kernel that asks for its rank or reaches a peer compiles only for a target
    whose launches span ranks (`Target.launches_over_ranks`): TL0902 at the first such
    statement otherwise."""
    from ..diagnostics import Label
    from ..diagnostics.codes_ranks import NO_RANKS_ON_TARGET
    from ..ir.nodes import first_rank_use
    from ..targets import REGISTRY, target_class
    if target.launches_over_ranks:
        return
    for f in module.funcs:
        use = first_rank_use(f.body)
        if use is None:
            continue
        able = [f"--target {n}" for n in REGISTRY if target_class(n).launches_over_ranks]
        raise TileLangError(Diagnostic(
            NO_RANKS_ON_TARGET, f"kernel {f.name!r} uses ranks or peer memory, which the "
            f"{target.name} target does not model",
            primary=Label.from_span(use.span) if use.span.line else None,
            help=f"compile multi-rank kernels for {' or '.join(able) or 'another target'}"))


def memory_report(module, options):
    """The memory figures (passes/memory_stats.py) of `module` as `options` compile it:
    the IR right after `memory_reuse` (or where it would run, when it is off), since
    the passes after it forget which loops were pipelined."""
    from ..passes.memory_stats import memory_report as report
    until = MEMORY_REUSE if MEMORY_REUSE in pass_names(options.target) else None
    quiet = replace_options(options, dump_after=(), verify_each=False)
    return report(lower(module, quiet, until=until), rings=_keeps_rings(options.target))


def _keeps_rings(target) -> bool:
    """Whether the target's arena plan keeps pipeline stages apart (its memory_reuse
    pass runs with `Rules.rings`), so the report counts every copy."""
    for p in target.pipeline():
        rules = getattr(p.fn, "keywords", {}).get("rules")
        if p.name == MEMORY_REUSE and rules is not None:
            return rules.rings
    return False


def replace_options(options, **changes):
    from dataclasses import replace
    return replace(options, **changes)
