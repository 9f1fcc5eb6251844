"""Source (or IR) in, loaded kernels out, through the disk cache.

    parse -> [canonical IR -> cache key] -> lower -> codegen -> artifact -> cache -> load

A cacheable target (`Target.cacheable`: cpu, whose artifact is a `.so`) goes through the
disk cache: on a warm start of a `.tl` text the source index (keys.source_key -> artifact
key) is hit first, so nothing is parsed and llvmlite is never imported. With the cache
disabled (`TILELANG_DISABLE_CACHE=1`) every call compiles into a private temporary
directory. Any other target compiles on every call and hands over its kernels
(`Target.library`).
"""
from __future__ import annotations

import os
import time

from . import keys, log, paths, stages, store


def build_source(text: str, filename: str, options, out_idx=None):
    """Compile `.tl` text (all kernels, or `options.kernel`) and load it."""
    target = options.target
    if not target.cacheable:
        return build_module(stages.parse_text(text, filename, options), options,
                            out_idx=out_idx)
    cache = None if paths.cache_disabled() else store.ArtifactStore(paths.cache_dir(), target)
    skey = keys.source_key(text, options)
    if cache is not None and not _wants_pass_output(options):
        library = _load_cached(target, cache.lookup_source(skey), out_idx)
        if library is not None:
            log.event("cache_hits", filename)
            return library
    module = stages.parse_text(text, filename, options)
    return build_module(module, options, source_key=skey, label=filename, cache=cache,
                        out_idx=out_idx)


def build_module(module, options, *, source_key=None, label=None, cache=None, out_idx=None):
    """Compile a parsed IR module and load it (the decorators start here). `out_idx`
    becomes the default of the loaded kernels (it does not change the artifact)."""
    target = options.target
    label = label or ", ".join(f.name for f in module.funcs)
    if not target.cacheable:
        return target.library(_compile(module, options, label), options, out_idx)
    if cache is None and not paths.cache_disabled():
        cache = store.ArtifactStore(paths.cache_dir(), target)
    akey = keys.artifact_key(stages.canonical_text(module), options)
    if cache is not None and not _wants_pass_output(options):
        library = _load_cached(target, cache.lookup(akey), out_idx)
        if library is not None:
            if source_key:
                cache.link_source(source_key, akey)
            log.event("cache_hits", label)
            return library
    artifact = _compile(module, options, label, target.artifact)
    if cache is None:
        return target.load(_private_copy(artifact), out_idx)
    try:
        library = _load_cached(target, cache.store(akey, artifact), out_idx)
    except OSError as e:
        # an unwritable cache costs the next process a compile, not this one its kernel
        log.event("cache_unwritable", cache.dir, f"({e.strerror or e})")
        library = None
    if library is None:             # not stored, or removed (`tilec cache clear`) since
        return target.load(_private_copy(artifact), out_idx)
    if source_key:
        cache.link_source(source_key, akey)
    return library


def _load_cached(target, path: str | None, out_idx=None):
    """Load a cache entry's artifact; None when there is none, or when it vanished
    between the lookup and the load (`tilec cache clear` or another process discarding
    it): the caller then compiles, as on a miss. A file that is there but does not load
    is still an error (its checksum was verified a moment ago)."""
    if path is None:
        return None
    from ..diagnostics import ArtifactError
    try:
        return target.load(path, out_idx)
    except (FileNotFoundError, ArtifactError):
        if os.path.exists(path):
            raise
        return None


def _compile(module, options, label: str, finish=lambda compiled: compiled):
    """Lower and codegen `module`, then `finish` it (link, say); logged as a compile."""
    start = time.perf_counter()
    out = finish(stages.compile_module(module, options))
    log.event("compiled", label, f"in {time.perf_counter() - start:.3f} s")
    return out


def _wants_pass_output(options) -> bool:
    """Dumps and verify-each only mean something if the passes really run."""
    return bool(options.dump_after) or options.verify_each


_private_dir: str | None = None


def _private_copy(artifact: bytes) -> str:
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
    with os.fdopen(fd, "wb") as f:
        f.write(artifact)
    return dst
