"""Launching a grid: block ranges over a persistent thread pool.

A kernel's `name__blocks(args, begin, end)` runs blocks `begin..end-1`; blocks are
independent, so any split is valid. One block, or one thread, runs inline on the calling
thread (no hand-off cost). Otherwise `num_threads` pool workers grab chunks of blocks from
a shared counter until none are left while the caller waits (ThreadPool says why); ctypes
releases the GIL during each call, so the chunks really run in parallel.
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

    __slots__ = ("fn", "args", "n", "chunk", "next_chunk", "lock", "done", "finished", "error",
                 "pin")

    def __init__(self, fn, args, n: int, chunk: int):
        self.fn, self.args, self.n, self.chunk = fn, args, n, chunk
        self.next_chunk = itertools.count().__next__   # atomic under the GIL
        self.lock = threading.Lock()
        self.done = 0                                   # blocks finished
        self.finished = threading.Event()
        self.error: BaseException | None = None
        self.pin = False                                # workers pin to their CPU first

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
    """Daemon worker threads, each with its own queue; grown on demand, never shrunk.

    A multi-threaded launch hands its job to workers 0..t-1 and the caller waits. When
    the launch spans every CPU the process may use, worker k first pins itself to the
    k-th of them: woken after an idle spell, an unpinned worker was often placed on
    the caller's CPU (the scheduler's wake-affine choice) and the two time-shared one
    core for milliseconds, so a 2-thread GEMM of 1000^3 ran at the speed of one (median
    130 vs 187 GFLOP/s after 0.5 s idle). The caller's thread is the user's and is never
    pinned, so it does no blocks itself. A launch on fewer threads leaves the workers
    unpinned, so that several processes sharing a machine spread over it."""

    def __init__(self):
        self._reset()
        if hasattr(os, "register_at_fork"):
            # A forked child has none of the parent's threads: start from an empty pool
            # (else its launches would queue work that no thread ever takes).
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._queues: list[queue.SimpleQueue] = []
        self._workers: list[threading.Thread] = []
        self._grow_lock = threading.Lock()
        self._cpus = _allowed_cpus()

    @property
    def size(self) -> int:
        return len(self._workers)

    def _ensure(self, n: int) -> None:
        if len(self._workers) >= n:
            return
        with self._grow_lock:
            while len(self._workers) < n:
                k = len(self._workers)
                q: queue.SimpleQueue = queue.SimpleQueue()
                t = threading.Thread(target=self._loop, args=(k, q), daemon=True,
                                     name=f"tilelang-worker-{k}")
                t.start()
                self._queues.append(q)
                self._workers.append(t)

    def _loop(self, index: int, q: queue.SimpleQueue) -> None:
        cpus = self._cpus
        mine = cpus[index % len(cpus)] if cpus else None
        pinned = False
        while True:
            job = q.get()
            if job.pin != pinned and mine is not None:
                pinned = _set_affinity({mine} if job.pin else set(cpus)) and job.pin
            job.work()

    def run(self, fn, args, n: int, num_threads: int) -> None:
        """Run blocks 0..n-1 of `fn` on `min(num_threads, n)` workers; wait for them."""
        workers = min(num_threads, n)
        chunk = max(1, -(-n // (workers * CHUNKS_PER_THREAD)))
        job = _Job(fn, args, n, chunk)
        job.pin = bool(self._cpus) and num_threads >= len(self._cpus)
        self._ensure(workers)
        for q in self._queues[:workers]:
            q.put(job)
        job.finished.wait()
        if job.error is not None:
            raise job.error


def _allowed_cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:          # not on Linux: no pinning
        return []


def _set_affinity(cpus: set) -> bool:
    try:
        os.sched_setaffinity(0, cpus)
        return True
    except OSError:                 # a CPU went offline or left the cpuset: run unpinned
        return False


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
