"""The host memo: what the compiler knows of this machine, without importing llvmlite.

A warm start (cache hit) must not import llvmlite (~100 ms), yet the cache key names the
host CPU. So the facts are computed once and memoised in a small JSON file in the cache
directory, keyed by what the OS says about the machine (architecture, kernel,
/proc/cpuinfo model and flags) and by which llvmlite is installed: a different machine
sharing the cache dir, or a new llvmlite, gets its own entry.

The "host" memo holds LLVM's view (`triple`, `cpu`, `features`); beside it, the "peaks"
memo holds the FLOP/s and bandwidth measured on the host (`benchmarks/peak.py`, the
profiler), which `CpuTarget.roofline_peaks` reads (`read_memo("peaks")`). Measured figures
feed what tolerates noise (roofline figures, a tuner's model); code generation reads only
the LLVM facts and the machine description they select, so compiled code stays
deterministic and only quantised values enter the cache key.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform

LLVM_FACTS = ("triple", "cpu", "features")

_memo: dict | None = None


def llvm_facts() -> dict:
    """{"triple", "cpu", "features"} of this machine, as LLVM names them."""
    global _memo
    if _memo is None:
        _memo = _load_or_compute()
    return {k: _memo[k] for k in LLVM_FACTS}


def memo_path(kind: str) -> str:
    """The memo file of `kind` for this machine, in the cache directory: "host" (the LLVM
    facts, this module's), "peaks" (the FLOP/s and bandwidth `benchmarks/peak.py` and the
    profiler measure, which `CpuTarget.roofline_peaks` reads)."""
    from ...runtime.cache import default_dir
    root = os.path.abspath(os.path.expanduser(default_dir()))
    return os.path.join(root, f"{kind}-{_machine_fingerprint()}.json")


def read_memo(kind: str) -> dict | None:
    """The memo of `kind` for this machine, or None (absent or unreadable)."""
    try:
        with open(memo_path(kind), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _memo_file() -> str:
    return memo_path("host")


def _load_or_compute() -> dict:
    """The memoised facts when the memo is intact, else computed (and memoised). The
    memo carries a checksum of its facts and of the machine fingerprint: an edited or
    damaged memo (a wrong CPU name broke every compile) is recomputed, not used."""
    try:
        with open(_memo_file(), encoding="utf-8") as f:
            memo = json.load(f)
        if isinstance(memo, dict) and all(isinstance(memo.get(k), str) for k in LLVM_FACTS) \
                and memo.get("check") == _check(memo):
            return memo
    except (OSError, ValueError):
        pass
    memo = _compute_with_llvmlite()
    _write(memo)
    return memo


def _check(memo: dict) -> str:
    text = json.dumps([_machine_fingerprint()] + [memo[k] for k in LLVM_FACTS])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _write(memo: dict) -> None:
    from ...runtime.cache import atomic_write
    try:
        record = dict(memo, check=_check(memo))
        atomic_write(_memo_file(), json.dumps(record, sort_keys=True).encode())
    except OSError:
        pass                        # a read-only cache dir only costs the llvmlite import


def _compute_with_llvmlite() -> dict:
    import llvmlite.binding as llvm
    return {"triple": llvm.get_process_triple(), "cpu": llvm.get_host_cpu_name(),
            "features": llvm.get_host_cpu_features().flatten()}


def _machine_fingerprint() -> str:
    h = hashlib.sha256()
    for part in (platform.machine(), platform.system(), platform.release(),
                 _cpuinfo_facts(), llvmlite_fingerprint()):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:16]


def _cpuinfo_facts() -> str:
    """The CPU model and flag lines of the first processor (Linux); empty elsewhere."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            text = f.read(65536)
    except OSError:
        return platform.processor()
    wanted = ("model name", "flags", "vendor_id", "cpu family", "model\t", "Features", "CPU part")
    lines = []
    for line in text.splitlines():
        if not line.strip():
            break                   # end of the first processor's block
        if line.startswith(wanted):
            lines.append(line)
    return "\n".join(lines)


def llvmlite_fingerprint() -> str:
    """Which llvmlite is installed (its location and build time), found without importing it."""
    spec = importlib.util.find_spec("llvmlite")
    if spec is None or not spec.origin:
        return "no-llvmlite"
    try:
        st = os.stat(spec.origin)
    except OSError:
        return spec.origin
    return f"{spec.origin}:{st.st_size}:{st.st_mtime_ns}"
