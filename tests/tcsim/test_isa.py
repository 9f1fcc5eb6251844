"""ISA, assembler / disassembler, binary encoding, artifacts and machine configs."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from tilelang.targets.tcsim import asm, encoding
from tilelang.diagnostics import ArtifactError
from tilelang.targets.tcsim.artifact import Artifact, from_bytes, load
from tilelang.targets.tcsim.config import (ASCEND_LIKE, CONFIGS, H100_LIKE, H200_LIKE, TINY,
                                           ConfigError, get_config)
from tilelang.targets.tcsim.isa import (Glob, Imm, Instr, Program, Reg, SemRef, Tile, Wait,
                                        make)

from .progs import program

GEMM_TEXT = """
.kernel gemm
.param A tensor bfloat16 [M, K]
.param B tensor bfloat16 [K, N]
.param C tensor float32 [M, N]
.param alpha scalar float32 r9
.symbol M r3
.symbol N r4
.symbol K r5
.grid ceildiv(N, 64) | ceildiv(M, 64) | 1
.blockregs r0 r1 r2
.regs 32
.raster 4
.buf A_s SMEM bfloat16 [64, 32] stages=2
.buf B_s SMEM bfloat16 [32, 64] stages=2
.buf C_f RF float32 [64, 64] stages=1
.sem full 2
.sem empty 2
    ACC.ZERO C_f
    MULI r10, r1, 64     # row of the block
    LOOP r6
        DMA.LD A_s[r11], A[r10, r12] box=64x32 signal=full[r11]
        MMA C_f, A_s[r11], B_s[r11] wait=full[r11]@r13,empty[0]@-1 signal=empty[r11]
        VEC.MUL C_f{0,1}, C_f{0,1}, r9 shape=64x64
        VEC.SEL C_f, C_f, -inf, 1.5e-07 shape=64x64
    ENDLOOP
    IF r3
        DMA.ST C[r10, 0], C_f box=64x64 reduce=add
    ELSE
        SEM.ARRIVE empty[1]
    ENDIF
    HALT
"""


def test_assemble_disassemble_round_trip():
    p = asm.assemble(GEMM_TEXT)
    text = asm.disassemble(p)
    assert asm.assemble(text) == p
    assert asm.disassemble(asm.assemble(text)) == text        # canonical text is stable
    assert "    LOOP r6\n        DMA.LD" in text                  # loop bodies indented
    assert p.raster == 4 and p.num_regs == 32


def test_binary_round_trip_and_compactness():
    p = asm.assemble(GEMM_TEXT)
    data = encoding.encode(p)
    assert encoding.decode(data) == p
    assert len(data) < len(asm.disassemble(p))
    # an instruction costs a few bytes: names are in the string table once
    from dataclasses import replace
    more = replace(p, code=p.code + p.code[3:5] * 100)
    per_instr = (len(encoding.encode(more)) - len(data)) / 200
    text_per_instr = sum(len(asm.fmt_instr(i)) for i in p.code[3:5]) / 2
    assert per_instr < 0.7 * text_per_instr


@pytest.mark.parametrize("text, words", [
    ("FOO r1", "unknown opcode"),
    ("MOV r1", "takes 2 operands"),
    ("DMA.LD nothing, A[0] box=4", "unknown name"),
    ("MMA C_f, C_f, C_f color=red", "no attribute"),
    ("ADD r1, r2, xyz+", "expected a register or a number"),
])
def test_assembler_errors_name_the_line(text, words):
    src = ".kernel k\n.param A tensor float32 [4]\n.buf C_f RF float32 [4, 4]\n" + text
    with pytest.raises(asm.AsmError) as e:
        asm.assemble(src)
    assert words in str(e.value) and e.value.line == 4


def test_decode_rejects_garbage():
    with pytest.raises(encoding.EncodingError):
        encoding.decode(b"nope")
    data = encoding.encode(asm.assemble(GEMM_TEXT))
    with pytest.raises(encoding.EncodingError):
        encoding.decode(data[:-3])


# ----------------------------------------------------------------------------- hypothesis

_regs = st.builds(Reg, st.integers(0, 31))
_imms = st.builds(Imm, st.one_of(st.integers(-2**40, 2**40),
                                 st.floats(allow_nan=False, width=64)))
_scalars = st.one_of(_regs, _imms)
_tiles = st.builds(Tile, st.sampled_from(["X", "Y"]), st.one_of(st.none(), _scalars),
                   st.one_of(st.none(), st.sampled_from([(0,), (1, 0), (0, 1)])),
                   st.one_of(st.none(), st.sampled_from([((0, 4), (2, 6)), ((7, 1), (0, 8))])))
_sems = st.builds(SemRef, st.just("s"), st.one_of(st.none(), _scalars))


def _instr(draw):
    op = draw(st.sampled_from(["ADD", "MOV", "SEL", "LOOP", "VEC.ADD", "VEC.EXP", "DMA.LD",
                               "DMA.ST", "MMA", "SEM.WAIT", "VEC.RED.MAX", "ACC.READ",
                               "BITCAST"]))
    kinds = {"r": _regs, "s": _scalars, "t": _tiles, "m": _sems,
             "g": st.builds(Glob, st.just("G"), st.tuples(_scalars, _scalars))}
    from tilelang.targets.tcsim.isa import OPCODES
    args = [draw(kinds[k]) for k in OPCODES[op].operands]
    attrs = {}
    if "box" in OPCODES[op].attrs:
        attrs["box"] = draw(st.tuples(st.integers(1, 64), st.integers(1, 64)))
    if "wait" in OPCODES[op].attrs and draw(st.booleans()):
        attrs["wait"] = (Wait(draw(_sems), draw(_scalars)),)
    if "signal" in OPCODES[op].attrs and draw(st.booleans()):
        attrs["signal"] = draw(_sems)
    if op == "VEC.RED.MAX":
        attrs["dim"] = draw(st.integers(0, 1))
    if op == "BITCAST":
        attrs["src"], attrs["dst"] = draw(st.sampled_from([("float32", "int32"),
                                                           ("uint16", "bfloat16")]))
    return make(op, *args, **attrs)


@st.composite
def programs(draw):
    code = tuple(_instr(draw) for _ in range(draw(st.integers(0, 12))))
    base = asm.assemble(".kernel k\n.param G tensor float32 [M, 8]\n.symbol M r3\n"
                        ".buf X RF float32 [8, 8] stages=2\n.buf Y SMEM bfloat16 [8, 8]\n"
                        ".sem s 4\n")
    return Program(base.name, base.params, base.symbols, base.grid, base.block_regs,
                   base.buffers, base.sems, code, draw(st.integers(0, 8)), 32)


@settings(max_examples=60, deadline=None)
@given(programs())
def test_random_programs_round_trip(p):
    assert asm.assemble(asm.disassemble(p)) == p
    assert encoding.decode(encoding.encode(p)) == p


# ----------------------------------------------------------------------------- artifacts

def test_artifact_save_load(tmp_path):
    p = asm.assemble(GEMM_TEXT)
    art = Artifact(p, "tiny")
    path = tmp_path / "gemm.tcsim"
    art.save(path)
    back = load(path)
    assert back.program == p and back.config_name == "tiny"
    head = art.header()
    assert head["resources"]["SMEM"] == 2 * (64 * 32 * 2) * 2
    assert head["resources"]["RF"] == 64 * 64 * 4


def test_loader_rejects_over_budget_program():
    big = program("HALT", bufs=["X SMEM float32 [1024, 1024] stages=2"])   # 8 MB
    data = Artifact(big, "tiny").to_bytes()
    with pytest.raises(ArtifactError, match="needs 8388608 bytes of SMEM"):
        from_bytes(data)
    assert from_bytes(data, H100_LIKE.with_(
        levels=(type(H100_LIKE.levels[0])("SMEM", 1 << 23),
                type(H100_LIKE.levels[0])("RF", 1 << 18)))).program == big


def test_loader_rejects_misplaced_buffers():
    p = program("MMA C, A, A", bufs=["A SMEM float16 [16, 16]", "C SMEM float32 [16, 16]"])
    with pytest.raises(ArtifactError, match="MMA accumulator"):
        from_bytes(Artifact(p, "tiny").to_bytes())
    with pytest.raises(ArtifactError, match="SMEM does not exist on ascend_like"):
        from_bytes(Artifact(program("HALT", bufs=["A SMEM float16 [16]"]), "tiny").to_bytes(),
                   ASCEND_LIKE)


def test_loader_rejects_bad_magic_and_format():
    with pytest.raises(ArtifactError, match="bad magic"):
        from_bytes(b"hello world")


# ----------------------------------------------------------------------------- configs

def test_derived_peaks_match_the_published_figures():
    assert H100_LIKE.peak_tflops("bfloat16") == pytest.approx(989.5, rel=1e-3)
    assert H100_LIKE.peak_tflops("float8_e4m3fn") == pytest.approx(1979, rel=1e-3)
    assert H100_LIKE.hbm_bytes_per_s == 3.35e12 and H200_LIKE.hbm_bytes_per_s == 4.8e12
    assert H100_LIKE.level_bytes("SMEM") == 227 * 1024
    assert H100_LIKE.ridge_flops_per_byte() == pytest.approx(989.5e12 / 3.35e12, rel=1e-3)
    assert ASCEND_LIKE.atom_m == ASCEND_LIKE.atom_n == 16
    assert ASCEND_LIKE.atom_k("float16") == 16
    assert {lv.name for lv in ASCEND_LIKE.levels} == {"L1", "L0A", "L0B", "L0C", "UB"}
    assert set(CONFIGS) == {"h100_like", "h200_like", "ascend_like", "tiny"}


def test_atom_cycles():
    assert H100_LIKE.atom_cycles("bfloat16") == 4.0          # 64x8x16 atom, 4096 flop/clk
    assert H100_LIKE.atom_k("float8_e4m3fn") == 32
    assert TINY.atom_cycles("bfloat16") == 2.0


@pytest.mark.parametrize("change, words", [
    (dict(cores=0), "cores"), (dict(clock_ghz=-1.0), "clock_ghz"),
    (dict(mma_flops_per_clk=(("b16", 0),)), "MMA rate"),
    (dict(dma_levels=("NOPE",)), "dma_levels"),
    (dict(l2_bytes_per_s=1.0), "L2 must be at least"),
])
def test_config_validation(change, words):
    with pytest.raises(ConfigError, match=words):
        TINY.with_(**change)


def test_configs_are_frozen_and_named():
    with pytest.raises(Exception):
        TINY.cores = 8
    assert get_config("tiny") is TINY
    with pytest.raises(ConfigError, match="unknown machine config"):
        get_config("b200")


def test_errors_carry_their_codes():
    with pytest.raises(asm.AsmError) as e:
        asm.assemble(".kernel k\nNOPE")
    assert e.value.code == "TL0802"
    with pytest.raises(encoding.EncodingError) as e:
        encoding.decode(b"xx")
    assert e.value.code == "TL0802"
    with pytest.raises(ArtifactError) as e:
        from_bytes(b"TCSIMART\x02\x00\x00\x00{}")
    assert e.value.code == "TL0802"
    from tilelang.diagnostics import explain
    for code in ("TL0801", "TL0802", "TL0803", "TL0804", "TL0805", "TL0806", "TL0807"):
        assert explain(code) is not None
