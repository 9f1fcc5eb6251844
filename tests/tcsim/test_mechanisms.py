"""The mechanisms behind the fidelity figures, each on a program small enough to state
its effect exactly: clusters and multicast loads, the sector-granular L2, per-op vector
costs, the clock model, elementwise temporaries that take no registers."""
from __future__ import annotations

import numpy as np
import pytest

from tilelang.runtime.tcsim import run
from tilelang.runtime.tcsim.errors import DeadlockError, LaunchError
from tilelang.runtime.tcsim.clusters import cluster_order
from tilelang.targets.tcsim.asm import assemble, disassemble
from tilelang.targets.tcsim.config import H100_LIKE, TINY
from tilelang.targets.tcsim.encoding import decode, encode

from .examples_tcsim import artifact
from .progs import program


def _shared_load(mcast: bool, cluster="2x1x1", grid="4 | 1 | 1"):
    """Every block loads the same 64x64 tile (and each its own row of B)."""
    text = program(f"""
        MULI r4, r0, 64
        DMA.LD X, A[0, 0] box=64x64{' mcast=1' if mcast else ''} signal=s[0]
        DMA.LD Y, B[r4, 0] box=64x64 signal=s[0]
        SEM.INIT s[0], 2
        SEM.WAIT s[0], 0
        HALT""", params=["A tensor float32 [64, 64]", "B tensor float32 [256, 64]"],
        bufs=["X SMEM float32 [64, 64]", "Y SMEM float32 [64, 64]"], sems=["s 1"],
        grid=grid)
    return assemble(disassemble(text).replace(".raster 0", f".raster 0\n.cluster {cluster}"))


ARGS = [((64, 64), "float32"), ((256, 64), "float32")]


def test_cluster_and_multicast_survive_text_and_binary():
    p = _shared_load(True)
    assert p.cluster == (2, 1, 1)
    assert ".cluster 2x1x1" in disassemble(p) and " mcast=1 " in disassemble(p)
    assert decode(encode(p)) == p


def test_a_multicast_load_is_read_once_per_cluster():
    tile = 64 * 64 * 4
    own = run(_shared_load(False), *ARGS, mode="timing")
    shared = run(_shared_load(True), *ARGS, mode="timing")
    # 4 blocks: the A tile 4 times without multicast, once per cluster of 2 with it
    assert own.bytes["l2_read"] == 4 * tile + 4 * tile
    assert shared.bytes["l2_read"] == 2 * tile + 4 * tile
    assert shared.bytes["smem"] == own.bytes["smem"]            # every block gets it


def test_clusters_launch_together_in_block_order():
    order = [(x, y, 0) for y in range(2) for x in range(4)]
    assert cluster_order(order, (2, 1, 1)) == [
        [(0, 0, 0), (1, 0, 0)], [(2, 0, 0), (3, 0, 0)],
        [(0, 1, 0), (1, 1, 0)], [(2, 1, 0), (3, 1, 0)]]
    assert cluster_order(order, (1, 2, 1))[0] == [(0, 0, 0), (0, 1, 0)]
    assert cluster_order(order, (1, 1, 1)) == [[c] for c in order]


def test_a_grid_that_is_not_whole_clusters_is_a_launch_error():
    with pytest.raises(LaunchError, match="not a multiple of the cluster"):
        run(_shared_load(True, grid="3 | 1 | 1"), *ARGS, mode="timing")


def test_a_multicast_load_one_block_skips_deadlocks_with_a_reason():
    p = _shared_load(True, cluster="4x1x1")
    text = disassemble(p).replace("MULI r4, r0, 64", "MULI r4, r0, 64\n    IF r0")
    text = text.replace("    DMA.LD Y", "    ENDIF\n    DMA.LD Y")
    with pytest.raises(DeadlockError, match="3 of 4 blocks issued it"):
        run(assemble(text), *ARGS, mode="timing")


def test_the_compiler_multicasts_what_a_cluster_shares():
    """examples/gemm.tl with clusters along y: the blocks of a cluster share B's column
    panel (multicast) and load their own A rows."""
    art = artifact("gemm", config="h100_like", cluster=(1, 2), in_dtype="bfloat16",
                   BLOCK_M=128, BLOCK_N=128, BLOCK_K=64)
    p = art.program
    loads = [ins for ins in p.code if ins.op == "DMA.LD"]
    by_tensor = {ins.args[1].tensor: bool(ins.attr("mcast")) for ins in loads}
    assert p.cluster == (1, 2, 1) and by_tensor == {"A": False, "B": True}
    n = 512
    shapes = [((n, n), "bfloat16"), ((n, n), "bfloat16"), ((n, n), "float32")]
    plain = artifact("gemm", config="h100_like", in_dtype="bfloat16", BLOCK_M=128,
                     BLOCK_N=128, BLOCK_K=64)
    a, b = run(plain, *shapes, mode="timing"), run(art, *shapes, mode="timing")
    b_bytes = n * n * 2 * (n // 128)                 # B is read once per row of blocks
    assert a.bytes["l2_read"] - b.bytes["l2_read"] == b_bytes // 2


def test_clustered_gemm_computes_the_product():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 40)).astype(np.float32)
    b = rng.standard_normal((40, 48)).astype(np.float32)
    c = np.zeros((64, 48), np.float32)
    art = artifact("gemm", cluster=(2, 2), BLOCK_M=16, BLOCK_N=24, BLOCK_K=8)
    run(art, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- L2

def _two_loads(first: str, second: str, shape="[64, 64]"):
    return program(f"""
        DMA.LD X, A[0, 0] box={first} signal=s[0]
        SEM.WAIT s[0], 0
        DMA.LD Y, A[0, 0] box={second} signal=s[0]
        SEM.WAIT s[0], 1
        HALT""", params=[f"A tensor float32 {shape}"],
        bufs=[f"X SMEM float32 [{first.replace('x', ', ')}]",
              f"Y SMEM float32 [{second.replace('x', ', ')}]"], sems=["s 1"])


def test_a_box_inside_a_resident_box_hits():
    # the V part of a K tile (a narrower box at the same corner) comes from L2
    r = run(_two_loads("64x64", "64x32"), ((64, 64), "float32"), mode="timing")
    assert r.bytes["hbm_read"] == 64 * 64 * 4
    assert r.bytes["l2_read"] == 64 * 64 * 4 + 64 * 32 * 4


def test_a_partly_resident_box_fetches_only_its_missing_sectors():
    r = run(_two_loads("32x64", "64x64"), ((64, 64), "float32"), mode="timing")
    assert r.bytes["hbm_read"] == 64 * 64 * 4                  # 32 rows, then 32 more


def test_a_narrow_column_fetches_whole_sectors():
    # one float per row: 4 bytes used of every 32-byte sector fetched
    r = run(_two_loads("64x1", "64x1"), ((64, 64), "float32"), mode="timing")
    assert r.bytes["hbm_read"] == 64 * 32
    assert r.bytes["l2_read"] == 2 * 64 * 4


def test_l2_capacity_evicts_the_oldest_sectors():
    cfg = TINY.with_(l2_bytes=64 * 64 * 4)                      # holds one tile
    p = program("""
        DMA.LD X, A[0, 0] box=64x64 signal=s[0]
        SEM.WAIT s[0], 0
        DMA.LD X, A[64, 0] box=64x64 signal=s[0]
        SEM.WAIT s[0], 1
        DMA.LD X, A[0, 0] box=64x64 signal=s[0]
        SEM.WAIT s[0], 2
        HALT""", params=["A tensor float32 [128, 64]"], bufs=["X SMEM float32 [64, 64]"],
        sems=["s 1"])
    r = run(p, ((128, 64), "float32"), config=cfg, mode="timing")
    assert r.bytes["hbm_read"] == 3 * 64 * 64 * 4
    r = run(p, ((128, 64), "float32"), config=TINY, mode="timing")
    assert r.bytes["hbm_read"] == 2 * 64 * 64 * 4


# ----------------------------------------------------------------------------- vector unit

def _vec(op: str, dtype="float32", cfg=H100_LIKE, src="float32"):
    p = program(f"{op} Y, X shape=64x64\nHALT", bufs=[f"X RF {src} [64, 64]",
                                                   f"Y RF {dtype} [64, 64]"])
    return run(p, config=cfg, mode="timing").cycles


def test_special_functions_run_at_the_sfu_rate():
    c = H100_LIKE.scalar_cycles + H100_LIKE.vec_latency
    n = 64 * 64
    assert _vec("VEC.MOV") == c + n / H100_LIKE.vec_elems_per_clk
    assert _vec("VEC.EXP2") == c + n / H100_LIKE.sfu_elems_per_clk
    assert _vec("VEC.SIGMOID") == c + 2 * n / H100_LIKE.sfu_elems_per_clk
    assert _vec("VEC.MOV", dtype="bfloat16") == c + n / H100_LIKE.cvt_elems_per_clk
    # a config without the slower pipes runs everything at the lane rate
    assert _vec("VEC.EXP2", cfg=TINY) == TINY.scalar_cycles + TINY.vec_latency + \
        n / TINY.vec_elems_per_clk


def test_copies_through_shared_memory_run_at_its_byte_rate():
    p = program("COPY Y, X\nHALT", bufs=["X RF float32 [64, 64]", "Y SMEM float32 [64, 64]"])
    r = run(p, config=H100_LIKE, mode="timing")
    moved = 64 * 64 * 4
    assert r.cycles == H100_LIKE.scalar_cycles + H100_LIKE.vec_latency + \
        moved / H100_LIKE.smem_bytes_per_clk


# ----------------------------------------------------------------------------- MMA operands

def _mma(n: int, a_level="SMEM", k=576):
    p = program(f"MMA C, A, B tb=1\nHALT", bufs=[f"A {a_level} bfloat16 [64, {k}]",
                                                 f"B SMEM bfloat16 [{n}, {k}]",
                                                 f"C RF float32 [64, {n}]"])
    return run(p, config=H100_LIKE, mode="timing").cycles


def test_a_narrow_mma_with_both_operands_in_shared_memory_waits_for_them():
    c = H100_LIKE.scalar_cycles + H100_LIKE.mma_latency
    atom = H100_LIKE.atom_cycles("bfloat16")
    # 64 x 32 over K = 576 (the MLA decode tile): 144 atoms, 576 cycles of tensor core,
    # but A and B (110.6 KB) take 864 cycles at 128 bytes a clock
    assert _mma(32) == c + (64 + 32) * 576 * 2 / H100_LIKE.smem_bytes_per_clk
    # 64 x 64: 128 bytes a clock, exactly what the shared-memory path delivers
    assert _mma(64) == c + 8 * 36 * atom
    # A in registers: only B is read from shared memory
    assert _mma(32, a_level="RF") == c + 4 * 36 * atom


# ----------------------------------------------------------------------------- clock

def test_clock_falls_with_tensor_core_load():
    cfg = H100_LIKE
    assert cfg.effective_clock_ghz(0.0) == cfg.clock_ghz
    assert cfg.effective_clock_ghz(1.0) == cfg.sustained_clock_ghz
    assert cfg.effective_clock_ghz(0.5) == pytest.approx(
        (cfg.clock_ghz + cfg.sustained_clock_ghz) / 2)


def test_a_compute_bound_run_is_throttled_and_a_copy_is_not():
    n = 1024
    gemm = artifact("gemm", config="h100_like", in_dtype="bfloat16", BLOCK_M=128,
                    BLOCK_N=128, BLOCK_K=64)
    r = run(gemm, ((n, n), "bfloat16"), ((n, n), "bfloat16"), ((n, n), "float32"),
            mode="timing")
    assert r.clock_ghz < H100_LIKE.clock_ghz
    assert r.time_s == pytest.approx(r.cycles / (r.clock_ghz * 1e9))
    busy = r.flops / (H100_LIKE.flops_per_clk("bfloat16") * H100_LIKE.cores) / r.cycles
    assert r.mma_utilization == pytest.approx(busy * r.clock_ghz / H100_LIKE.clock_ghz)
    copy = run(artifact("vector_add", config="h100_like"), ((1 << 20,), "float32"),
               ((1 << 20,), "float32"), ((1 << 20,), "float32"), mode="timing")
    assert copy.clock_ghz == H100_LIKE.clock_ghz
    assert "holds the clock below" in r.summary()


def test_an_uncalibrated_config_says_so():
    r = run(artifact("vector_add", config="ascend_like"), ((4096,), "float32"),
            ((4096,), "float32"), ((4096,), "float32"), config="ascend_like",
            mode="timing")
    assert not r.calibrated and "uncalibrated" in r.summary()


# ----------------------------------------------------------------------------- registers

def test_elementwise_temporaries_take_no_registers():
    """flash attention's T.Parallel temporaries are computed element by element: only
    the tiles it keeps (S, the output accumulator, the row statistics) count."""
    art = artifact("flash_attention", config="h100_like", dtype="float16", BLOCK_M=128,
                   BLOCK_N=64, DIM=128, CAUSAL=True)
    from dataclasses import replace
    p = art.program
    temps = [b for b in p.buffers if b.name.startswith("__t")]
    assert temps and all(b.transient for b in temps)
    # counted as tiles, the temporaries would add their bytes on top of what is kept
    counted = replace(p, buffers=tuple(replace(b, transient=False) for b in p.buffers))
    assert counted.resources()["RF"] - p.resources()["RF"] == sum(b.nbytes() for b in temps)
    assert H100_LIKE.level_bytes("RF") >= p.resources()["RF"] + 128 * 256
