"""Launching a grid: block ranges over a persistent thread pool.

A kernel's `name__blocks(args, begin, end)` runs blocks `begin..end-1`; blocks are
independent, so any split is valid. One block, or one thread, runs inline on the calling
thread (no hand-off cost). Otherwise the caller and up to `num_threads - 1` pool workers
grab chunks of blocks from a shared counter until none are left; ctypes releases the GIL
during each call, so the chunks really run in parallel.
"""
from __future__ import annotations

import itertools
import os
import queue
import threading

from .errors import LaunchTypeError, LaunchValueError, codes

CHUNKS_PER_THREAD = 4     # dynamic balance for uneven blocks without many hand-offs


def default_num_threads() -> int:
    """`TILELANG_NUM_THREADS`, else the cores this process may run on."""
    env = os.environ.get("TILELANG_NUM_THREADS", "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if n < 1:
            raise LaunchValueError(f"TILELANG_NUM_THREADS must be a positive integer, got "
                                   f"{env!r}", codes.BAD_OPTION)
        return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:          # not on Linux
        return os.cpu_count() or 1


def check_num_threads(n) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise LaunchTypeError(f"num_threads must be a positive int, got {n!r}",
                              codes.BAD_OPTION)
    if n < 1:
        raise LaunchValueError(f"num_threads must be at least 1, got {n}", codes.BAD_OPTION)
    return n


class _Job:
    """One multi-threaded launch: a chunk counter shared by the participating threads."""

    __slots__ = ("fn", "args", "n", "chunk", "next_chunk", "lock", "done", "finished", "error")

    def __init__(self, fn, args, n: int, chunk: int):
        self.fn, self.args, self.n, self.chunk = fn, args, n, chunk
        self.next_chunk = itertools.count().__next__   # atomic under the GIL
        self.lock = threading.Lock()
        self.done = 0                                   # blocks finished
        self.finished = threading.Event()
        self.error: BaseException | None = None

    def work(self) -> None:
        fn, args, n, chunk = self.fn, self.args, self.n, self.chunk
        while True:
            begin = self.next_chunk() * chunk
            if begin >= n:
                return
            end = min(begin + chunk, n)
            try:
                fn(args, begin, end)
            except BaseException as e:   # keep the count right so the caller wakes up
                self.error = e
            with self.lock:
                self.done += end - begin
                if self.done >= n:
                    self.finished.set()


class ThreadPool:
    """Daemon worker threads fed through a queue; grown on demand, never shrunk."""

    def __init__(self):
        self._reset()
        if hasattr(os, "register_at_fork"):
            # A forked child has none of the parent's threads: start from an empty pool
            # (else its launches would queue work that no thread ever takes).
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._grow_lock = threading.Lock()

    @property
    def size(self) -> int:
        return len(self._workers)

    def _ensure(self, n: int) -> None:
        if len(self._workers) >= n:
            return
        with self._grow_lock:
            while len(self._workers) < n:
                t = threading.Thread(target=self._loop, daemon=True,
                                     name=f"tilelang-worker-{len(self._workers)}")
                t.start()
                self._workers.append(t)

    def _loop(self) -> None:
        get = self._queue.get
        while True:
            get().work()

    def run(self, fn, args, n: int, num_threads: int) -> None:
        """Run blocks 0..n-1 of `fn` on the caller plus `num_threads - 1` workers."""
        helpers = min(num_threads, n) - 1
        chunk = max(1, -(-n // ((helpers + 1) * CHUNKS_PER_THREAD)))
        job = _Job(fn, args, n, chunk)
        self._ensure(helpers)
        put = self._queue.put
        for _ in range(helpers):
            put(job)
        job.work()
        if job.done < n:
            job.finished.wait()
        if job.error is not None:
            raise job.error


_POOL = ThreadPool()
_DEFAULT_THREADS: list = []        # resolved on first use, so env changes before it count


def launch(blocks_fn, num_blocks_fn, args, num_threads: int | None = None) -> None:
    """Run every block of a kernel for the packed `args`."""
    n = num_blocks_fn(args)
    if n <= 0:
        return
    if num_threads is None:
        if not _DEFAULT_THREADS:
            _DEFAULT_THREADS.append(default_num_threads())
        num_threads = _DEFAULT_THREADS[0]
    if n == 1 or num_threads == 1:
        blocks_fn(args, 0, n)
    else:
        _POOL.run(blocks_fn, args, n, num_threads)


def reset_default_threads() -> None:
    """Forget the resolved default, so a changed `TILELANG_NUM_THREADS` takes effect."""
    _DEFAULT_THREADS.clear()
