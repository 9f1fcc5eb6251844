"""The host's peaks, measured: FMA FLOP/s per vector width, dtype and thread count,
streaming read and copy bandwidth, and the native bf16 dot-product (and AMX) rates
where the CPU has them. The CPU roofline of the profiler is drawn from these figures.

Each figure comes from a loop compiled here with llvmlite for the host CPU and run
through ctypes (which releases the GIL, so n Python threads run it on n cores):

* FMA: `acc_i = fma(acc_i, x, y)` over A independent vector accumulators (enough to
  cover the FMA latency times the number of FMA ports), x and y read from memory, every
  accumulator summed into the result, which is checked against the closed form, so
  no compiler can drop or shorten the work;
* bf16 dot: the same with `vdpbf16ps` (4 FLOP per float lane: two products, two adds);
* read: a vector sum over a buffer several times the last-level cache, compared with
  numpy's sum; copy: a vector copy of such a buffer (bytes read + bytes written).

The compute loops are timed by each thread's CPU time (a neighbour taking the core for a
while on a shared machine does not lower the peak), the streams by the wall clock (the
memory bandwidth is shared by whoever runs). `FmaProbe` is the FMA loop as one side of a
benchmark's alternating turns (benchmarks/gemm.py sets each kernel beside it).

`measure()` returns the figures as a dict (what the memo holds); `load()` / `store()`
keep them in the host memo of the cache directory, keyed by the machine's fingerprint,
so they are measured once per host (`benchmarks/peak.py` measures and stores them).
"""
from __future__ import annotations

import ctypes
import json
import os
import threading
import time

import numpy as np

from ..targets.cpu.peaks import FORMAT      # the memo's layout, which the cpu target reads

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
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:
        n = os.cpu_count() or 1
    counts = sorted({1, n} | {2 ** k for k in range(1, n.bit_length()) if 2 ** k < n})
    return counts


# ----------------------------------------------------------------------------- JIT

class _Jit:
    """One llvmlite MCJIT engine for the host CPU holding the measurement loops."""

    def __init__(self, ir_text: str):
        import llvmlite.binding as llvm
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_triple(llvm.get_process_triple())
        self.tm = target.create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
            opt=3, codemodel="jitdefault")
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
        self.engine = llvm.create_mcjit_compiler(mod, self.tm)
        self.engine.finalize_object()
        self._mod = mod

    def address(self, name: str) -> int:
        return self.engine.get_function_address(name)


def _vec(lanes: int, elem: str) -> str:
    return f"<{lanes} x {elem}>"


def fma_loop_ir(name: str, lanes: int, elem: str, accumulators: int) -> str:
    """`void name(i64 n, ptr xy, ptr out)`: n iterations of `accumulators` vector FMAs;
    out[0..lanes) = the sum of the accumulators."""
    v = _vec(lanes, elem)
    suffix = f"v{lanes}{'f32' if elem == 'float' else 'f64'}"
    lines = [f"define void @{name}(i64 %n, ptr %xy, ptr %out) {{",
             "entry:",
             f"  %x = load {v}, ptr %xy, align 4",
             f"  %yp = getelementptr {v}, ptr %xy, i64 1",
             f"  %y = load {v}, ptr %yp, align 4",
             "  br label %loop", "loop:",
             "  %i = phi i64 [0, %entry], [%i1, %loop]"]
    for a in range(accumulators):
        lines.append(f"  %a{a} = phi {v} [zeroinitializer, %entry], [%b{a}, %loop]")
    for a in range(accumulators):
        lines.append(f"  %b{a} = call {v} @llvm.fma.{suffix}({v} %a{a}, {v} %x, {v} %y)")
    lines += ["  %i1 = add i64 %i, 1", "  %c = icmp ult i64 %i1, %n",
              "  br i1 %c, label %loop, label %exit", "exit:"]
    lines += _sum_and_store(v, "b", accumulators, "fadd")
    lines += ["  ret void", "}",
              f"declare {v} @llvm.fma.{suffix}({v}, {v}, {v})"]
    return "\n".join(lines)


def bf16_dot_loop_ir(name: str, lanes: int, accumulators: int) -> str:
    """`void name(i64 n, ptr ab, ptr out)`: n iterations of `accumulators` vdpbf16ps
    (`lanes` float lanes, 2 * lanes bf16 pairs each)."""
    v = _vec(lanes, "float")
    bv = _vec(2 * lanes, "bfloat")
    fn = f"@llvm.x86.avx512bf16.dpbf16ps.{lanes * 32}"
    lines = [f"define void @{name}(i64 %n, ptr %ab, ptr %out) {{",
             "entry:",
             f"  %x = load {bv}, ptr %ab, align 2",
             f"  %yp = getelementptr {bv}, ptr %ab, i64 1",
             f"  %y = load {bv}, ptr %yp, align 4",
             "  br label %loop", "loop:",
             "  %i = phi i64 [0, %entry], [%i1, %loop]"]
    for a in range(accumulators):
        lines.append(f"  %a{a} = phi {v} [zeroinitializer, %entry], [%b{a}, %loop]")
    for a in range(accumulators):
        lines.append(f"  %b{a} = call {v} {fn}({v} %a{a}, {bv} %x, {bv} %y)")
    lines += ["  %i1 = add i64 %i, 1", "  %c = icmp ult i64 %i1, %n",
              "  br i1 %c, label %loop, label %exit", "exit:"]
    lines += _sum_and_store(v, "b", accumulators, "fadd")
    lines += ["  ret void", "}", f"declare {v} {fn}({v}, {bv}, {bv})"]
    return "\n".join(lines)


def _sum_and_store(v: str, prefix: str, count: int, op: str) -> list[str]:
    lines, acc = [], f"%{prefix}0"
    for a in range(1, count):
        lines.append(f"  %s{a} = {op} {v} {acc}, %{prefix}{a}")
        acc = f"%s{a}"
    lines.append(f"  store {v} {acc}, ptr %out, align 4")
    return lines


def stream_ir(lanes: int = 8) -> str:
    """`float read_sum(ptr p, i64 nvec)` (four vector accumulators) and
    `void copy(ptr dst, ptr src, i64 nvec)`, over vectors of `lanes` floats."""
    v = _vec(lanes, "float")
    return "\n".join([
        f"define float @read_sum(ptr %p, i64 %n) {{",
        "entry:", "  br label %loop", "loop:",
        "  %i = phi i64 [0, %entry], [%i1, %loop]",
        *[f"  %a{k} = phi {v} [zeroinitializer, %entry], [%b{k}, %loop]" for k in range(4)],
        *[f"  %j{k} = add i64 %i, {k}\n  %q{k} = getelementptr {v}, ptr %p, i64 %j{k}\n"
          f"  %x{k} = load {v}, ptr %q{k}, align 4\n  %b{k} = fadd {v} %a{k}, %x{k}"
          for k in range(4)],
        "  %i1 = add i64 %i, 4", "  %c = icmp ult i64 %i1, %n",
        "  br i1 %c, label %loop, label %exit", "exit:",
        f"  %s1 = fadd {v} %b0, %b1", f"  %s2 = fadd {v} %b2, %b3",
        f"  %s3 = fadd {v} %s1, %s2",
        f"  %r = call float @llvm.vector.reduce.fadd.v{lanes}f32(float 0.0, {v} %s3)",
        "  ret float %r", "}",
        f"declare float @llvm.vector.reduce.fadd.v{lanes}f32(float, {v})",
        "define void @copy(ptr %dst, ptr %src, i64 %n) {",
        "entry:", "  br label %loop", "loop:",
        "  %i = phi i64 [0, %entry], [%i1, %loop]",
        f"  %s = getelementptr {v}, ptr %src, i64 %i",
        f"  %d = getelementptr {v}, ptr %dst, i64 %i",
        f"  %x = load {v}, ptr %s, align 4", f"  store {v} %x, ptr %d, align 4",
        "  %i1 = add i64 %i, 1", "  %c = icmp ult i64 %i1, %n",
        "  br i1 %c, label %loop, label %exit", "exit:", "  ret void", "}"])


# ----------------------------------------------------------------------------- running

def _run_threads(fn, args_per_thread: list[tuple], cpu_time: bool = False) -> float:
    """Run `fn(*args)` once per entry on its own thread, all together; wall seconds, or
    with `cpu_time` the longest CPU time of one thread: what the cores took while they
    ran the loop, unaffected by other processes taking a core for a while on a shared
    machine (the compute peaks; a bandwidth is shared by whoever runs, so it is timed
    by the wall clock)."""
    barrier = threading.Barrier(len(args_per_thread) + 1)
    errors: list = []
    cpu: list[float] = []

    def work(args):
        barrier.wait()
        start_cpu = time.thread_time()
        try:
            fn(*args)
        except BaseException as e:      # noqa: BLE001 - reported below
            errors.append(e)
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
    return max(cpu) if cpu_time else time.perf_counter() - start


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


def last_level_cache() -> int:
    from ..targets.cpu.machine import host          # sysfs, as the block choice reads it
    return host().l3


def measure(quick: bool = False, counts=None) -> dict:
    """Every figure this host supports (see the module docstring). `quick` spends about
    a second in all (the profiler's first run on a host); the benchmark does not."""
    flags = cpu_flags()
    widths = vector_widths(flags)
    counts = counts or thread_counts()
    seconds, repeats = (0.02, 2) if quick else (0.2, 3)
    llc = last_level_cache()
    stream_bytes = min(max(2 * llc, 64 << 20), 1 << 30) if not quick else min(2 * llc, 256 << 20)
    result = {"format": FORMAT, "quick": quick, "cpu": _cpu_model(),
              "threads": [str(t) for t in counts], "vector_widths": widths,
              "fma": measure_fma(_Jit(_fma_module(widths)), widths, counts, seconds, repeats),
              "bandwidth": measure_bandwidth(counts, stream_bytes, repeats),
              "stream_bytes": stream_bytes}
    dot_widths = bf16_widths(flags)
    if dot_widths:
        ir_text = "\n".join(bf16_dot_loop_ir(f"dot_bf16_{w}", w // 32, _FMA_ACCUMULATORS[w])
                            for w in dot_widths)
        result["bf16_dot"] = measure_bf16_dot(_Jit(ir_text), dot_widths, counts, seconds,
                                              repeats)
    else:
        result["bf16_dot"] = None
    result["amx"] = None if not {"amx_tile", "amx_bf16"} <= flags else "present, not measured"
    return result


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
    """The memoised figures of this host, or None."""
    try:
        with open(memo_path(), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def store(figures: dict) -> None:
    from ..runtime.cache import atomic_write
    try:
        atomic_write(memo_path(), json.dumps(figures, indent=1).encode())
    except OSError:
        pass                      # a read-only cache dir costs a re-measurement


def host_peaks(measure_if_missing: bool = True) -> dict | None:
    """The memo, measured quickly and stored first if there is none (a full measurement
    by `benchmarks/peak.py` replaces a quick one)."""
    data = load()
    if data is None and measure_if_missing:
        data = measure(quick=True)
        store(data)
    return data
