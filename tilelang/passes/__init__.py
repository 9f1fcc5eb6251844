"""Passes over the IR: the pass manager and one module per pass (see manager.py)."""
from .manager import Pass, PassManager, pipeline, list_passes, run_until

__all__ = ["Pass", "PassManager", "pipeline", "list_passes", "run_until"]
