"""`python -m tilelang.runtime.tcsim`: run / asm / dis / configs on hand-written programs."""
from __future__ import annotations

from tilelang.runtime.tcsim.__main__ import main

PROGRAM = """.kernel scale
.param A tensor float32 [N]
.param C tensor float32 [N]
.symbol N r3
.grid ceildiv(N, 256) | 1 | 1
.buf X RF float32 [256]
.sem s 1
    MULI r4, r0, 256
    DMA.LD X, A[r4] box=256 signal=s[0]
    VEC.MUL X, X, 2.0 shape=256 wait=s[0]@0 signal=s[0]
    DMA.ST C[r4], X box=256 wait=s[0]@1
    HALT
"""


def test_run_asm_dis_configs(tmp_path, capsys):
    src = tmp_path / "p.tcasm"
    src.write_text(PROGRAM)
    assert main(["run", str(src), "--shape", "N=5000", "--config", "tiny"]) == 0
    out = capsys.readouterr().out
    assert "tcsim:tiny  20 blocks on 4 cores" in out and "memory-bound" in out
    assert main(["run", str(src), "--shape", "N=700", "--config", "tiny",
                 "--functional", "--trace", str(tmp_path / "t.json")]) == 0
    assert (tmp_path / "t.json").stat().st_size > 0
    art = tmp_path / "p.tcsim"
    assert main(["asm", str(src), "-o", str(art), "--config", "tiny"]) == 0
    capsys.readouterr()
    assert main(["dis", str(art)]) == 0
    assert "VEC.MUL X, X, 2.0 shape=256" in capsys.readouterr().out
    assert main(["configs"]) == 0
    assert "h100_like" in capsys.readouterr().out


def test_errors_exit_1_with_their_code(tmp_path, capsys):
    bad = tmp_path / "bad.tcasm"
    bad.write_text(".kernel k\nFROB r1\n")
    assert main(["run", str(bad)]) == 1
    assert "error[TL0802]: line 2: unknown opcode" in capsys.readouterr().err
