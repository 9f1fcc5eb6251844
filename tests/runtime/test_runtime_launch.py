"""Launch over the grid: every block runs exactly once whatever the thread count; small
launches stay on the calling thread; workspaces arrive zeroed."""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from tilelang.runtime import launch as launch_mod


def run_mark(lib, nb, spin_us=0, **kw):
    hits = np.zeros(nb, np.int32)
    tids = np.zeros(nb, np.int64)
    lib.mark(hits, tids, spin_us, **kw)
    return hits, tids


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("nb", [1, 2, 7, 64, 1000])
def test_every_block_exactly_once(lib, threads, nb):
    hits, _ = run_mark(lib, nb, num_threads=threads)
    assert hits.tolist() == [1] * nb


def test_one_thread_runs_inline(lib):
    _, tids = run_mark(lib, 50, num_threads=1)
    assert set(tids.tolist()) == {threading.get_native_id()}


def test_one_block_runs_inline(lib):
    _, tids = run_mark(lib, 1, num_threads=4)
    assert tids.tolist() == [threading.get_native_id()]


def test_two_threads_share_the_grid(lib):
    # Each block sleeps 2 ms, so the pool worker gets chunks while the caller sleeps.
    for _ in range(3):                   # the machine is shared: allow a slow wake-up
        hits, tids = run_mark(lib, 32, spin_us=2000, num_threads=2)
        assert hits.tolist() == [1] * 32
        if len(set(tids.tolist())) == 2:
            return
    pytest.fail("a 2-thread launch never used a second thread")


CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def test_multi_threaded_launch_leaves_the_caller_out(lib):
    _, tids = run_mark(lib, 64, num_threads=2)
    assert threading.get_native_id() not in set(tids.tolist())


@pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs")
def test_a_launch_over_every_cpu_pins_one_worker_to_each(lib):
    tids = set()
    for _ in range(3):
        hits, t = run_mark(lib, 64, spin_us=200, num_threads=len(CPUS))
        tids |= set(t.tolist())
    pins = [os.sched_getaffinity(t) for t in tids]
    assert all(len(p) == 1 for p in pins), pins
    assert len({next(iter(p)) for p in pins}) == len(pins)       # distinct CPUs


@pytest.mark.skipif(len(CPUS) < 3, reason="needs three CPUs")
def test_a_launch_on_fewer_threads_unpins_its_workers(lib):
    run_mark(lib, 64, num_threads=len(CPUS))
    _, t = run_mark(lib, 64, spin_us=200, num_threads=2)
    assert all(os.sched_getaffinity(x) == set(CPUS) for x in set(t.tolist()))


def test_concurrent_launches_from_python_threads(lib):
    results, errors = {}, []

    def worker(i):
        try:
            results[i] = run_mark(lib, 200, num_threads=2)[0]
        except Exception as e:          # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    assert all(r.tolist() == [1] * 200 for r in results.values())


def test_num_threads_validation(lib):
    with pytest.raises(ValueError, match="num_threads"):
        run_mark(lib, 4, num_threads=0)
    with pytest.raises(TypeError, match="num_threads"):
        run_mark(lib, 4, num_threads=1.5)


def test_kernel_default_num_threads(libpath):
    from tilelang.runtime.artifact import load
    lib1 = load(libpath, num_threads=1)
    _, tids = run_mark(lib1, 40)
    assert set(tids.tolist()) == {threading.get_native_id()}
    with pytest.raises(ValueError, match="num_threads"):
        load(libpath, num_threads=-2)


def test_env_num_threads(monkeypatch):
    monkeypatch.setenv("TILELANG_NUM_THREADS", "3")
    assert launch_mod.default_num_threads() == 3
    monkeypatch.setenv("TILELANG_NUM_THREADS", "lots")
    with pytest.raises(ValueError, match="TILELANG_NUM_THREADS"):
        launch_mod.default_num_threads()
    monkeypatch.delenv("TILELANG_NUM_THREADS")
    assert launch_mod.default_num_threads() >= 1


def test_env_num_threads_in_fresh_process(libpath):
    code = (
        "import threading, numpy as np\n"
        "from tilelang.runtime.artifact import load\n"
        f"lib = load({libpath!r})\n"
        "h = np.zeros(30, np.int32); t = np.zeros(30, np.int64)\n"
        "lib.mark(h, t, 0)\n"
        "assert h.tolist() == [1] * 30\n"
        "assert set(t.tolist()) == {threading.get_native_id()}\n")
    env = {**os.environ, "TILELANG_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)


def test_workspace_is_zeroed_each_call(lib):
    x = np.arange(20, dtype=np.float32).reshape(5, 4)
    for threads in (1, 2):
        for _ in range(3):            # a reused, dirty workspace would accumulate
            out = lib.rowsum(x, out_idx=-1, num_threads=threads)
            np.testing.assert_array_equal(out, x.sum(axis=1))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_pool_works_in_a_forked_child(lib):
    run_mark(lib, 64, num_threads=2)            # the parent's pool has a worker now
    pid = os.fork()
    if pid == 0:                                # child: must not wait on a dead worker
        try:                                    # ... and must really use 2 threads
            for _ in range(3):
                hits, tids = run_mark(lib, 32, spin_us=2000, num_threads=2)
                if hits.tolist() != [1] * 32:
                    os._exit(1)
                if len(set(tids.tolist())) == 2:
                    os._exit(0)
            os._exit(3)
        finally:
            os._exit(2)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("a launch in a forked child hung")
