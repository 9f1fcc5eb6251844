"""Cycle-exact micro-tests of the timing model on `tiny`, the k-loop formulas, wave
quantisation, and roofline invariants (hypothesis)."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from tilelang.runtime.tcsim import run
from tilelang.targets.tcsim.config import TINY

from .progs import program

C = TINY.scalar_cycles
MMA_BUFS = ["A SMEM bfloat16 [64, 64]", "B SMEM bfloat16 [64, 64]", "C RF float32 [64, 64]"]
ATOMS = (64 // 8) * (64 // 8) * (64 // 16)           # tiny: 8x8 atoms, k = 32 B / 2 B
MMA_CYCLES = ATOMS * TINY.atom_cycles("bfloat16")


def timing(p, *args, cfg=TINY, **kw):
    return run(p, *args, config=cfg, mode="timing", **kw)


def test_one_mma():
    r = timing(program("MMA C, A, B\nHALT", bufs=MMA_BUFS))
    assert MMA_CYCLES == 512
    assert r.cycles == C + MMA_CYCLES + TINY.mma_latency


@pytest.mark.parametrize("n", [1, 2, 7, 20])
def test_back_to_back_mmas(n):
    # more MMAs than the queue holds: the scalar unit stalls, the engine never does
    r = timing(program("MMA C, A, B\n" * n + "HALT", bufs=MMA_BUFS))
    assert r.cycles == C + n * MMA_CYCLES + TINY.mma_latency
    assert r.mma_utilization == pytest.approx(n * MMA_CYCLES / r.cycles / TINY.cores)


def _one_dma(cores: int, cfg=TINY):
    p = program("MULI r4, r0, 64\nDMA.LD X, A[r4, 0] box=64x64\nHALT",
                params=["A tensor float32 [M, 64]"], symbols=["M r3"],
                bufs=["X SMEM float32 [64, 64]"], grid="ceildiv(M, 64) | 1 | 1")
    return timing(p, ((64 * cores, 64), "float32"), cfg=cfg)


def test_one_dma():
    r = _one_dma(1)
    nbytes = 64 * 64 * 4
    rate = min(TINY.port_bytes_per_clk, TINY.hbm_bytes_per_clk)
    assert r.cycles == 2 * C + nbytes / rate + TINY.dma_latency
    assert r.bytes["hbm_read"] == nbytes


def test_two_cores_sharing_hbm_take_twice_as_long():
    cfg = TINY.with_(port_bytes_per_clk=TINY.hbm_bytes_per_clk)   # one core fills HBM
    fixed = 2 * C + cfg.dma_latency
    one, two = _one_dma(1, cfg), _one_dma(2, cfg)
    assert two.cycles - fixed == pytest.approx(2 * (one.cycles - fixed))
    # with a port cap below half of HBM, two cores do not slow each other
    assert _one_dma(2).cycles == _one_dma(1).cycles


# ----------------------------------------------------------------------------- k loops

def _kloop(stages: int, k_tiles: int, mma_bufs=("A", "B")):
    """The GEMM inner loop as the compiler emits it: loads of step k into ring slot
    k % stages signal full[slot]; the MMA waits on it and signals empty[slot], which the
    load of step k + stages waits on."""
    body = f"""
        MOV r10, 0
        LOOP {k_tiles}
            MOD r11, r10, {stages}
            FDIV r12, r10, {stages}
            SUB r13, r12, 1
            MULI r14, r10, 64
            DMA.LD A[r11], GA[0, r14] box=64x64 wait=empty[r11]@r13 signal=full[r11]
            DMA.LD B[r11], GB[r14, 0] box=64x64 wait=empty[r11]@r13 signal=full[r11]
            MMA C, A[r11], B[r11] wait=full[r11]@r12 signal=empty[r11]
            ADDI r10, r10, 1
        ENDLOOP
        HALT"""
    # the first round of loads waits on phase -1 of `empty`: complete from the start
    init = "".join(f"SEM.INIT full[{s}], 2\n" for s in range(stages))
    p = program(init + body, params=["GA tensor bfloat16 [64, K]",
                                     "GB tensor bfloat16 [K, 64]"],
                symbols=["K r3"],
                bufs=[f"A SMEM bfloat16 [64, 64] stages={stages}",
                      f"B SMEM bfloat16 [64, 64] stages={stages}", "C RF float32 [64, 64]"],
                sems=[f"full {stages}", f"empty {stages}"])
    return p, init.count("\n")


FAST = TINY.with_(port_bytes_per_clk=64.0)          # a core's port can fill HBM


def test_single_buffered_k_loop_formula():
    k = 6
    p, n_init = _kloop(1, k)
    r = timing(p, ((64, 64 * k), "bfloat16"), ((64 * k, 64), "bfloat16"), cfg=FAST)
    load = 2 * 64 * 64 * 2 / FAST.port_bytes_per_clk + TINY.dma_latency
    period = load + MMA_CYCLES + TINY.mma_latency       # nothing overlaps
    first = (n_init + 1 + 5 + 1) * C                     # first DMA.LD ready
    assert r.cycles == pytest.approx(first + k * period)


def test_double_buffered_k_loop_formula():
    k = 6
    p, n_init = _kloop(2, k)
    r = timing(p, ((64, 64 * k), "bfloat16"), ((64 * k, 64), "bfloat16"), cfg=FAST)
    load = 2 * 64 * 64 * 2 / FAST.port_bytes_per_clk + TINY.dma_latency
    assert MMA_CYCLES >= TINY.mma_latency + load          # MMA-bound: loads hide
    first = (n_init + 1 + 5 + 1) * C
    assert r.cycles == pytest.approx(first + load + k * MMA_CYCLES + TINY.mma_latency)
    single = timing(_kloop(1, k)[0], ((64, 64 * k), "bfloat16"), ((64 * k, 64), "bfloat16"),
                    cfg=FAST)
    assert r.cycles < single.cycles


# ----------------------------------------------------------------------------- waves

@pytest.mark.parametrize("blocks, waves", [(1, 1), (4, 1), (5, 2), (8, 2), (9, 3)])
def test_wave_quantisation(blocks, waves):
    cfg = TINY.with_(block_launch_cycles=7)
    p = program("MMA C, A, B\nHALT", bufs=MMA_BUFS, params=["X tensor float32 [G]"],
                symbols=["G r3"], grid="G | 1 | 1")
    r = timing(p, ((blocks,), "float32"), cfg=cfg)
    one = C + MMA_CYCLES + TINY.mma_latency
    assert r.waves == waves
    assert r.cycles == waves * one + (waves - 1) * 7


# ----------------------------------------------------------------------------- roofline

@settings(max_examples=25, deadline=None)
@given(st.integers(1, 12), st.integers(1, 3), st.integers(0, 3), st.sampled_from([16, 32, 64]))
def test_roofline_invariants(blocks, loads, mmas, tile):
    body = "MULI r4, r0, %d\n" % tile
    body += f"DMA.LD X, A[r4, 0] box={tile}x64 signal=s[0]\n" * loads
    body += "MMA C, A_s, B_s\n" * mmas
    body += f"DMA.ST O[r4, 0], X box={tile}x64 wait=s[0]@{loads - 1}\nHALT"
    p = program(body, params=["A tensor float32 [M, 64]", "O tensor float32 [M, 64]"],
                symbols=["M r3"], sems=["s 1"], grid="ceildiv(M, %d) | 1 | 1" % tile,
                bufs=[f"X SMEM float32 [{tile}, 64]", "A_s SMEM bfloat16 [64, 64]",
                      "B_s SMEM bfloat16 [64, 64]", "C RF float32 [64, 64]"])
    r = timing(p, ((tile * blocks, 64), "float32"), ((tile * blocks, 64), "float32"))
    compute = r.flops / (TINY.flops_per_clk("bfloat16") * TINY.cores)
    assert r.cycles >= compute - 1e-6
    assert r.cycles >= r.bytes["hbm"] / TINY.hbm_bytes_per_clk - 1e-6
    assert 0.0 <= r.mma_utilization <= 1.0
    assert r.roofline_fraction <= 1.0 + 1e-9


def test_long_vector_add_reaches_hbm_bandwidth():
    n, block = 1 << 22, 4096
    p = program("""
        MULI r4, r0, 4096
        DMA.LD XA, A[r4] box=4096 signal=s[0]
        DMA.LD XB, B[r4] box=4096 signal=s[0]
        VEC.ADD XA, XA, XB shape=4096 wait=s[0]@0 signal=t[0]
        DMA.ST C[r4], XA box=4096 wait=t[0]@0
        HALT""", params=["A tensor float32 [N]", "B tensor float32 [N]",
                         "C tensor float32 [N]"],
                symbols=["N r3"], grid=f"ceildiv(N, {block}) | 1 | 1",
                bufs=["XA RF float32 [4096]", "XB RF float32 [4096]"],
                sems=["s 1", "t 1"])
    sem_init = p
    r = timing(sem_init, ((n,), "float32"), ((n,), "float32"), ((n,), "float32"))
    achieved = r.bytes["hbm"] / r.cycles / TINY.hbm_bytes_per_clk
    assert r.bytes["hbm"] == 3 * 4 * n
    assert r.roofline_bound == "memory"
    assert achieved >= 0.9, achieved


# ----------------------------------------------------------------------------- DMA transfers

def _hit_beside_miss(cfg, second="B"):
    """A is loaded once (into L2), then again (an L2 hit) followed by a load of
    `second` (B: from HBM; A: another L2 hit)."""
    p = program(f"""
        DMA.LD X, A[0, 0] box=64x64 signal=warm[0]
        SEM.WAIT warm[0], 0
        DMA.LD X, A[0, 0] box=64x64
        DMA.LD Y, {second}[0, 0] box=64x64
        HALT""", params=["A tensor float32 [64, 64]", "B tensor float32 [64, 64]"],
                bufs=["X SMEM float32 [64, 64]", "Y SMEM float32 [64, 64]"], sems=["warm 1"])
    return timing(p, ((64, 64), "float32"), ((64, 64), "float32"), cfg=cfg)


WIDE = TINY.with_(port_bytes_per_clk=128.0)      # the port exceeds HBM's 64 B/clk


def test_a_dma_engine_moves_its_transfers_in_flight_at_once():
    """With two transfers in flight, an L2 hit and an HBM miss of one engine overlap
    (each at half the port, 64 B/clk: the miss, dispatched one scalar cycle after the
    hit, ends 256 + C cycles after the hit started) where one at a time takes the hit
    at the port rate and then the miss at HBM's (128 + 256 cycles)."""
    nbytes = 64 * 64 * 4
    one = _hit_beside_miss(WIDE)
    two = _hit_beside_miss(WIDE.with_(dma_transfers=2))
    assert one.cycles - two.cycles == pytest.approx(
        nbytes / 128 + nbytes / 64 - (nbytes / 64 + C))
    # the first (cold) load moves at min(port / 2, HBM) either way: 64 B/clk
    assert one.bytes == two.bytes


def test_transfers_in_flight_share_their_engine_port():
    """Two L2 hits are port-bound: moving both at once (half the port each) takes as
    long as one after the other, but for the scalar cycle between their dispatches,
    in which the first moves alone at its share (half the port: the share is static,
    the conservative side)."""
    one = _hit_beside_miss(WIDE, second="A")
    two = _hit_beside_miss(WIDE.with_(dma_transfers=2), second="A")
    assert two.cycles == pytest.approx(one.cycles + C)


# ----------------------------------------------------------------------------- two consumers

def _consumers(pingpong: bool):
    """Two consumer pipelines of one block over one shared K tile, each a multiply,
    a softmax-sized run of vector work (8 x 64 cycles) and a second multiply. In
    ping-pong order (both first multiplies, then each consumer's softmax and second
    multiply: the order a schedule's `order=` gives the one instruction stream) or
    one consumer after the other."""
    def softmax(c):
        ops = [f"VEC.MOV P{c}, S{c} shape=64x64" for _ in range(8)]
        ops[0] += f" wait=s[{c}]@0"
        ops[-1] += f" signal=v[{c}]"
        return ops
    first = [f"MMA S{c}, Q, K signal=s[{c}]" for c in (0, 1)]
    second = [f"MMA O{c}, P{c}, K wait=v[{c}]@0" for c in (0, 1)]
    if pingpong:
        body = first + softmax(0) + [second[0]] + softmax(1) + [second[1]]
    else:
        body = [first[0]] + softmax(0) + [second[0], first[1]] + softmax(1) + [second[1]]
    bufs = ["Q SMEM bfloat16 [64, 64]", "K SMEM bfloat16 [64, 64]"]
    for c in (0, 1):
        bufs += [f"S{c} RF float32 [64, 64]", f"P{c} RF bfloat16 [64, 64]",
                 f"O{c} RF float32 [64, 64]"]
    return timing(program("\n".join(body + ["HALT"]), bufs=bufs, sems=["s 2", "v 2"]))


def test_two_consumers_in_ping_pong_hide_each_others_softmax():
    """The softmax of one consumer runs on the vector engine while the tensor core
    multiplies for the other (FlashAttention-3's and FlashMLA's two warpgroups): the
    block is bound by its four multiplies, where one consumer after the other adds
    both softmaxes to them."""
    vec = 8 * 64 * 64 / TINY.vec_elems_per_clk
    pingpong, serial = _consumers(True), _consumers(False)
    assert vec == MMA_CYCLES
    bound = 4 * MMA_CYCLES
    slack = TINY.mma_latency + TINY.vec_latency + 40 * C
    assert bound <= pingpong.cycles <= bound + slack
    assert serial.cycles >= bound + 2 * vec
