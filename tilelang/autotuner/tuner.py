"""TileLang's autotuner: `AutoTuner.from_kernel(...)...run()` and `@autotune(...)`.

    result = (AutoTuner.from_kernel(kernel=factory, configs=configs)
              .set_compile_args(out_idx=[-1], target="auto")
              .set_profile_args(supply_type=TensorSupplyType.Auto, ref_prog=ref)
              .run(warmup=3, rep=20))
    result.config, result.latency, result.kernel

A run: (1) the configs (a list of dicts, or a callable giving one) are each elaborated
and ranked by the pruning model (model.py: IR-based cost on the CPU, a timing-only
simulation on tcsim), a config that fails to build being skipped with its diagnostic
in the log; (2) the best-ranked ones, at most `measure_fraction` of the space, are
compiled, checked against `ref_prog` and timed with the profiler; (3) the finalists are
timed again in alternating turns and the median decides. The answer is cached on
disk (cache.py), so a second run compiles the winner from the kernel cache and
measures nothing. `TILELANG_AUTOTUNE=0` skips tuning and uses the first config.
"""
from __future__ import annotations

import logging
import math
import os
import statistics
import time
from dataclasses import dataclass, field

from ..diagnostics import TileLangError
from ..profiler.supply import TensorSupplyType
from . import cache as result_cache
from .progress import Progress
from .sources import EagerSource, FactorySource, _shapes, source_of

logger = logging.getLogger("tilelang.autotuner")

MEASURE_FRACTION = 0.3           # of the space, at most, compiled and timed
FINALISTS = 4
FINAL_TURNS = 5
MIN_CALLS = 3                    # timed calls of a config, however long one takes
ROUNDS = 3                       # turns over the measured configs after the first pass


@dataclass
class AutotuneResult:
    latency: float | None = None         # ms per call of the best config
    config: dict | None = None
    ref_latency: float | None = None     # ms per call of ref_prog
    kernel: object = None                # the compiled best kernel
    measured: int = 0                    # configs compiled and timed
    total: int = 0                       # configs in the space
    skipped: list = field(default_factory=list)     # [(config, reason)]
    from_cache: bool = False
    timings: dict = field(default_factory=dict)     # repr(config) -> ms, all measured

    @property
    def func(self):
        """The best kernel's IR (PrimFunc), parsed on first use."""
        return self.kernel._func() if self.kernel is not None else None

    @property
    def libcode(self) -> str | None:
        """The best kernel's IR as `.tl` text."""
        from ..ir.printer import print_module
        return print_module(self.kernel.module()) if self.kernel is not None else None


@dataclass(frozen=True)
class CompileArgs:
    out_idx: object = None
    target: str = "auto"
    execution_backend: str = "auto"
    target_host: object = None
    verbose: bool = False
    pass_configs: dict | None = None


@dataclass(frozen=True)
class ProfileArgs:
    warmup: float = 25
    rep: float = 100
    timeout: float = 30
    supply_type: TensorSupplyType = TensorSupplyType.Auto
    ref_prog: object = None
    supply_prog: object = None
    rtol: float = 1e-2
    atol: float = 1e-2
    max_mismatched_ratio: float = 0.01
    skip_check: bool = False
    manual_check_prog: object = None
    cache_input_tensors: bool = False
    backend: str = "event"
    sizes: dict | None = None            # symbolic sizes (T.dynamic) of the inputs


class AutoTuner:
    """Tunes a kernel over a space of configs (see the module docstring)."""

    def __init__(self, fn, configs, source=None):
        self.fn = fn
        self.configs = configs
        self.compile_args = CompileArgs()
        self.profile_args = ProfileArgs()
        self._source = source
        self._config_args: tuple = ((), {})  # what a callable `configs` is called with
        self._run_args: dict = {}            # @autotune's warmup / rep / timeout
        self.measure_fraction = MEASURE_FRACTION

    @classmethod
    def from_kernel(cls, kernel, configs):
        """`kernel`: a factory returning a `@T.prim_func` (its parameters are the config
        keys), a `@tilelang.jit` function, or a `.tl` path / compiled `.tl` kernel (the
        config keys are its constants, set as defines)."""
        return cls(kernel, configs)

    def set_compile_args(self, out_idx=None, target=None, execution_backend=None,
                         target_host=None, verbose=None, pass_configs=None):
        """TileLang's compile arguments; `target` "auto" (or None) is the kernel's own
        target, else the default one ($TILELANG_TARGET, else the CPU); "tcsim" or
        "tcsim:CONFIG" the simulated accelerator. `execution_backend`, `target_host`
        and `pass_configs` are accepted and have no effect here."""
        self.compile_args = CompileArgs(out_idx, target or "auto", execution_backend or "auto",
                                        target_host, bool(verbose), pass_configs)
        return self

    def set_profile_args(self, warmup=25, rep=100, timeout=30,
                         supply_type=TensorSupplyType.Auto, ref_prog=None, supply_prog=None,
                         rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01, skip_check=False,
                         manual_check_prog=None, cache_input_tensors=False, backend="event",
                         sizes=None):
        """TileLang's profile arguments (`sizes`: the symbolic sizes of the inputs of a
        kernel with `T.dynamic` shapes)."""
        self.profile_args = ProfileArgs(warmup, rep, timeout, supply_type, ref_prog,
                                        supply_prog, rtol, atol, max_mismatched_ratio,
                                        skip_check, manual_check_prog, cache_input_tensors,
                                        backend, dict(sizes or {}))
        return self

    # -- the run --------------------------------------------------------------------

    def run(self, warmup=25, rep=100, timeout=180, **_ignored) -> AutotuneResult:
        """Tune; `warmup` / `rep` (ms) are the profiler's budgets for each config."""
        source = self._source or source_of(self.fn, self.compile_args.out_idx,
                                           _options(self.compile_args))
        configs = self._configs()
        for c in configs:
            source.check(c)
        if os.environ.get("TILELANG_AUTOTUNE", "1").strip() == "0":
            return self._untuned(source, configs)
        runner = _runner(source)
        threads = runner.threads(None)
        key = result_cache.key(source.key_text(), configs,
                               {**source.options, "target": _target_spec(source),
                                "out_idx": repr(source.out_idx),
                                "defines": source.defines, "sizes": self.profile_args.sizes},
                               threads)
        hit = result_cache.load(key)
        if hit is not None:
            return self._from_cache(source, hit, len(configs))
        result = _Session(self, source, configs, runner, threads, warmup, rep, timeout).run()
        result_cache.store(key, {"config": result.config, "latency": result.latency,
                                 "ref_latency": result.ref_latency,
                                 "measured": result.measured, "total": result.total,
                                 "skipped": [[repr(c), r] for c, r in result.skipped]})
        return result

    def __call__(self):
        return self.run()

    def _configs(self) -> list:
        configs = self.configs
        if callable(configs):
            configs = call_configs(configs, *self._config_args)
        configs = [dict(c) for c in configs]
        if not configs:
            raise ValueError("No configurations to tune, please check your `@autotune` "
                             "decorator")
        return configs

    def _untuned(self, source, configs) -> AutotuneResult:
        logger.info("TILELANG_AUTOTUNE=0: using the first config %r", configs[0])
        kernel = _compiled(source, configs[0])
        return _result(kernel, configs[0], None, None, 0, len(configs))

    def _from_cache(self, source, hit: dict, total: int) -> AutotuneResult:
        kernel = _compiled(source, hit["config"])
        result = _result(kernel, hit["config"], hit.get("latency"), hit.get("ref_latency"),
                         hit.get("measured", 0), total)
        result.from_cache = True
        return result


def _options(compile_args: CompileArgs) -> dict:
    """"auto" leaves the kernel's own target, else the default one ($TILELANG_TARGET)."""
    target = compile_args.target
    if target in (None, "auto"):
        return {}
    return {"target": "cpu" if target == "llvm" else str(target)}


def _target_spec(source) -> str:
    """The target the source compiles for: its own, else the default one
    ($TILELANG_TARGET), which the tuning results depend on."""
    from .. import targets
    target = source.options.get("target")
    if target in (None, "auto"):
        return targets.default_spec()
    return getattr(target, "spec", None) or str(target)


def _runner(source):
    from ..driver.options import make_options
    from ..profiler.runners import runner_for
    return runner_for(make_options(target=_target_spec(source)))


def _compiled(source, config):
    kernel = source.kernel(config, out_idx=_out_idx(source))
    return kernel.compile()


def _out_idx(source):
    """The source's outputs, on every target: the tuned kernel is called as TileLang
    calls it (`C = kernel(A, B)`); a runner whose calls take every argument (tcsim's)
    builds its own launch from the kernel's module."""
    return source.out_idx


def _result(kernel, config, latency, ref_latency, measured, total) -> AutotuneResult:
    kernel.config, kernel.latency, kernel.ref_latency = config, latency, ref_latency
    return AutotuneResult(latency, config, ref_latency, kernel, measured, total)


class _Session:
    """One tuning run over a config list."""

    def __init__(self, tuner, source, configs, runner, threads, warmup, rep, timeout):
        self.tuner, self.source, self.configs = tuner, source, configs
        self.runner, self.threads = runner, threads
        self.warmup, self.rep, self.timeout = warmup, rep, timeout
        self.args = tuner.profile_args
        self.skipped: list = []
        self.inputs = None

    def run(self) -> AutotuneResult:
        ranked = self._ranked()
        # a small space still gets a few measured configs; a large one its fraction
        budget = max(min(3, len(self.configs)),
                     math.floor(self.tuner.measure_fraction * len(self.configs)))
        progress = Progress(budget, f"autotune {self.source.name}")
        timed = []                                 # (ms, config, profiler)
        best = None
        for config, _ in ranked:
            if len(timed) >= budget:
                break
            outcome = self._measure(config, best)
            if outcome is not None:
                timed.append(outcome)
                best = outcome[0] if best is None else min(best, outcome[0])
            progress.step(f"best {best:.4g} ms" if best is not None else "")
        timed = self._rounds(timed)
        if not timed:
            progress.close("no config compiled and passed its check")
            reasons = "; ".join(f"{c}: {r.splitlines()[0]}" for c, r in self.skipped[:5])
            raise RuntimeError("Auto-tuning failed: no configuration compiled and passed "
                               f"benchmarking/validation ({reasons})")
        best_ms, best_config, best_prof = self._final(timed)
        progress.close(f"best {best_ms:.4g} ms with {best_config} ({len(timed)} of "
                       f"{len(self.configs)} measured)")
        ref_ms = self._ref_latency(best_prof)
        result = _result(best_prof.kernel, best_config, best_ms, ref_ms, len(timed),
                         len(self.configs))
        result.skipped = self.skipped
        result.timings = {repr(c): ms for ms, c, _ in timed}
        return result

    # -- stage 1: the model ------------------------------------------------------------

    def _ranked(self) -> list:
        """(config, estimated seconds) best first; configs that fail to build skipped."""
        out = []
        for config in self.configs:
            try:
                kernel = self.source.kernel(config, out_idx=_out_idx(self.source))
                func = kernel._func()
                env = self._env(func)
                estimate = self.runner.model_time(kernel, func, env, self.threads)
            except Exception as e:             # noqa: BLE001 - logged, the config skipped
                self._skip(config, e)
                continue
            out.append((config, estimate))
        out.sort(key=lambda ce: ce[1])
        return out

    def _env(self, func) -> dict:
        from ..profiler.supply import InputSupply
        env = dict(self.args.sizes or {})
        missing = [s.name for s in func.symbols if s.name not in env]
        if missing:
            raise ValueError(f"kernel `{func.name}` has symbolic sizes {', '.join(missing)}: "
                             f"give them with set_profile_args(sizes={{...}})")
        InputSupply(func)                       # checks the supply can be made
        return env

    # -- stage 2: measuring -------------------------------------------------------------

    def _measure(self, config, best):
        from ..profiler.profiler import Profiler
        start = time.perf_counter()
        try:
            kernel = self.source.kernel(config, out_idx=_out_idx(self.source))
            prof = Profiler(kernel, self.source.out_idx, self.args.supply_type,
                            sizes=self.args.sizes)
            prof.runtime_kernel                     # compile now: a failure is a skip
            ins = self._inputs(prof)
            if not self.args.skip_check:
                self._check(prof, ins)
            ms = self._time(prof, ins, best)
        except Exception as e:                      # noqa: BLE001 - logged, skipped
            self._skip(config, e)
            return None
        elapsed = time.perf_counter() - start
        if elapsed > self.timeout:
            self._skip(config, f"took {elapsed:.1f} s, over the {self.timeout} s timeout")
            return None
        logger.info("config %r: %.4f ms", config, ms)
        return ms, config, prof

    def _time(self, prof, ins, best, calls: int = MIN_CALLS) -> float:
        """The least of a few calls: another process only ever adds time. A config
        three times slower than the best so far is not timed further."""
        from ..profiler import bench
        rk = prof.runtime_kernel
        if self.runner.deterministic:
            return prof.do_bench(input_tensors=ins)
        full, _ = prof._full_args(list(ins), prof.sizes)
        if calls < MIN_CALLS:                       # a turn of the rounds: no budget
            return min(bench.time_call(lambda: self.runner.call(rk, full))
                       for _ in range(calls))
        least = calls
        calls = bench.measure(lambda: self.runner.call(rk, full), self.warmup, self.rep,
                              early_stop=best * 3 if best is not None else None)
        while len(calls) < least and (best is None or min(calls) < best * 3):
            calls.append(bench.time_call(lambda: self.runner.call(rk, full)))
        return min(calls)

    def _inputs(self, prof):
        if self.args.cache_input_tensors and self.inputs is not None:
            return self.inputs
        if self.args.supply_prog is not None:
            ins = list(self.args.supply_prog(_param_specs(prof)))
        else:
            ins = prof._get_inputs()
        self.inputs = ins
        return ins

    def _check(self, prof, ins) -> None:
        if self.args.manual_check_prog is not None and self.args.ref_prog is not None:
            prof.manual_assert_close(self.args.ref_prog, ins, self.args.manual_check_prog)
        elif self.args.ref_prog is not None:
            prof.assert_allclose(self.args.ref_prog, ins, atol=self.args.atol,
                                 rtol=self.args.rtol,
                                 max_mismatched_ratio=self.args.max_mismatched_ratio)

    def _rounds(self, timed) -> list:
        """Each measured config timed again in turns with the others, keeping its least
        time: load from other processes then falls on all of them alike, not on the
        configs that happened to be measured while it lasted."""
        if self.runner.deterministic or len(timed) < 2:
            return timed
        least = [t[0] for t in timed]
        for _ in range(ROUNDS):
            cut = 1.5 * min(least)                  # far slower ones cannot win
            for i, (_, _, prof) in enumerate(timed):
                if least[i] <= cut:
                    least[i] = min(least[i], self._time(prof, self.inputs, None, calls=1))
        return [(ms, c, p) for ms, (_, c, p) in zip(least, timed)]

    # -- stage 3: the finalists -----------------------------------------------------

    def _final(self, timed):
        timed.sort(key=lambda t: t[0])
        finalists = timed[:FINALISTS]
        if len(finalists) == 1 or self.runner.deterministic:
            return finalists[0]
        turns: list[list[float]] = [[] for _ in finalists]
        ins = self.inputs
        for _ in range(FINAL_TURNS):
            for i, (_, _, prof) in enumerate(finalists):
                turns[i].append(self._time(prof, ins, None))
        medians = [statistics.median(t) for t in turns]
        i = min(range(len(finalists)), key=lambda j: medians[j])
        return medians[i], finalists[i][1], finalists[i][2]

    def _ref_latency(self, prof):
        if self.args.ref_prog is None or self.inputs is None:
            return None
        try:
            return prof.do_bench(self.args.ref_prog, warmup=self.warmup, rep=self.rep,
                                 input_tensors=self.inputs, return_mode="median")
        except Exception as e:                      # noqa: BLE001 - only a figure is lost
            logger.warning("ref_prog could not be timed: %s", e)
            return None

    def _skip(self, config, error) -> None:
        reason = _describe(error)
        self.skipped.append((config, reason))
        logger.warning("config %r skipped: %s", config, reason)


def call_configs(configs, args, kwargs) -> list:
    """A callable config space, called with the kernel's arguments (those of its
    keyword arguments that the callable takes)."""
    import inspect
    try:
        params = inspect.signature(configs).parameters
    except (TypeError, ValueError):
        return list(configs(*args, **kwargs))
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        kwargs = {k: v for k, v in kwargs.items() if k in params}
    return list(configs(*args, **kwargs))


def _describe(error) -> str:
    if isinstance(error, TileLangError):
        return str(error)                           # the rendered diagnostic
    if isinstance(error, str):
        return error
    return f"{type(error).__name__}: {error}"


def _param_specs(prof) -> list:
    """The kernel's inputs as (name, shape, dtype) records for a `supply_prog`."""
    from types import SimpleNamespace
    from ..ir import nodes as ir
    out = []
    for i, p in enumerate(prof.prim_func.params):
        if i in prof.result_idx or not isinstance(p, ir.Buffer):
            continue
        out.append(SimpleNamespace(name=p.name, shape=prof.supply.shape(p, prof.sizes),
                                   dtype=p.dtype))
    return out


# ----------------------------------------------------------------------------- @autotune

class AutoTuneImpl:
    """`@autotune(...)` over a `@tilelang.jit` factory: calling it with the fixed
    parameters (shapes, dtypes) tunes the rest over `configs` once per distinct call and
    returns the best kernel; a call that gives every tuned parameter compiles that
    config directly, as TileLang does."""

    def __init__(self, jit_factory, configs, **profile):
        self.jit = jit_factory
        self.configs = configs
        self.profile = profile
        self._results: dict = {}
        self.__name__ = getattr(jit_factory, "__name__", "autotuned")
        self.__doc__ = getattr(jit_factory, "__doc__", None)
        self.__wrapped__ = jit_factory

    def get_tunner(self, *args, **kwargs) -> AutoTuner:      # TileLang's spelling
        return self.get_tuner(*args, **kwargs)

    def get_tuner(self, *args, **kwargs) -> AutoTuner:
        p = dict(self.profile)
        run_args = {k: p.pop(k) for k in ("warmup", "rep", "timeout") if k in p}
        if self.jit.eager is not None:
            source = EagerSource(self.jit, args, kwargs)
        else:
            source = FactorySource(self.jit.factory, args, kwargs, self.jit.out_idx,
                                   self.jit.options, self.jit.defines)
        tuner = AutoTuner(self.jit, self.configs, source=source)
        tuner._config_args = (args, kwargs)
        tuner.set_profile_args(**p)
        tuner._run_args = run_args
        return tuner

    def __call__(self, *args, **kwargs):
        tuned = self._tuned_names(args, kwargs)
        if tuned is not None and self._all_given(tuned, args, kwargs):
            logger.info("tunable parameters %s given: compiling them directly", tuned)
            return self.jit(*args, **kwargs)
        from ..decorators import _freeze
        key = _freeze((self.jit.target_key(), _shapes((list(args), kwargs))))
        if key not in self._results:
            tuner = self.get_tuner(*args, **kwargs)
            self._results[key] = tuner.run(**tuner._run_args)
        if self.jit.eager is not None:         # the current style runs: the best config
            return self.jit(*args, **{**kwargs, **self._results[key].config})
        return self._results[key].kernel

    def compile(self, *args, **kwargs):
        return self(*args, **kwargs)

    def result(self, *args, **kwargs) -> AutotuneResult:
        """The AutotuneResult of a call (tuning if it was not made yet)."""
        from ..decorators import _freeze
        self(*args, **kwargs)
        return self._results.get(_freeze((self.jit.target_key(),
                                          _shapes((list(args), kwargs)))))

    def _tuned_names(self, args, kwargs):
        configs = self.configs
        if callable(configs):
            configs = call_configs(configs, args, kwargs)
        first = next(iter(configs), None)
        return list(first) if first is not None else None

    def _all_given(self, names, args, kwargs) -> bool:
        import inspect
        try:
            bound = inspect.signature(self.jit.factory).bind_partial(*args, **kwargs)
        except TypeError:
            return False
        return all(n in bound.arguments for n in names)

    def __repr__(self) -> str:
        return f"<tilelang autotuned {self.__name__}: {len(self._results)} tuned>"


def autotune(func=None, *, configs=None, warmup=25, rep=100, timeout=100,
             supply_type=TensorSupplyType.Auto, ref_prog=None, supply_prog=None,
             rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01, skip_check=False,
             manual_check_prog=None, cache_input_tensors=False, sizes=None, **_ignored):
    """`@tilelang.autotune(configs=..., ...)` stacked on `@tilelang.jit`: see
    AutoTuneImpl. `configs` is a list of dicts or a callable of the call's arguments
    returning one."""
    if func is not None and callable(func):
        raise ValueError("Use tilelang.autotune to decorate func without arguments is not "
                         "supported yet: give configs=...")
    if configs is None:
        raise ValueError("@autotune needs configs=: a list of dicts or a callable")
    profile = dict(warmup=warmup, rep=rep, timeout=timeout, supply_type=supply_type,
                   ref_prog=ref_prog, supply_prog=supply_prog, rtol=rtol, atol=atol,
                   max_mismatched_ratio=max_mismatched_ratio, skip_check=skip_check,
                   manual_check_prog=manual_check_prog,
                   cache_input_tensors=cache_input_tensors, sizes=sizes)

    def decorator(impl):
        from ..decorators import JITFactory
        if not isinstance(impl, JITFactory):
            impl = JITFactory(impl)             # a bare factory: @jit with the defaults
        return AutoTuneImpl(impl, configs, **profile)
    return decorator
