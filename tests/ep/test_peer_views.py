"""Views of another rank's tensor, `V = T.Tensor(shape, dtype, X.data, pe=r)`: loads and
stores through V reach rank r's copy of X (the ring scenario runs them across ranks).
Here, in one process: the round trip, the run on a group of one, the bad rank (TL0907)
and the tensor outside a heap (TL0904) as for the other primitives, and tcsim's refusal."""
import numpy as np
import pytest

import tilelang
from tilelang.diagnostics import TileLangError
from tilelang.frontend import parse_module
from tilelang.ir.nodes import Alloc, is_peer_view
from tilelang.ir.printer import print_module
from tilelang.ir.visitor import walk
from tilelang.runtime import ranks

VIEW = '''import tilelang.language as T

N = T.dynamic("N")


@T.prim_func
def pull(x: T.Tensor((N, 64), "float32"), y: T.Tensor((N, 64), "float32"), src: T.int32):
    with T.Kernel(N) as bx:
        xp = T.Tensor((N, 64), "float32", x.data, pe=src)
        for j in T.Parallel(64):
            y[bx, j] = xp[bx, j] * 2.0
        yp = T.Tensor((N, 64), "float32", y.data, pe=src)
        T.copy(x[bx, 0:64], yp[bx, 0:64], eviction_policy="evict_first")
'''


@pytest.fixture(scope="module")
def pull(tmp_path_factory):
    path = tmp_path_factory.mktemp("views") / "pull.tl"
    path.write_text(VIEW)
    return tilelang.compile(str(path))


def test_a_peer_view_round_trips():
    mod = parse_module(VIEW, "pull.tl")
    views = [n for n in walk(mod) if isinstance(n, Alloc) and is_peer_view(n)]
    assert [v.source.name for v in views] == ["x", "y"]
    text = print_module(mod)
    assert 'xp = T.Tensor((N, 64), "float32", x.data, pe=src)' in text
    assert parse_module(text, "printed.tl") == mod


def test_a_peer_view_outside_the_kernel_is_an_error():
    src = VIEW.replace("    with T.Kernel(N) as bx:\n        xp =",
                       "    xp = T.Tensor((N, 64), \"float32\", x.data, pe=src)\n"
                       "    with T.Kernel(N) as bx:\n        xq =")
    with pytest.raises(TileLangError) as info:
        parse_module(src, "pull.tl")
    assert "inside T.Kernel" in info.value.render()


def test_reads_and_streamed_writes_through_views_on_a_group_of_one(solo, pull):
    heap = solo.heap(1 << 16)
    x, y = heap.alloc((5, 64), np.float32), heap.alloc((5, 64), np.float32)
    x[:] = np.arange(5 * 64, dtype=np.float32).reshape(5, 64)
    pull(x, y, 0)
    np.testing.assert_array_equal(y, x)          # x * 2, then x over it through yp
    pull(x, y, -1)                               # -1: this rank
    np.testing.assert_array_equal(y, x)
    manifest = pull.library()["pull"].manifest["ranks"]
    assert manifest["symmetric"] == ["x", "y"]
    assert "pe=" in manifest["sites"][0]["op"] and manifest["sites"][0]["buffer"] == "x"


def test_a_bad_rank_is_tl0907_before_anything_is_written(solo, pull):
    heap = solo.heap(1 << 16)
    x, y = heap.alloc((5, 64), np.float32), heap.alloc((5, 64), np.float32)
    x[:] = 1
    with pytest.raises(ranks.RankError) as info:
        pull(x, y, 2)
    assert info.value.code == "TL0907" and "peer rank 2" in str(info.value)
    assert "pull.tl:9:9" in str(info.value)
    assert (y == 0).all()


def test_a_viewed_tensor_must_be_in_a_heap(solo, pull):
    heap = solo.heap(1 << 16)
    y = heap.alloc((5, 64), np.float32)
    with pytest.raises(ValueError) as info:
        pull(np.zeros((5, 64), np.float32), y, 0)
    assert info.value.code == "TL0904" and "'x'" in str(info.value)


def test_tcsim_refuses_a_peer_view(tmp_path):
    path = tmp_path / "pull.tl"
    path.write_text(VIEW)
    with pytest.raises(TileLangError) as info:
        tilelang.compile(str(path), target="tcsim:tiny")
    d = info.value.diagnostics[0]
    assert d.code == "TL0902" and d.primary.line == 9, info.value.render()
