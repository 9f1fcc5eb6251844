"""Small `.tcasm` programs for the tcsim tests, built from text so each test reads as
the assembly it runs."""
from __future__ import annotations

from tilelang.targets.tcsim.asm import assemble


def program(body: str, params=(), bufs=(), sems=(), grid="1 | 1 | 1", symbols=(),
            name="k", raster=0):
    """params: ("A tensor float32 [N]", ...); bufs: ("A_f RF float32 [64]", ...);
    sems: ("ld 1", ...); symbols: ("N r3", ...)."""
    lines = [f".kernel {name}"]
    lines += [f".param {p}" for p in params]
    lines += [f".symbol {s}" for s in symbols]
    lines.append(f".grid {grid}")
    lines.append(f".raster {raster}")
    lines += [f".buf {b}" for b in bufs]
    lines += [f".sem {s}" for s in sems]
    lines += ["    " + ln.strip() for ln in body.strip().splitlines()]
    return assemble("\n".join(lines) + "\n")
