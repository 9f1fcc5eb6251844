"""Exceptions raised at launch: ordinary `TypeError` / `ValueError` that also carry a
diagnostic code (TL06xx), so callers may catch the builtin types while the CLI can point
at `tilec explain`. An artifact that cannot be loaded raises `ArtifactError`
(`tilelang.diagnostics`), the one such error type of every target."""
from __future__ import annotations

from ..diagnostics import codes_runtime as codes


class LaunchTypeError(TypeError):
    def __init__(self, message: str, code: str, argument: str | None = None):
        super().__init__(message)
        self.code = code
        self.argument = argument


class LaunchValueError(ValueError):
    def __init__(self, message: str, code: str, argument: str | None = None):
        super().__init__(message)
        self.code = code
        self.argument = argument


__all__ = ["LaunchTypeError", "LaunchValueError", "codes"]
