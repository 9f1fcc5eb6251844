"""Source (or IR) in, loaded `Library` out, through the disk cache.

    parse -> [canonical IR -> cache key] -> lower -> codegen -> link .so -> cache -> load

On a warm start of a `.tl` text the source index (keys.source_key -> artifact key) is hit
first, so nothing is parsed and llvmlite is never imported. With the cache disabled
(`TILELANG_DISABLE_CACHE=1`) every call compiles into a private temporary directory.
A tcsim target compiles to simulated kernels instead (driver/tcsim.py, not cached).
"""
from __future__ import annotations

import os
import time

from . import keys, log, paths, stages, store, tcsim
from .host import resolve_target
from .options import is_tcsim
from .store import SO_NAME


def build_source(text: str, filename: str, options, out_idx=None):
    """Compile `.tl` text (all kernels, or `options.kernel`) and load it."""
    if is_tcsim(options.target):
        return tcsim.load_library(stages.parse_text(text, filename, options), options,
                                  out_idx)
    target = resolve_target(options)
    cache = None if paths.cache_disabled() else store.ArtifactStore(paths.cache_dir())
    skey = keys.source_key(text, options, target)
    if cache is not None and not _wants_pass_output(options):
        hit = cache.lookup_source(skey)
        if hit is not None:
            log.event("cache_hits", filename)
            return _load(hit, out_idx)
    module = stages.parse_text(text, filename, options)
    return build_module(module, options, target=target, source_key=skey, label=filename,
                        cache=cache, out_idx=out_idx)


def build_module(module, options, *, target=None, source_key=None, label=None, cache=None,
                 out_idx=None):
    """Compile a parsed IR module and load it (the decorators start here). `out_idx`
    becomes the default of the loaded kernels (it does not change the artifact)."""
    if is_tcsim(options.target):
        return tcsim.load_library(module, options, out_idx)
    target = target or resolve_target(options)
    if cache is None and not paths.cache_disabled():
        cache = store.ArtifactStore(paths.cache_dir())
    label = label or ", ".join(f.name for f in module.funcs)
    akey = keys.artifact_key(stages.canonical_text(module), options, target)
    if cache is not None and not _wants_pass_output(options):
        hit = cache.lookup(akey)
        if hit is not None:
            if source_key:
                cache.link_source(source_key, akey)
            log.event("cache_hits", label)
            return _load(hit, out_idx)
    import tempfile                # only a miss needs it (a warm start stays lean)
    with tempfile.TemporaryDirectory(prefix="tilelang-build-") as tmp:
        so_path = os.path.join(tmp, SO_NAME)
        seconds = _compile_to(module, options, target, so_path)
        log.event("compiled", label, f"in {seconds:.3f} s")
        if cache is None:
            return _load(_private_copy(so_path), out_idx)
        try:
            path = cache.store(akey, so_path)
        except OSError as e:
            # an unwritable cache costs the next process a compile, not this one its kernel
            log.event("cache_unwritable", cache.dir, f"({e.strerror or e})")
            return _load(_private_copy(so_path), out_idx)
    if source_key:
        cache.link_source(source_key, akey)
    return _load(path, out_idx)


def _compile_to(module, options, target, so_path: str) -> float:
    start = time.perf_counter()
    compiled = stages.compile_object(module, options, target)
    stages.link(compiled, so_path)
    return time.perf_counter() - start


def _wants_pass_output(options) -> bool:
    """Dumps and verify-each only mean something if the passes really run."""
    return bool(options.dump_after) or options.verify_each


def _load(path: str, out_idx=None):
    from ..runtime.artifact import load
    return load(path, out_idx=out_idx)


_private_dir: str | None = None


def _private_copy(so_path: str) -> str:
    """With the cache off, artifacts live in a per-process directory removed at exit
    (each under a fresh name: a process may compile the same kernel twice, and the
    dynamic loader would hand back the first library for a reused path)."""
    global _private_dir
    import atexit
    import shutil
    import tempfile
    if _private_dir is None:
        _private_dir = tempfile.mkdtemp(prefix="tilelang-nocache-")
        atexit.register(shutil.rmtree, _private_dir, True)
    fd, dst = tempfile.mkstemp(dir=_private_dir, suffix=".so")
    os.close(fd)
    shutil.copyfile(so_path, dst)
    return dst
