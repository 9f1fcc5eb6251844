"""The host-peak loops: real work whose results are checked, figures kept in the memo."""
import numpy as np
import pytest

from tilelang.profiler import hostpeaks


def test_fma_loops_compute_what_they_claim():
    jit = hostpeaks._Jit(hostpeaks._fma_module([128]))
    k = hostpeaks._FmaKernel(jit, "fma_float_128", 4, np.float32, 12)
    out = np.zeros(64, np.float64)
    k(5000, out)
    k.check(out, 5000)                       # the closed form of 5000 FMAs per lane
    with pytest.raises(RuntimeError, match="FMA loop gave"):
        k.check(out, 5)                      # a shortened loop would not pass
    rate = hostpeaks._flop_rate(k, 1000, 2 * 4 * 12, 1, k.check, 0.005, 1)
    assert 1e8 < rate < 1e13                 # FLOP/s of one 128-bit thread


def test_wider_vectors_are_native_and_verified():
    flags = hostpeaks.cpu_flags()
    widths = hostpeaks.vector_widths(flags)
    jit = hostpeaks._Jit(hostpeaks._fma_module(widths))
    for w in widths:
        k = hostpeaks._FmaKernel(jit, f"fma_double_{w}", w // 64, np.float64,
                                 hostpeaks._FMA_ACCUMULATORS[w])
        out = np.zeros(64, np.float64)
        k(2000, out)
        k.check(out, 2000)


def test_bf16_dot_where_present():
    widths = hostpeaks.bf16_widths(hostpeaks.cpu_flags())
    if not widths:
        pytest.skip("no avx512_bf16 on this host")
    ir_text = hostpeaks.bf16_dot_loop_ir("dot", widths[0] // 32, 8)
    k = hostpeaks._DotKernel(hostpeaks._Jit(ir_text), "dot", widths[0] // 32, 8)
    out = np.zeros(64, np.float64)
    k(100, out)
    assert float(out.view(np.float32)[0]) == pytest.approx(8 * 100 * 2.0 ** -10)


def test_stream_loops_read_and_copy():
    bw = hostpeaks.measure_bandwidth([1], 4 << 20, 1)
    assert bw["read"]["1"] > 1e8 and bw["copy"]["1"] > 1e8


def test_memo_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    assert hostpeaks.load() is None
    figures = {"format": hostpeaks.FORMAT, "threads": ["1"], "fma": {}}
    hostpeaks.store(figures)
    assert hostpeaks.load() == figures
    assert hostpeaks.memo_path().startswith(str(tmp_path))
    (tmp_path / hostpeaks.memo_path().rsplit("/", 1)[1]).write_text("{not json")
    assert hostpeaks.load() is None          # a torn memo is re-measured, never trusted


@pytest.mark.parametrize("threads", [1, 2])
def test_fma_probe_runs_a_fixed_checked_amount_of_work(threads):
    probe = hostpeaks.FmaProbe(threads, seconds=0.002)
    k = probe.kernel
    assert probe.flops == probe.iters * 2 * k.lanes * k.accumulators * threads
    probe()                                   # each thread's sum checked against the closed form
    probe.outs[-1][:] = 0
    with pytest.raises(RuntimeError, match="FMA loop gave"):
        k.check(probe.outs[-1], probe.iters)  # an unrun loop would not pass
