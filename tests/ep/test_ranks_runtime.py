"""The runtime of multi-rank runs on its own: segments, heaps, the launcher, waits."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from tilelang.runtime import ranks
from tilelang.runtime.ranks.shm import SHM_DIR, clean_stale, list_segments
from tilelang.runtime.ranks.wait import wait_until


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_stale_segments_of_dead_runs_are_removed():
    name = f"tilelang-{_dead_pid()}-cafe-h0-ctl"
    path = os.path.join(SHM_DIR, name)
    with open(path, "wb") as f:
        f.write(b"\0" * 64)
    mine = f"tilelang-{os.getpid()}-beef-h0-ctl"
    with open(os.path.join(SHM_DIR, mine), "wb") as f:
        f.write(b"\0" * 64)
    try:
        removed = clean_stale()
        assert name in removed and not os.path.exists(path)
        assert mine in list_segments()             # a live run's segment stays
    finally:
        os.unlink(os.path.join(SHM_DIR, mine))


def test_heap_segments_are_unlinked_once_mapped(solo):
    before = set(list_segments())
    heap = solo.heap(1 << 16)
    a = heap.alloc((10,), np.float64)
    a[:] = 1.5
    assert set(list_segments()) == before
    assert heap.contains(a.ctypes.data, a.nbytes) and heap.offset_of(a) == 0
    b = heap.alloc((3,), np.int32)
    assert heap.offset_of(b) == 256                # 256-byte aligned bump allocation
    with pytest.raises(ranks.SymmetricHeapError, match="does not fit"):
        heap.alloc((1 << 20,), np.float64)
    heap.check_symmetric()


def test_wait_until_times_out_and_sees_aborts():
    with pytest.raises(ranks.RankTimeoutError, match="rank 3: timed out after 0.2 s waiting "
                       "for the moon"):
        wait_until(lambda: False, "the moon", 3, timeout=0.2)
    start = time.monotonic()
    with pytest.raises(ranks.RankAbortedError, match="rank 1 exited with status 9"):
        wait_until(lambda: False, "peers", 0, aborted=lambda: "rank 1 exited with status 9",
                   timeout=30)
    assert time.monotonic() - start < 5


def test_launcher_reports_each_rank_and_cleans_up(tmp_path):
    script = tmp_path / "ranked.py"
    script.write_text("import os, sys\nfrom tilelang.runtime import ranks\n"
                      "g = ranks.init()\nprint('rank', g.rank(), 'of', g.size(), "
                      "os.environ['TILELANG_NUM_THREADS'])\n"
                      "g.barrier()\nsys.exit(3 if g.rank() == 2 else 0)\n")
    result = ranks.launch([str(script)], 3, capture=True)
    assert result.returncodes == [0, 0, 3] and result.returncode == 3
    assert "rank 1 of 3 1" in result.outputs[1]
    assert not [n for n in list_segments() if n.split("-")[1] == str(os.getpid())]
