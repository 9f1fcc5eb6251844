"""Malformed input never crashes the toolchain: mutated `.tcasm` text is an AsmError
(TL0802) or a valid program; corrupted binaries are EncodingErrors; programs that pass
the loader's checks run or fail with a simulator error, never a Python exception."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from tilelang.targets.tcsim import asm, encoding
from tilelang.diagnostics import ArtifactError
from tilelang.targets.tcsim.artifact import check_fits
from tilelang.targets.tcsim.config import TINY
from tilelang.runtime.errors import LaunchTypeError, LaunchValueError
from tilelang.runtime.tcsim.errors import LaunchError, SimError
from tilelang.runtime.tcsim.sim import run

from .test_hazards import PIPE

HEADER = """.kernel k
.param GA tensor float32 [16, 64]
.param GB tensor float32 [64, 16]
.param GC tensor float32 [16, 16]
.buf A SMEM float32 [16, 16] stages=2
.buf B SMEM float32 [16, 16] stages=2
.buf C RF float32 [16, 16]
.buf O_s SMEM float32 [16, 16]
.sem full 2
.sem empty 2
.sem done 1
"""
TEXT = HEADER + PIPE
VEC_TEXT = """.kernel v
.param GA tensor float32 [16, 64]
.param GB tensor float32 [64, 16]
.param GC tensor float32 [16, 16]
.buf X RF float32 [16, 16]
.buf R RF float32 [16]
.buf K RF int32 [16, 16]
.buf M RF bool [16, 16]
.buf T SMEM float32 [16, 16]
.sem s 1
.sem t 1
    SEM.INIT s[0], 2
    DMA.LD X, GA[0, 3] box=16x16 signal=s[0]
    DMA.LD R, GB[0, 0] box=16x1 signal=s[0]
    VEC.SUB X, X, R{0} shape=16x16 wait=s[0]@0
    VEC.IOTA K shape=16x16 dim=1
    VEC.LT M, K, 3 shape=16x16
    VEC.SEL X, M, X, -inf shape=16x16
    VEC.RED.MAX R, X dim=1 acc=1
    ACC.READ T, X scale=0.5
    COPY T{1,0}, X signal=t[0]
    DMA.ST GC[0, 0], T box=16x16 reduce=add wait=t[0]@0
    HALT
"""
TOKENS = [t.replace("\n", " \n ").split(" ") for t in (TEXT, VEC_TEXT)]


@st.composite
def mutations(draw):
    toks = list(TOKENS[draw(st.integers(0, 1))])
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(toks) - 1))
        kind = draw(st.sampled_from(["drop", "dup", "swap", "digit"]))
        if kind == "drop":
            del toks[i]
        elif kind == "dup":
            toks.insert(i, toks[i])
        elif kind == "swap":
            j = draw(st.integers(0, len(toks) - 1))
            toks[i], toks[j] = toks[j], toks[i]
        else:
            toks[i] = toks[i].replace("1", "7").replace("0", "9")
    return " ".join(toks).replace(" \n ", "\n")


@settings(max_examples=200, deadline=None)
@given(mutations())
def test_mutated_assembly_is_an_error_or_a_program_that_runs_or_fails_cleanly(text):
    try:
        p = asm.assemble(text)
    except asm.AsmError:
        return
    try:
        check_fits(p, TINY)
    except ArtifactError:
        return
    a = np.ones((16, 64), np.float32)
    b = np.ones((64, 16), np.float32)
    c = np.zeros((16, 16), np.float32)
    try:
        run(p, a, b, c, config="tiny", max_events=200_000)
    except (SimError, LaunchError, LaunchTypeError, LaunchValueError, ArtifactError):
        pass


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_corrupted_binaries_are_encoding_errors(data):
    raw = bytearray(encoding.encode(asm.assemble(TEXT)))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    try:
        encoding.decode(bytes(raw))
    except encoding.EncodingError:
        pass
