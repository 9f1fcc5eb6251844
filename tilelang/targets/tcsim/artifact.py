"""tcsim artifacts: a program plus its signature, grid, resource use and target config.

File layout: magic `TCSIMART`, a little-endian u32 length, a JSON header, then the
binary program (encoding.py). The header is redundant with the program for what a loader
must check without decoding it (config, resources) and for people (`strings` shows it).
`load` rejects a program that does not fit the machine it is loaded for.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass

from ...diagnostics import ArtifactError
from ...diagnostics.codes_tcsim import BAD_PROGRAM, DOES_NOT_FIT
from .config import MachineConfig, get_config
from .encoding import decode, encode
from .isa import Program
from .validate import declaration_problems, validate

MAGIC = b"TCSIMART"
FORMAT = 2


@dataclass(frozen=True)
class Artifact:
    """A kernel's program; a kernel of several grids (a split pass, then a combine) has
    one program per grid: `program` is the first, `later` the others, run in order on
    the same tensors and workspaces."""
    program: Program
    config_name: str
    later: tuple = ()

    @property
    def programs(self) -> tuple:
        return (self.program,) + tuple(self.later)

    def header(self) -> dict:
        p = self.program
        head = {"format": FORMAT, "kernel": p.name, "config": self.config_name,
                "params": [{"name": x.name, "kind": x.kind, "dtype": x.dtype,
                            "shape": list(x.shape),
                            **({"source": x.source} if x.source else {})}
                           for x in p.params],
                "grid": list(p.grid), "raster": p.raster, "cluster": list(p.cluster),
                "resources": p.resources(),
                "instructions": len(p.code)}
        if self.later:
            head["grids"] = [{"grid": list(q.grid), "resources": q.resources(),
                              "instructions": len(q.code)} for q in self.programs]
        return head

    def to_bytes(self) -> bytes:
        head = json.dumps(self.header(), sort_keys=True).encode("utf-8")
        if not self.later:
            return MAGIC + struct.pack("<I", len(head)) + head + encode(self.program)
        # several grids: each program's length, then the programs
        bodies = [encode(q) for q in self.programs]
        sizes = b"".join(struct.pack("<I", len(b)) for b in bodies)
        return MAGIC + struct.pack("<I", len(head)) + head + sizes + b"".join(bodies)

    def save(self, path) -> None:
        with open(path, "wb") as f:
            f.write(self.to_bytes())


def from_bytes(data: bytes, config: MachineConfig | str | None = None) -> Artifact:
    """Parse an artifact and check it against `config` (default: the config it names)."""
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + 4:
        raise ArtifactError("not a tcsim artifact (bad magic)", BAD_PROGRAM)
    (n,) = struct.unpack_from("<I", data, len(MAGIC))
    start = len(MAGIC) + 4
    try:
        head = json.loads(data[start:start + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ArtifactError("corrupt tcsim artifact header", BAD_PROGRAM) from None
    if head.get("format") != FORMAT:
        raise ArtifactError(f"tcsim artifact format {head.get('format')} is not {FORMAT}",
                            BAD_PROGRAM)
    programs = _programs(data[start + n:], len(head.get("grids", [])) or 1)
    cfg = get_config(config if config is not None else head["config"])
    for program in programs:
        check_fits(program, cfg)
    return Artifact(programs[0], cfg.name, tuple(programs[1:]))


def _programs(body: bytes, count: int) -> list:
    if count == 1:
        return [decode(body)]
    if len(body) < 4 * count:
        raise ArtifactError("corrupt tcsim artifact (truncated grid table)", BAD_PROGRAM)
    sizes = struct.unpack_from(f"<{count}I", body, 0)
    pos, out = 4 * count, []
    for size in sizes:
        if pos + size > len(body):
            raise ArtifactError("corrupt tcsim artifact (truncated program)", BAD_PROGRAM)
        out.append(decode(body[pos:pos + size]))
        pos += size
    return out


def load(path, config: MachineConfig | str | None = None) -> Artifact:
    with open(path, "rb") as f:
        return from_bytes(f.read(), config)


def check_fits(program: Program, cfg: MachineConfig) -> None:
    """Raise ArtifactError when the program needs more than `cfg` has, or uses a memory
    level where the machine cannot (e.g. an MMA operand outside the MMA's buffers)."""
    bad = declaration_problems(program)
    if bad:
        raise ArtifactError(f"{program.name}: " + "; ".join(bad), BAD_PROGRAM)
    use = program.resources()
    for level, need in use.items():
        if level in ("semaphores", "registers"):
            continue
        try:
            have = cfg.level_bytes(level)
        except Exception:
            raise ArtifactError(f"{program.name}: memory level {level} does not exist on "
                                f"{cfg.name}", DOES_NOT_FIT) from None
        if need > have:
            raise ArtifactError(f"{program.name}: needs {need} bytes of {level}, "
                                f"{cfg.name} has {have}", DOES_NOT_FIT)
    problems = validate(program, cfg)
    if problems:
        raise ArtifactError(f"{program.name} does not fit {cfg.name}: " + "; ".join(problems),
                            DOES_NOT_FIT)
