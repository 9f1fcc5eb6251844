"""The measurement loops of the host's peaks (`hostpeaks.py`), as LLVM IR compiled
here with llvmlite for the host CPU: vector FMA and bf16 dot-product loops over
independent accumulators, a vector read-sum and copy of a buffer, and a read-sum
repeated over a buffer that stays in a cache (the cache-level read ceilings).
"""
from __future__ import annotations


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
    fn = f"@llvm.fma.v{lanes}{'f32' if elem == 'float' else 'f64'}"
    return _accumulate_loop_ir(name, "xy", v, v, fn, accumulators, (4, 4))


def bf16_dot_loop_ir(name: str, lanes: int, accumulators: int) -> str:
    """`void name(i64 n, ptr ab, ptr out)`: n iterations of `accumulators` vdpbf16ps
    (`lanes` float lanes, 2 * lanes bf16 pairs each)."""
    fn = f"@llvm.x86.avx512bf16.dpbf16ps.{lanes * 32}"
    return _accumulate_loop_ir(name, "ab", _vec(lanes, "float"), _vec(2 * lanes, "bfloat"),
                               fn, accumulators, (2, 4))


def _accumulate_loop_ir(name: str, arg: str, v: str, operand: str, fn: str,
                        accumulators: int, aligns: tuple[int, int]) -> str:
    """The loop both peak kernels are: two operands loaded once from `arg`, then n
    iterations of `accumulators` independent `acc = fn(acc, x, y)` chains (independent so
    that the loop runs at the unit's throughput, not its latency), summed into out."""
    lines = [f"define void @{name}(i64 %n, ptr %{arg}, ptr %out) {{",
             "entry:",
             f"  %x = load {operand}, ptr %{arg}, align {aligns[0]}",
             f"  %yp = getelementptr {operand}, ptr %{arg}, i64 1",
             f"  %y = load {operand}, ptr %yp, align {aligns[1]}",
             "  br label %loop", "loop:",
             "  %i = phi i64 [0, %entry], [%i1, %loop]"]
    for a in range(accumulators):
        lines.append(f"  %a{a} = phi {v} [zeroinitializer, %entry], [%b{a}, %loop]")
    for a in range(accumulators):
        lines.append(f"  %b{a} = call {v} {fn}({v} %a{a}, {operand} %x, {operand} %y)")
    lines += ["  %i1 = add i64 %i, 1", "  %c = icmp ult i64 %i1, %n",
              "  br i1 %c, label %loop, label %exit", "exit:"]
    lines += _sum_and_store(v, "b", accumulators, "fadd")
    lines += ["  ret void", "}", f"declare {v} {fn}({v}, {operand}, {operand})"]
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


def read_passes_ir() -> str:
    """`double read_passes(ptr read_sum, ptr p, i64 nvec, i64 passes)`: `passes` calls of
    the read-sum at `read_sum` over the same buffer, their sums added in double. The
    call is indirect, so the compiler cannot know it only reads and hoist it out of the
    loop: every pass reads the buffer again (from whichever cache holds it)."""
    return "\n".join([
        "define double @read_passes(ptr %fn, ptr %p, i64 %n, i64 %passes) {",
        "entry:", "  br label %loop", "loop:",
        "  %k = phi i64 [0, %entry], [%k1, %loop]",
        "  %acc = phi double [0.0, %entry], [%acc1, %loop]",
        "  %r = call float %fn(ptr %p, i64 %n)",
        "  %rd = fpext float %r to double",
        "  %acc1 = fadd double %acc, %rd",
        "  %k1 = add i64 %k, 1", "  %c = icmp ult i64 %k1, %passes",
        "  br i1 %c, label %loop, label %exit", "exit:", "  ret double %acc1", "}"])
