"""The host's peaks, measured: FMA FLOP/s per vector width, dtype and thread count,
streaming read and copy bandwidth, the read bandwidth of the L2 and L3 caches, and the
native bf16 dot-product (and AMX) rates where the CPU has them. The CPU roofline of the
profiler is drawn from these figures.

Each figure comes from a loop compiled here with llvmlite for the host CPU
(`peakloops.py`) and run through ctypes (which releases the GIL, so n Python threads
run it on n cores):

* FMA: `acc_i = fma(acc_i, x, y)` over A independent vector accumulators (enough to
  cover the FMA latency times the number of FMA ports), x and y read from memory, every
  accumulator summed into the result, which is checked against the closed form, so
  no compiler can drop or shorten the work;
* bf16 dot: the same with `vdpbf16ps` (4 FLOP per float lane: two products, two adds);
* read: a vector sum over a buffer several times the last-level cache, compared with
  numpy's sum; copy: a vector copy of such a buffer (bytes read + bytes written);
* L2 / L3 read: the same sum repeated over a working set that stays in that cache
  (`cache_working_sets`), the passes' sums checked.

The compute loops are timed by each thread's CPU time (a neighbour taking the core for a
while on a shared machine does not lower the peak), the streams by the wall clock (the
memory bandwidth is shared by whoever runs). `FmaProbe` is the FMA loop as one side of a
benchmark's alternating turns (benchmarks/gemm.py sets each kernel beside it).

`measure()` returns the figures as a dict (what the memo holds), with the load average
they were measured at and how long that took; `load()` / `store()` keep them in the
host memo of the cache directory, keyed by the machine's fingerprint. `host_peaks()` is
what the profiler reads: it measures briefly when there is no memo, and again when the
memo is provisional (quick, or taken with more than half the cores busy) and the host
is quieter now, keeping the higher of each old and new figure (`merged`: peaks only go
up). `benchmarks/peak.py` measures in full and replaces the memo.
"""
from __future__ import annotations

import ctypes
import json
import os
import threading
import time

import numpy as np

from ..targets.cpu.peaks import FORMAT, READS   # the memo's layout, which the cpu target reads
from .peakloops import (_Jit, bf16_dot_loop_ir, fma_loop_ir, read_passes_ir,  # noqa: F401
                        stream_ir)

_FMA_ACCUMULATORS = {128: 12, 256: 12, 512: 16}   # FMA latency (4) x ports (2), headroom
_X, _Y = 0.999, 0.001                              # acc -> acc * x + y stays finite


# ----------------------------------------------------------------------------- host facts

def cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def vector_widths(flags: set[str]) -> list[int]:
    """The vector widths (bits) the host executes natively."""
    widths = [128]
    if "avx" in flags or "avx2" in flags:
        widths.append(256)
    if "avx512f" in flags:
        widths.append(512)
    return widths


def thread_counts() -> list[int]:
    n = _cores()
    counts = sorted({1, n} | {2 ** k for k in range(1, n.bit_length()) if 2 ** k < n})
    return counts


# ----------------------------------------------------------------------------- running

def _run_threads(fn, args_per_thread: list[tuple], cpu_time: bool = False,
                 in_thread: bool = False) -> float:
    """Run `fn(*args)` once per entry on its own thread, all together; wall seconds, or
    with `cpu_time` the longest CPU time of one thread: what the cores took while they
    ran the loop, unaffected by other processes taking a core for a while on a shared
    machine (the compute peaks; a bandwidth is shared by whoever runs, so it is timed
    by the wall clock). `in_thread`: the longest wall time of one thread's call, timed
    in the thread (without waking and joining the threads: runs of a millisecond)."""
    barrier = threading.Barrier(len(args_per_thread) + 1)
    errors: list = []
    cpu: list[float] = []
    wall: list[float] = []

    def work(args):
        barrier.wait()
        start_cpu, start_wall = time.thread_time(), time.perf_counter()
        try:
            fn(*args)
        except BaseException as e:      # noqa: BLE001 - reported below
            errors.append(e)
        wall.append(time.perf_counter() - start_wall)
        cpu.append(time.thread_time() - start_cpu)
    threads = [threading.Thread(target=work, args=(a,)) for a in args_per_thread]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    if cpu_time or in_thread:
        return max(cpu if cpu_time else wall)
    return time.perf_counter() - start


def _flop_rate(fn, iters: int, flops_per_iter: int, threads: int, check, seconds: float,
               repeats: int) -> float:
    """Best aggregate FLOP/s of `threads` threads each running `fn(iters)` (by their CPU
    time), with the iteration count grown until one run lasts about `seconds`."""
    def run(out_list):
        return _run_threads(lambda out: fn(iters, out), [(o,) for o in out_list], cpu_time=True)
    while True:
        outs = [np.zeros(64, np.float64) for _ in range(threads)]
        wall = run(outs)
        if wall >= seconds or iters > 1 << 40:
            break
        iters = int(iters * max(2.0, 1.2 * seconds / max(wall, 1e-6)))
    best = wall
    for _ in range(repeats - 1):
        outs = [np.zeros(64, np.float64) for _ in range(threads)]
        best = min(best, run(outs))
    for o in outs:
        check(o, iters)
    return iters * flops_per_iter * threads / best


class _FmaKernel:
    def __init__(self, jit, name, lanes, np_dtype, accumulators):
        self.jit = jit                   # the engine owns the code: keep it alive
        self.fn = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)(
            jit.address(name))
        self.lanes, self.accumulators, self.np_dtype = lanes, accumulators, np_dtype
        self.xy = np.concatenate([np.full(lanes, _X), np.full(lanes, _Y)]).astype(np_dtype)

    def __call__(self, iters, out):
        buf = out.view(self.np_dtype)
        self.fn(iters, self.xy.ctypes.data, buf.ctypes.data)

    def check(self, out, iters):
        """The sum of the accumulators is A * (fixed point of acc -> acc * x + y),
        reached after enough iterations, in every lane."""
        got = out.view(self.np_dtype)[:self.lanes].astype(np.float64)
        want = self.accumulators * (1 - _X ** iters) * _Y / (1 - _X)
        if not np.allclose(got, want, rtol=1e-2):
            raise RuntimeError(f"FMA loop gave {got[0]}, expected {want}")


def measure_fma(jit, widths, counts, seconds, repeats) -> dict:
    out = {}
    for dtype, elem, np_dtype, bits in (("float32", "float", np.float32, 32),
                                        ("float64", "double", np.float64, 64)):
        per_width = {}
        for width in widths:
            lanes = width // bits
            k = _FmaKernel(jit, f"fma_{elem}_{width}", lanes, np_dtype,
                           _FMA_ACCUMULATORS[width])
            per_width[str(width)] = {
                str(t): _flop_rate(k, 1000, 2 * lanes * k.accumulators, t, k.check, seconds,
                                   repeats) for t in counts}
        out[dtype] = per_width
    return out


class FmaProbe:
    """The host's widest float32 FMA loop as one side of a benchmark's turns: each call
    runs a fixed number of iterations (about `seconds` on one core) on `threads` threads,
    so a kernel's rate is set beside the peak measured in the same spells of a shared
    machine. With one thread the loop runs on the calling thread (a caller may time it
    by its CPU time, as it times the kernel); with more, on that many threads together.
    `flops` is the work of one call."""

    def __init__(self, threads: int = 1, seconds: float = 0.02):
        width = max(vector_widths(cpu_flags()))
        lanes, acc = width // 32, _FMA_ACCUMULATORS[width]
        name = f"fma_float_{width}"
        self.kernel = _FmaKernel(_Jit(fma_loop_ir(name, lanes, "float", acc)), name, lanes,
                                 np.float32, acc)
        self.threads = threads
        self.outs = [np.zeros(64, np.float64) for _ in range(threads)]
        self.iters = 1000
        while True:                                     # calibrate on one thread
            start = time.thread_time()
            self.kernel(self.iters, self.outs[0])
            took = time.thread_time() - start
            if took >= seconds / 4 or self.iters > 1 << 40:
                break
            self.iters *= 4
        self.iters = max(1, int(self.iters * seconds / max(took, 1e-9)))
        self.flops = self.iters * 2 * lanes * acc * threads

    def __call__(self) -> None:
        if self.threads == 1:
            self.kernel(self.iters, self.outs[0])
        else:
            _run_threads(lambda out: self.kernel(self.iters, out), [(o,) for o in self.outs])
        for o in self.outs:
            self.kernel.check(o, self.iters)


class _DotKernel:
    def __init__(self, jit, name, lanes, accumulators):
        import ml_dtypes
        self.jit = jit
        self.fn = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)(
            jit.address(name))
        self.lanes, self.accumulators = lanes, accumulators
        # each lane: acc += a0*b0 + a1*b1 with a = 0.5, b = 2^-10: grows by 2^-10 a step
        self.ab = np.concatenate([np.full(2 * lanes, 0.5), np.full(2 * lanes, 2.0 ** -10)]
                                 ).astype(ml_dtypes.bfloat16)

    def __call__(self, iters, out):
        self.fn(iters, self.ab.ctypes.data, out.view(np.float32).ctypes.data)

    def check(self, out, iters):
        got = float(out.view(np.float32)[0])
        want = self.accumulators * iters * 2.0 ** -10
        # float32 accumulation of a small step stalls once acc is large: a lower bound
        if not (got > 0 and got <= want * 1.01):
            raise RuntimeError(f"bf16 dot loop gave {got}, expected up to {want}")


def measure_bf16_dot(jit, widths, counts, seconds, repeats) -> dict:
    out = {}
    for width in widths:
        lanes = width // 32
        k = _DotKernel(jit, f"dot_bf16_{width}", lanes, _FMA_ACCUMULATORS[width])
        out[str(width)] = {str(t): _flop_rate(k, 1000, 4 * lanes * k.accumulators, t,
                                              k.check, seconds, repeats) for t in counts}
    return out


def measure_bandwidth(counts, nbytes: int, repeats: int) -> dict:
    """{"read": {threads: bytes/s}, "copy": {threads: bytes/s}} over `nbytes` buffers
    (copy: bytes read + bytes written)."""
    jit = _Jit(stream_ir())
    read = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_void_p, ctypes.c_int64)(
        jit.address("read_sum"))
    copy = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
        jit.address("copy"))
    n = nbytes // 4 // 256 * 256                   # whole groups of 4 vectors per thread
    src = np.ones(n, np.float32)
    dst = np.zeros(n, np.float32)
    out = {"read": {}, "copy": {}}
    for t in counts:
        part = n // t // 32 * 32
        sums = [0.0] * t

        def read_part(i):
            sums[i] = read(src.ctypes.data + 4 * i * part, part // 8)

        def copy_part(i):
            copy(dst.ctypes.data + 4 * i * part, src.ctypes.data + 4 * i * part, part // 8)
        best_r = min(_run_threads(read_part, [(i,) for i in range(t)]) for _ in range(repeats))
        if abs(sum(sums) - part * t) > 1e-3 * part * t:
            raise RuntimeError(f"read loop summed {sum(sums)}, expected {part * t}")
        best_c = min(_run_threads(copy_part, [(i,) for i in range(t)]) for _ in range(repeats))
        if dst[part * t - 1] != 1.0:
            raise RuntimeError("copy loop did not copy")
        out["read"][str(t)] = 4 * part * t / best_r
        out["copy"][str(t)] = 2 * 4 * part * t / best_c
    return out


def cache_working_sets(l2: int, l3: int, threads: int) -> dict:
    """{"l2": bytes, "l3": bytes}: the working sets (all threads together) the cache read
    ceilings are measured over on `threads` threads: half of each thread's L2; an eighth
    of the shared L3 (neighbours and the hardware's replacement leave a streamed set
    only part of it: on a 260 MiB L3 shared with other work, 64 MiB read at the L3's
    rate and 128 MiB at half of it), but at least four times the threads' L2s. The L3
    is left out when that set would not fit half of it."""
    sets = {"l2": threads * l2 // 2}
    l3_set = max(l3 // 8, 4 * threads * l2)
    if l3_set <= l3 // 2:
        sets["l3"] = l3_set
    return sets


def measure_cache_reads(counts, l2: int, l3: int, seconds: float, spell: float = 0.0005
                        ) -> dict:
    """{"l2" | "l3": {threads: bytes/s}}: the read-sum of `measure_bandwidth`, repeated
    over a working set that fits the level (`cache_working_sets`), each thread reading
    its own part, timed by the wall clock (in the threads, from their common start to
    the last one's end) once a first pass has brought it in. The passes of one run are
    grown to last about `spell`, and the best of the runs made in `seconds` is kept: a
    short spell no neighbour interrupted, as the profile keeps a kernel's least call
    (on a shared host, runs of a few milliseconds already read half the rate)."""
    jit = _Jit(stream_ir() + "\n" + read_passes_ir())
    read_sum = jit.address("read_sum")
    passes_fn = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_int64, ctypes.c_int64)(jit.address("read_passes"))
    out: dict = {}
    for t in counts:
        for level, nbytes in cache_working_sets(l2, l3, t).items():
            part = nbytes // 4 // t // 256 * 256       # floats per thread, whole groups
            src = np.ones(part * t, np.float32)
            sums = [0.0] * t

            def run(passes):
                def read_part(i):
                    sums[i] = passes_fn(read_sum, src.ctypes.data + 4 * i * part,
                                        part // 8, passes)
                return _run_threads(read_part, [(i,) for i in range(t)], in_thread=True)
            passes, wall = 1, run(1)                       # the first brings it in
            while wall < spell and passes < 1 << 30:
                passes = int(passes * max(2.0, 1.2 * spell / max(wall, 1e-6)))
                wall = run(passes)
            best, spent = wall, 0.0
            while spent < seconds:
                wall = run(passes)
                best, spent = min(best, wall), spent + wall
            if abs(sum(sums) - part * t * passes) > 1e-3 * part * t * passes:
                raise RuntimeError(f"{level} read loop summed {sum(sums)}, expected "
                                   f"{part * t * passes}")
            out.setdefault(level, {})[str(t)] = 4 * part * t * passes / best
    return out


def _fma_module(widths) -> str:
    parts = []
    for elem, bits in (("float", 32), ("double", 64)):
        for w in widths:
            parts.append(fma_loop_ir(f"fma_{elem}_{w}", w // bits, elem, _FMA_ACCUMULATORS[w]))
    return "\n".join(parts)


def bf16_widths(flags: set[str]) -> list[int]:
    if "avx512_bf16" not in flags:
        return []
    return [256, 512] if "avx512vl" in flags else [512]


def measure(quick: bool = False, counts=None) -> dict:
    """Every figure this host supports (see the module docstring), with the load average
    it was measured at and how long it took. `quick` spends about a second in all (the
    profiler's first run on a host); the benchmark does not."""
    from ..targets.cpu.machine import host          # sysfs, as the block choice reads it
    started, load = time.perf_counter(), current_load()
    flags = cpu_flags()
    widths = vector_widths(flags)
    counts = counts or thread_counts()
    seconds, repeats = (0.02, 2) if quick else (0.2, 3)
    caches = {"l2": host().l2, "l3": host().l3}
    llc = caches["l3"]
    stream_bytes = min(max(2 * llc, 64 << 20), 1 << 30) if not quick else min(2 * llc, 256 << 20)
    result = {"format": FORMAT, "quick": quick, "cpu": _cpu_model(),
              "threads": [str(t) for t in counts], "vector_widths": widths,
              "fma": measure_fma(_Jit(_fma_module(widths)), widths, counts, seconds, repeats),
              "bandwidth": measure_bandwidth(counts, stream_bytes, repeats),
              "stream_bytes": stream_bytes, "caches": caches,
              "cache_read": measure_cache_reads(counts, caches["l2"], caches["l3"],
                                                max(seconds, 0.05))}
    dot_widths = bf16_widths(flags)
    if dot_widths:
        ir_text = "\n".join(bf16_dot_loop_ir(f"dot_bf16_{w}", w // 32, _FMA_ACCUMULATORS[w])
                            for w in dot_widths)
        result["bf16_dot"] = measure_bf16_dot(_Jit(ir_text), dot_widths, counts, seconds,
                                              repeats)
    else:
        result["bf16_dot"] = None
    result["amx"] = None if not {"amx_tile", "amx_bf16"} <= flags else "present, not measured"
    result.update(load=load, cores=_cores(), seconds=time.perf_counter() - started)
    return result


def current_load() -> float:
    """The one-minute load average (0 where the OS has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()


# ----------------------------------------------------------------------------- the memo

def memo_path() -> str:
    from ..targets.cpu.host import memo_path as host_memo_path
    return host_memo_path("peaks")


def load() -> dict | None:
    """The memoised figures of this host, or None (a memo of an older layout is read as
    it is: the figures it lacks were not measured)."""
    try:
        with open(memo_path(), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") in READS else None


def store(figures: dict) -> None:
    from ..runtime.cache import atomic_write
    try:
        atomic_write(memo_path(), json.dumps(figures, indent=1).encode())
    except OSError:
        pass                      # a read-only cache dir costs a re-measurement


def provisional(figures: dict) -> bool:
    """Figures to measure again: a quick measurement, or one taken while more than half
    the cores were busy with other work (its figures are low)."""
    load_then = figures.get("load")
    busy = load_then is not None and load_then > figures.get("cores", _cores()) / 2
    return bool(figures.get("quick")) or busy


def quieter_now(figures: dict, load_now: float) -> bool:
    """Whether a profile now should measure a provisional memo again: the host is at
    most half busy and at least half a core less busy than when it was measured (a
    quick memo of a quiet host is as good as a quick measurement gets: only
    `benchmarks/peak.py` replaces it)."""
    cores = figures.get("cores", _cores())
    load_then = figures.get("load", float("inf"))
    return load_now <= cores / 2 and load_now <= load_then - 0.5


def merged(old: dict, new: dict) -> dict:
    """`new` with, for each figure `old` has too, the higher of the two: a peak only
    goes up (a low one was measured under load). On another CPU or other thread counts
    `new` replaces `old` whole."""
    if old.get("cpu") != new.get("cpu") or old.get("threads") != new.get("threads"):
        return new
    out = dict(new)
    for kind in ("fma", "bf16_dot", "bandwidth", "cache_read"):
        if isinstance(old.get(kind), dict) and isinstance(new.get(kind), dict):
            out[kind] = _higher(old[kind], new[kind])
    return out


def _higher(old, new):
    if isinstance(old, dict) and isinstance(new, dict):
        return {k: _higher(old[k], v) if k in old else v for k, v in new.items()} | \
               {k: v for k, v in old.items() if k not in new}
    if isinstance(old, (int, float)) and isinstance(new, (int, float)):
        return max(old, new)
    return new


def host_peaks(measure_if_missing: bool = True) -> dict | None:
    """The memo; measured quickly and stored first if there is none, or measured again
    and merged (`merged`) when it is provisional and the host is quieter now
    (`benchmarks/peak.py` measures in full and replaces it)."""
    data = load()
    if not measure_if_missing:
        return data
    if data is None:
        data = measure(quick=True)
        store(data)
    elif provisional(data) and quieter_now(data, current_load()):
        data = merged(data, measure(quick=True))
        store(data)
    return data
