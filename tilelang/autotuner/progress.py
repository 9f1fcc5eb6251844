"""The tuner's progress bar: one line on a terminal, redrawn in place; nothing when
stderr is not a terminal (logs and tests stay clean), unless TILELANG_PROGRESS=1."""
from __future__ import annotations

import os
import sys
import time


class Progress:
    def __init__(self, total: int, label: str, stream=None):
        self.total, self.label = max(1, total), label
        self.stream = stream or sys.stderr
        self.done = 0
        self.start = time.perf_counter()
        forced = os.environ.get("TILELANG_PROGRESS", "")
        self.enabled = forced == "1" or (forced != "0" and self.stream.isatty())

    def step(self, note: str = "") -> None:
        self.done += 1
        if self.enabled:
            width = 24
            filled = min(width, int(width * self.done / self.total))
            bar = "#" * filled + "." * (width - filled)
            elapsed = time.perf_counter() - self.start
            self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total} "
                              f"{elapsed:5.1f}s {note}".ljust(100)[:120])
            self.stream.flush()

    def close(self, summary: str = "") -> None:
        if self.enabled:
            self.stream.write(f"\r{self.label}: {summary}".ljust(100) + "\n")
            self.stream.flush()
