"""Passes over the IR: the pass manager and one module per pass (see manager.py). The
pipelines are the targets' (`tilelang.targets`)."""
from .manager import Pass, PassManager

__all__ = ["Pass", "PassManager"]
