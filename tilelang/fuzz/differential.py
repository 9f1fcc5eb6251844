"""Differential testing: one program, one set of inputs, every way of running it.

    verdict = check(text, sizes, seed=0)

runs the reference interpreter on the parsed IR (the reference, with magnitudes), then
for each target (`cpu`, `tcsim:tiny`) lowers the IR pass by pass with the verifier on,
interpreting the IR after each pass (`stages="all"`; `"ends"`: only the last, with a
bisection over the passes when it disagrees; `"bisect"`: none unless the target's result
disagrees, then each in turn), and finally runs the target's code. Every
result is compared with the reference by the oracle (oracle.py). The verdict names what
disagreed first: the pass whose output the interpreter runs differently, or the target's
code generator when every stage agrees and the machine code does not.

Outcomes (`Verdict.kind`): "ok"; "miscompile" (a pass or a code generator changed a
result); "internal" (the compiler raised InternalError or an unexpected exception);
"rejected" (a user error for a program the frontend accepted: a pass or a target
refusing it); "undefined" (the reference run found undefined behaviour: the program is
not a valid test); "unsupported" (a construct a target or the interpreter does not
have, reported as such). A crash kills the process running the check: the campaign
runner (campaign.py) runs checks in worker processes and counts that as "crash".
"""
from __future__ import annotations

import atexit
import re
import traceback
from dataclasses import dataclass, field

import numpy as np

from .. import dtypes
from ..diagnostics import InternalError, TileLangError
from .oracle import compare, program_eps

TARGETS = ("cpu", "tcsim:tiny")


@dataclass
class Verdict:
    kind: str                       # ok | miscompile | internal | rejected | undefined | unsupported
    where: str = ""                 # pass name, "codegen:<target>", "parse", ...
    detail: str = ""
    stages_checked: int = 0

    @property
    def is_bug(self) -> bool:
        return self.kind in ("miscompile", "internal")

    def __str__(self) -> str:
        return f"{self.kind}" + (f" in {self.where}" if self.where else "") + \
            (f": {self.detail}" if self.detail else "")


@dataclass
class Reference:
    func: object
    inputs: list
    outputs: dict
    magnitudes: dict
    eps: float
    tiny: float
    names: list = field(default_factory=list)


# ----------------------------------------------------------------------------- inputs

_RANGE = re.compile(r"^# input (\w+) in \[(-?\d+), (-?\d+)\)$", re.M)


def input_ranges(text: str) -> dict:
    """`# input I in [0, 7)` lines of a program: integer tensors drawn from a range (the
    index tensors of gathers)."""
    return {m.group(1): (int(m.group(2)), int(m.group(3))) for m in _RANGE.finditer(text)}


def make_inputs(func, sizes: dict, seed: int, scalars: dict | None = None,
                ranges: dict | None = None) -> list:
    """Arguments in signature order: floats uniform in [-2, 2) rounded to the dtype,
    integers over a range where sums of products stay exact, random bools; scalars from
    `scalars` (default 1 / 1.0). Output tensors get random contents too: a kernel that
    does not write an element must leave it as it was."""
    from ..ir.nodes import Buffer
    rng = np.random.default_rng(seed)
    args = []
    for p in func.params:
        if not isinstance(p, Buffer):
            default = 1.0 if dtypes.is_float(p.dtype) else 1
            args.append((scalars or {}).get(p.name, default))
            continue
        shape = tuple(int(d.value) if hasattr(d, "value") else sizes[d.name] for d in p.shape)
        if ranges and p.name in ranges:
            lo, hi = ranges[p.name]
            args.append(rng.integers(lo, hi, size=shape).astype(dtypes.numpy_dtype(p.dtype)))
        else:
            args.append(random_array(rng, shape, p.dtype))
    return args


_INT_RANGE = {"int8": (-128, 128), "uint8": (0, 256), "int32": (-1000, 1000),
              "int64": (-1000, 1000)}


def random_array(rng, shape, dtype: str) -> np.ndarray:
    np_dt = dtypes.numpy_dtype(dtype)
    if dtypes.is_float(dtype):
        return rng.uniform(-2.0, 2.0, size=shape).astype(np_dt)
    if dtypes.is_bool(dtype):
        return rng.random(size=shape) < 0.5
    lo, hi = _INT_RANGE[dtype]
    return rng.integers(lo, hi, size=shape).astype(np_dt)


def _copies(args) -> list:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


# ----------------------------------------------------------------------------- the check

def check(text: str, sizes: dict, seed: int = 0, *, kernel: str | None = None,
          targets=TARGETS, stages: str = "all", defines: dict | None = None,
          filename: str = "<fuzz>", opt: int = 3, inputs: list | None = None) -> Verdict:
    """Run every comparison for one program (see the module docstring). `inputs`: the
    arguments of `kernel` in signature order, instead of drawn ones (a kernel whose
    integer inputs must be a consistent schedule, block table, ...)."""
    from ..frontend import parse_module
    try:
        module = parse_module(text, filename, defines=defines or None)
    except TileLangError as e:
        return Verdict("rejected", "parse", _first_line(e))
    except Exception as e:  # noqa: BLE001 - any other exception is a frontend bug
        return Verdict("internal", "parse", _exc(e))
    names = [f.name for f in module.funcs]
    checked = 0
    for name in ([kernel] if kernel else names):
        verdict = _check_kernel(module, name, sizes, seed, targets, stages, opt,
                                input_ranges(text), inputs)
        if verdict.kind != "ok":
            return verdict
        checked += verdict.stages_checked
    return Verdict("ok", stages_checked=checked)


def _check_kernel(module, name, sizes, seed, targets, stages, opt=3,
                  ranges=None, inputs=None) -> Verdict:
    from ..ir.nodes import Module
    module = Module((module.func(name),))
    ref = reference(module, name, sizes, seed, ranges, inputs)
    if isinstance(ref, Verdict):
        return ref
    checked = 1
    for target in targets:
        verdict = _check_target(module, ref, target, stages, opt)
        checked += verdict.stages_checked
        if verdict.kind != "ok":
            verdict.stages_checked = checked
            return verdict
    return Verdict("ok", stages_checked=checked)


def reference(module, name, sizes, seed, ranges=None, inputs=None) -> Reference | Verdict:
    """The interpreter's run of the parsed IR, or the verdict that stops the check."""
    from ..ir import interp
    func = module.func(name)
    try:
        if inputs is None:
            inputs = make_inputs(func, sizes, seed, ranges=ranges)
    except KeyError as e:
        return Verdict("rejected", "inputs", f"no size given for {e}")
    inputs = _copies(inputs)
    args = _copies(inputs)
    try:
        result = interp.run(module, name, args, magnitudes=True)
    except interp.UndefinedBehavior as e:
        return Verdict("undefined", "parse", f"{e.kind}: {e}")
    except interp.NotSupported as e:
        return Verdict("unsupported", "interpreter", str(e))
    except Exception as e:  # noqa: BLE001
        return Verdict("internal", "interpreter", _exc(e))
    eps, tiny = program_eps(_float_dtypes(func))
    outputs = {p.name: a for p, a in zip(func.params, args) if isinstance(a, np.ndarray)}
    return Reference(func, inputs, outputs, result.magnitudes, eps, tiny)


def _float_dtypes(func) -> set:
    from ..ir.nodes import Buffer, Expr
    from ..ir.visitor import walk
    out = set()
    for n in walk(func):
        dt = getattr(n, "dtype", None)
        if isinstance(n, (Buffer, Expr)) and isinstance(dt, str) and dtypes.is_float(dt):
            out.add(dt)
    return out


def agree(ref: Reference, args) -> str | None:
    """The first disagreement of `args` (after a run) with the reference, or None."""
    for p, got in zip(ref.func.params, args):
        if p.name not in ref.outputs:
            continue
        bad = compare(p.name, ref.outputs[p.name], got, ref.magnitudes.get(p.name),
                      ref.eps, ref.tiny)
        if bad is not None:
            return str(bad)
    return None


# ----------------------------------------------------------------------------- one target

def _check_target(module, ref: Reference, target: str, stages: str, opt: int = 3) -> Verdict:
    from ..passes.manager import PassManager
    from ..targets import get
    passes = list(get(target).pipeline())
    snapshots = []
    current = module
    for p in passes:
        try:
            current = PassManager([p], verify_each=True).run(current)
        except TileLangError as e:
            return Verdict("rejected", f"{target}:{p.name}", _first_line(e))
        except InternalError as e:
            return Verdict("internal", f"{target}:{p.name}", str(e).splitlines()[0])
        except Exception as e:  # noqa: BLE001
            return Verdict("internal", f"{target}:{p.name}", _exc(e))
        snapshots.append((p.name, current))
    checked = 0
    if stages == "all":
        for pass_name, stage in snapshots:
            verdict = _interpret_stage(stage, ref, f"{target}:{pass_name}")
            checked += 1
            if verdict is not None:
                verdict.stages_checked = checked
                return verdict
    elif stages == "ends" and snapshots:
        pass_name, stage = snapshots[-1]
        checked += 1
        if _interpret_stage(stage, ref, pass_name) is not None:
            return _bisect(snapshots, ref, target)
    verdict = _run_target(current, ref, target, opt)
    verdict.stages_checked = checked
    if verdict.kind == "miscompile" and stages == "bisect":
        # the target disagrees: was it a pass (the interpreter disagrees at some stage)
        # or the code generator (every stage agrees)?
        found = _first_wrong_stage(snapshots, ref, target)
        if found is not None:
            return found
    return verdict


def _first_wrong_stage(snapshots, ref, target) -> Verdict | None:
    for pass_name, stage in snapshots:
        verdict = _interpret_stage(stage, ref, f"{target}:{pass_name}")
        if verdict is not None:
            return verdict
    return None


def _interpret_stage(stage, ref: Reference, where: str) -> Verdict | None:
    from ..ir import interp
    args = _copies(ref.inputs)
    try:
        interp.run(stage, ref.func.name, args)
    except interp.UndefinedBehavior as e:
        return Verdict("miscompile", where, f"the lowered program has undefined "
                                            f"behaviour the source did not: {e.kind}: {e}")
    except interp.NotSupported as e:
        return Verdict("unsupported", f"interpreter at {where}", str(e))
    except Exception as e:  # noqa: BLE001
        return Verdict("internal", f"interpreter at {where}", _exc(e))
    bad = agree(ref, args)
    return None if bad is None else Verdict("miscompile", where, bad)


def _bisect(snapshots, ref, target) -> Verdict:
    for pass_name, stage in snapshots:
        verdict = _interpret_stage(stage, ref, f"{target}:{pass_name}")
        if verdict is not None:
            return verdict
    return Verdict("internal", f"{target}", "a stage disagreed once and not on a rerun")


def _run_target(lowered, ref: Reference, target: str, opt: int = 3) -> Verdict:
    args = _copies(ref.inputs)
    where = f"codegen:{target}" + (f" -O{opt}" if target == "cpu" else "")
    try:
        kernel = _build(lowered, ref.func.name, target, opt)
        kernel(*args)
    except TileLangError as e:
        kind = "unsupported" if _is_unsupported(e) else "rejected"
        return Verdict(kind, where, _first_line(e))
    except InternalError as e:
        return Verdict("internal", where, str(e).splitlines()[0])
    except (TypeError, ValueError, RuntimeError) as e:
        code = getattr(e, "code", None)
        if isinstance(code, str) and code in _TCSIM_WRONG:
            return Verdict("miscompile", where, f"{code}: {e}")
        if isinstance(code, str) and code.startswith("TL08"):
            return Verdict("unsupported" if code in _TCSIM_UNSUPPORTED else "rejected",
                           where, f"{code}: {e}")
        return Verdict("internal", where, _exc(e))
    except Exception as e:  # noqa: BLE001
        return Verdict("internal", where, _exc(e))
    bad = agree(ref, args)
    return Verdict("ok") if bad is None else Verdict("miscompile", where, bad)


_TCSIM_UNSUPPORTED = ("TL0801",)         # the program does not fit the machine
_TCSIM_WRONG = ("TL0802", "TL0803", "TL0804")   # malformed program, race, deadlock


def _is_unsupported(err: TileLangError) -> bool:
    code = err.diagnostics[0].code if err.diagnostics else ""
    return code in ("TL0501", "TL0502", "TL0503") or code.startswith("TL08")


def _build(lowered, name: str, target: str, opt: int = 3):
    """A callable kernel from the lowered module, by the target's own means: its
    artifact loaded from a file (a cacheable target, cpu's `.so`), or its library."""
    from ..driver.options import make_options
    options = make_options(target=target, opt=opt)
    t = options.target
    compiled = t.codegen(lowered, options)
    if not t.cacheable:
        return t.library(compiled, options)[name]
    import os
    import tempfile
    directory = tempfile.mkdtemp(prefix="tilelang-fuzz-")
    _keep.append(directory)
    path = os.path.join(directory, "kernel")
    with open(path, "wb") as f:
        f.write(t.artifact(compiled))
    return t.load(path)[name]


_keep: list = []        # directories of loaded libraries, removed at exit


def _cleanup():
    import shutil
    for d in _keep:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(_cleanup)


def _first_line(e: TileLangError) -> str:
    d = e.diagnostics[0] if e.diagnostics else None
    return f"{d.code}: {d.message}" if d else str(e).splitlines()[0]


def _exc(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    where = f" at {tb[-1].filename.split('tilelang/')[-1]}:{tb[-1].lineno}" if tb else ""
    return f"{type(e).__name__}: {e}{where}"
