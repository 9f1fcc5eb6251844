"""One diagnostic type for every layer (parser, type checker, passes, runtime).

A leaf package: imports nothing else of tilelang, so the compiler-free runtime may use it.
"""
from .core import (ArtifactError, Diagnostic, Label, TileLangError, InternalError, SourceMap,
                   render, render_json)
from .codes import CODES, explain

__all__ = ["Diagnostic", "Label", "TileLangError", "InternalError", "ArtifactError",
           "SourceMap", "render", "render_json", "CODES", "explain"]
