"""Tuning results on disk: one small JSON file per key, so the second run is instant.

The key covers everything that can change the answer: the kernel's source text (the
factory's or the `.tl` file's), the fixed arguments (shapes, dtypes), the config list,
the target and its options, the host (CPU name, features and thread count) and the
compiler's identity (its version and a fingerprint of its sources). The value is the
best config and its time; the kernel itself comes from the compile cache.
"""
from __future__ import annotations

import hashlib
import json
import os


def key(source_text: str, configs: list, options: dict, threads: int) -> str:
    from ..driver.keys import compiler_identity
    from ..targets.cpu.host import llvm_facts
    parts = {"source": source_text, "configs": configs, "options": options,
             "host": llvm_facts(), "threads": threads, "compiler": compiler_identity()}
    blob = json.dumps(parts, sort_keys=True, default=repr).encode()
    return hashlib.sha256(blob).hexdigest()[:32]


def _path(k: str) -> str:
    from ..driver.paths import cache_dir
    return os.path.join(cache_dir(), "autotune", f"{k}.json")


def load(k: str) -> dict | None:
    from ..driver.paths import cache_disabled
    if cache_disabled():
        return None
    try:
        with open(_path(k), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("config"), dict) else None


def store(k: str, record: dict) -> None:
    from ..driver.paths import cache_disabled
    from ..runtime.cache import atomic_write
    if cache_disabled():
        return
    try:
        atomic_write(_path(k), json.dumps(record, indent=1, default=repr).encode())
    except OSError:
        pass                       # an unwritable cache costs the next run a tuning
