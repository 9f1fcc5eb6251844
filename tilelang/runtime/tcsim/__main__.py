"""`python -m tilelang.runtime.tcsim`: assemble, inspect and simulate hand-written
programs without the compiler.

    python -m tilelang.runtime.tcsim run prog.tcasm --shape M=4096,N=4096 [--config h100_like]
                                       [--functional] [--trace out.json]
    python -m tilelang.runtime.tcsim asm prog.tcasm -o prog.tcsim [--config tiny]
    python -m tilelang.runtime.tcsim dis prog.tcsim
    python -m tilelang.runtime.tcsim configs

`run` binds every tensor parameter from the sizes given (timing-only unless
--functional, which draws random inputs), and prints the report.
"""
from __future__ import annotations

import argparse
import sys


def _sizes(items) -> dict:
    out = {}
    for item in items or ():
        for part in item.split(","):
            name, _, value = part.partition("=")
            if not value:
                raise SystemExit(f"bad size {part!r}: expected NAME=VALUE")
            out[name.strip()] = int(value)
    return out


def _read_program(path: str):
    from ...targets.tcsim.artifact import from_bytes
    from ...targets.tcsim.asm import assemble
    with open(path, "rb") as f:
        data = f.read()
    if data.startswith(b"TCSIMART"):
        return from_bytes(data).program
    return assemble(data.decode("utf-8"))


def _arguments(program, sizes: dict, functional: bool, scalars: dict):
    import numpy as np
    from ...dtypes import numpy_dtype
    rng = np.random.default_rng(0)
    args = []
    for p in program.params:
        if p.kind in ("workspace", "view"):
            continue
        if p.kind == "scalar":
            args.append(scalars.get(p.name, 1))
            continue
        shape = tuple(d if isinstance(d, int) else sizes[d] for d in p.shape)
        dt = numpy_dtype(p.dtype)
        if functional:
            args.append(rng.standard_normal(shape).astype(dt))
        else:
            args.append((shape, p.dtype))
    return args


def main(argv=None) -> int:
    from ...targets.tcsim.config import DEFAULT_CONFIG
    ap = argparse.ArgumentParser(prog="python -m tilelang.runtime.tcsim",
                                 description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="simulate a .tcasm or artifact file")
    r.add_argument("file")
    r.add_argument("--config", default=DEFAULT_CONFIG)
    r.add_argument("--shape", action="append", metavar="M=..,N=..")
    r.add_argument("--arg", action="append", metavar="NAME=VALUE")
    r.add_argument("--functional", action="store_true")
    r.add_argument("--trace")
    a = sub.add_parser("asm", help="assemble .tcasm into an artifact")
    a.add_argument("file")
    a.add_argument("-o", "--output", required=True)
    a.add_argument("--config", default=DEFAULT_CONFIG)
    d = sub.add_parser("dis", help="print an artifact as .tcasm")
    d.add_argument("file")
    sub.add_parser("configs", help="list the machine configs and their peaks")
    ns = ap.parse_args(argv)
    try:
        return _dispatch(ns)
    except (ValueError, RuntimeError, KeyError, OSError) as e:
        code = getattr(e, "code", None)
        print(f"error{f'[{code}]' if code else ''}: {e}", file=sys.stderr)
        return 1


def _dispatch(ns) -> int:
    from ...targets.tcsim.artifact import Artifact, check_fits
    from ...targets.tcsim.asm import disassemble
    from ...targets.tcsim.config import CONFIGS, get_config
    if ns.cmd == "configs":
        for c in CONFIGS.values():
            print(f"{c.name:<12} {c.cores:>4} cores  {c.peak_tflops('bfloat16'):8.1f} TFLOPS "
                  f"bf16  HBM {c.hbm_bytes_per_s / 1e12:.2f} TB/s  {c.notes}")
        return 0
    program = _read_program(ns.file)
    if ns.cmd == "dis":
        sys.stdout.write(disassemble(program))
        return 0
    cfg = get_config(ns.config)
    check_fits(program, cfg)
    if ns.cmd == "asm":
        Artifact(program, cfg.name).save(ns.output)
        return 0
    from .sim import run
    args = _arguments(program, _sizes(ns.shape), ns.functional,
                      {k: float(v) for k, v in _sizes_float(ns.arg).items()})
    report = run(program, *args, config=cfg, mode="functional" if ns.functional else "timing",
                 trace=ns.trace)
    print(report.summary())
    return 0


def _sizes_float(items) -> dict:
    out = {}
    for item in items or ():
        name, _, value = item.partition("=")
        out[name.strip()] = value
    return out


if __name__ == "__main__":
    sys.exit(main())
