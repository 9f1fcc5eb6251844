"""The host's LLVM target (triple, CPU name, features), without importing llvmlite.

A warm start (cache hit) must not import llvmlite (~100 ms), yet the cache key names the
host CPU. So the facts are computed once with llvmlite and memoised in a small JSON file
in the cache directory, keyed by what the OS says about the machine (architecture, kernel,
/proc/cpuinfo model and flags) and by which llvmlite is installed: a different machine
sharing the cache dir, or a new llvmlite, gets its own entry.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform

from . import paths

_memo: dict | None = None


def host_target() -> dict:
    """{"triple", "cpu", "features"} of this machine."""
    global _memo
    if _memo is None:
        _memo = _load_or_compute()
    return dict(_memo)


def memo_path(kind: str) -> str:
    """The memo file of `kind` ("host": the LLVM facts, "peaks": the measured FLOP/s and
    bandwidth) for this machine, in the cache directory."""
    return os.path.join(paths.cache_dir(), f"{kind}-{_machine_fingerprint()}.json")


def _load_or_compute() -> dict:
    memo_file = memo_path("host")
    try:
        with open(memo_file, encoding="utf-8") as f:
            facts = json.load(f)
        if isinstance(facts, dict) and set(facts) == {"triple", "cpu", "features"}:
            return facts
    except (OSError, ValueError):
        pass
    facts = _compute_with_llvmlite()
    try:
        paths.atomic_write(memo_file, json.dumps(facts).encode())
    except OSError:
        pass                        # a read-only cache dir only costs the llvmlite import
    return facts


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


def resolve_target(options) -> dict:
    """The target a compile is for: the host, or the `--cpu` / features the user named
    (a named CPU without features gets that CPU's defaults, not the host's)."""
    host = host_target()
    if options.cpu is None and options.features is None:
        return host
    cpu = options.cpu or host["cpu"]
    if options.features is not None:
        features = options.features
    else:
        features = "" if options.cpu else host["features"]
    return {"triple": host["triple"], "cpu": cpu, "features": features}
