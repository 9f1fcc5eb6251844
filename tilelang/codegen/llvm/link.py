"""Linking an object file into a shared library with the system C compiler."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from ...diagnostics import codes_codegen as codes
from .context import user_error

COMPILERS = ("cc", "gcc", "clang")


def find_c_compiler() -> str | None:
    """The first of $CC, cc, gcc, clang found on PATH, or None."""
    candidates = ([os.environ["CC"]] if os.environ.get("CC") else []) + list(COMPILERS)
    for name in candidates:
        path = shutil.which(name)
        if path:
            return path
    return None


def link_shared(object_bytes: bytes, path: str) -> str:
    """Write `object_bytes` as a shared library at `path` (linked with libm); returns
    the path. The library is written under a temporary name and renamed into place, so
    a reader never sees a half-written file."""
    cc = find_c_compiler()
    if cc is None:
        raise user_error(codes.NO_C_COMPILER, "no C compiler (cc, gcc or clang) found on PATH",
                         help="install a C compiler, or emit an object file with --emit obj")
    path = os.path.abspath(path)
    out_dir = os.path.dirname(path) or "."
    with tempfile.TemporaryDirectory(prefix="tilelang-link-") as tmp:
        obj = os.path.join(tmp, "kernel.o")
        with open(obj, "wb") as f:
            f.write(object_bytes)
        fd, tmp_so = tempfile.mkstemp(suffix=".so", dir=out_dir)
        os.close(fd)
        try:
            proc = subprocess.run([cc, "-shared", "-o", tmp_so, obj, "-lm"],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise user_error(codes.LINK_FAILED,
                                 f"{os.path.basename(cc)} failed to link {path}:\n"
                                 f"{proc.stderr.strip() or proc.stdout.strip()}")
            os.replace(tmp_so, path)
        finally:
            if os.path.exists(tmp_so):
                os.unlink(tmp_so)
    return path
