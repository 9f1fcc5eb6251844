"""Loads under control flow that differs between the blocks of a cluster (an if or a
loop on the block index) are never multicast: a multicast load is one transfer for
every block of the cluster, so a block that skips it would leave the others waiting.
The same load outside such control is multicast. Each kernel runs on a 2x1 cluster
against numpy."""
from __future__ import annotations

import numpy as np
import pytest

from tilelang.codegen.tcsim import compile_module
from tilelang.driver import make_options
from tilelang.driver.stages import lower
from tilelang.frontend import parse_module
from tilelang.runtime.tcsim import run
from tilelang.targets.tcsim.asm import disassemble

KERNEL = '''
import tilelang.language as T

@T.prim_func
def k(A: T.Tensor((64,), "float32"), O: T.Tensor((256,), "float32")):
    with T.Kernel(4, threads=128) as bx:
        S = T.alloc_shared((64,), "float32")
        T.fill(S, 1.0)
{BODY}
        T.copy(S, O[bx * 64:bx * 64 + 64])
'''

BODIES = {
    # even blocks load A, odd ones keep the ones
    "if": ("        if bx % 2 == 0:\n            T.copy(A[0:64], S)", False),
    # block b loads A b % 2 times
    "loop": ("        for _ in T.serial(bx % 2):\n            T.copy(A[0:64], S)", False),
    "plain": ("        T.copy(A[0:64], S)", True),
}


def _loaded(case: str, bx: int) -> bool:
    return {"if": bx % 2 == 0, "loop": bx % 2 == 1, "plain": True}[case]


@pytest.mark.parametrize("case", list(BODIES))
def test_a_load_the_blocks_of_a_cluster_may_skip_is_not_multicast(case):
    body, multicast = BODIES[case]
    module = lower(parse_module(KERNEL.replace("{BODY}", body), f"{case}.tl"),
                   make_options(target="tcsim"), until="simplify")
    art = compile_module(module, "tiny", cluster=(2, 1))["k"]
    loads = [ln for ln in disassemble(art.program).splitlines() if "DMA.LD" in ln]
    assert len(loads) == 1 and ("mcast=1" in loads[0]) == multicast, loads
    a = np.arange(64, dtype=np.float32)
    out = np.zeros(256, np.float32)
    run(art, a, out)
    want = np.concatenate([a if _loaded(case, b) else np.ones(64, np.float32)
                           for b in range(4)])
    np.testing.assert_array_equal(out, want)
