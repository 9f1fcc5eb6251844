"""CPU machine descriptions as data: vector width, register count, register tile, caches.

A leaf of the cpu target: imports only the standard library, so passes, codegen, the
kernel library and the runtime may all read it. The tiling pass and the library's
block-size choice read these numbers; a new ISA (AVX-512, NEON, SVE at a fixed width) is
a new table entry, not a new branch in a pass.
`host()` picks the entry whose required features the running CPU has (the most capable
first) and fills in the cache sizes the kernel reports. A choice made for the wrong
machine only costs speed: every register tile is correct on every CPU.

What only a measurement can tell (is the native bf16 dot product faster than widening
to float32 and FMA?) is applied by `with_measured` from the host's measured peaks (the
cpu target does so for the host); without a measurement the description keeps the
path every CPU has.
"""
from __future__ import annotations

import os
import platform
from dataclasses import dataclass, replace
from functools import lru_cache


@dataclass(frozen=True)
class CpuMachine:
    name: str
    requires: tuple[str, ...]     # /proc/cpuinfo flags (x86) or machine names (arm)
    vector_bits: int
    vector_registers: int
    row_vectors: int              # vectors per register-tile row (NR = row_vectors * lanes)
    l1d: int = 32 * 1024          # bytes per core
    l2: int = 512 * 1024
    l3: int = 8 * 1024 * 1024
    # The operand whose register-tile panel stays in L1 while the other's panels stream
    # past it: A (rows of register tiles outermost). Measured at n = 2048 on a 2-port
    # AVX-512 core, same blocks: 0.80 of the FMA peak against 0.75 with B resident; the
    # streamed operand is then B's packed panels, one contiguous stream, rather than MR
    # rows of A
    resident: str = "A"
    # bf16 x bf16 -> float32 register tiles take two k steps at a time with the CPU's
    # bf16 dot product (vdpbf16ps); set by `with_measured` where it pays
    bf16_dot: bool = False

    def lanes(self, dtype_bits: int) -> int:
        return max(1, self.vector_bits // dtype_bits)

    def register_tile(self, dtype_bits: int) -> tuple[int, int]:
        """(MR, NR): MR rows of `row_vectors` accumulator vectors, leaving registers for
        the row of B (`row_vectors`) and one broadcast of A."""
        nvec = self.row_vectors
        mr = (self.vector_registers - nvec - 1) // nvec
        return max(1, mr), nvec * self.lanes(dtype_bits)


# Most capable first: host() takes the first entry the CPU supports. AVX-512 keeps two
# vectors a row (14 x 32): at n = 2048 on a 2-port AVX-512 core, same run, 14 x 32 ran at
# 0.71 of the FMA peak, 12 x 32 at 0.71, 9 x 48 at 0.66 and 8 x 48 at 0.64 (fewer loads
# per FMA does not pay where two loads a cycle feed two FMAs a cycle anyway).
MACHINES = (
    CpuMachine("avx512", ("avx512f",), 512, 32, 2),
    CpuMachine("avx2", ("avx2", "fma"), 256, 16, 2),
    CpuMachine("neon", ("aarch64", "arm64"), 128, 32, 4),
    CpuMachine("sse2", (), 128, 16, 2),
)


# The native bf16 dot product is taken where it does at least this much more arithmetic
# per second than the float32 FMA it replaces (it must pay for its K-pair packing): on
# a Sapphire-Rapids-class core it was measured at 0.47x, on Zen 4 about 2x
BF16_DOT_MIN_GAIN = 1.8


def with_measured(machine: CpuMachine, peaks: dict | None) -> CpuMachine:
    """`machine` with what the host's measured peaks (the `peaks` memo of
    `cpu/peaks.py`, written by benchmarks/peak.py and the profiler) say pays: the
    bf16 dot product when its one-thread rate is `BF16_DOT_MIN_GAIN` times the FMA's
    at the widest width measured for both."""
    try:
        dot = peaks["bf16_dot"] or {}
        fma = peaks["fma"]["float32"]
        width = max((w for w in dot if w in fma), key=int)
        gain = dot[width]["1"] / fma[width]["1"]
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return machine
    return replace(machine, bf16_dot=gain >= BF16_DOT_MIN_GAIN)


def fingerprint(machine: CpuMachine) -> str:
    """What of the description shapes the code (for the compile cache's key)."""
    return (f"{machine.name}:{machine.resident}" + (":bf16dot" if machine.bf16_dot else ""))


def by_name(name: str) -> CpuMachine:
    for t in MACHINES:
        if t.name == name:
            return t
    raise KeyError(name)


@lru_cache(maxsize=1)
def host() -> CpuMachine:
    flags = _cpu_flags()
    for t in MACHINES:
        if all(f in flags for f in t.requires):
            return replace(t, **_cache_sizes())
    return MACHINES[-1]


def _cpu_flags() -> set[str]:
    flags = {platform.machine().lower()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    flags.update(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    return flags


def _cache_sizes() -> dict:
    """L1d / L2 / L3 sizes of cpu0 from sysfs (what is not found keeps the default)."""
    out = {}
    base = "/sys/devices/system/cpu/cpu0/cache"
    names = {(1, "Data"): "l1d", (2, "Unified"): "l2", (3, "Unified"): "l3"}
    try:
        entries = os.listdir(base)
    except OSError:
        return out
    for entry in entries:
        try:
            level = int(_read(base, entry, "level"))
            kind = _read(base, entry, "type")
            size = _parse_size(_read(base, entry, "size"))
        except (OSError, ValueError):
            continue
        key = names.get((level, kind))
        if key:
            out[key] = size
    return out


def _read(base: str, entry: str, name: str) -> str:
    with open(os.path.join(base, entry, name)) as f:
        return f.read().strip()


def _parse_size(text: str) -> int:
    units = {"K": 1024, "M": 1024 * 1024, "G": 1024 ** 3}
    if text and text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text)


def for_llvm_target(cpu: str | None, features: str | None) -> CpuMachine | None:
    """The description for an ahead-of-time target given as LLVM's CPU name and feature
    string (`+avx2,+fma,...`); None for the host. Only the features are read: a CPU
    named without features gets the most portable entry (its tiles fit any register
    file; a better guess would need LLVM's CPU tables, which passes do not import)."""
    if cpu is None and features is None:
        return None
    flags = {f[1:] for f in (features or "").split(",") if f.startswith("+")}
    for t in MACHINES:
        if t.requires and all(f in flags for f in t.requires):
            return t
    return MACHINES[-1]
