"""The timers build, the report's text / JSON / HTML, and `tilec profile`."""
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import pytest

import tilelang
from tilelang.driver import build_module
from tilelang.ir.nodes import Module
from tilelang.ir.printer import print_module
from tilelang.profiler import timers

from .kernels import AXPY, GEMM

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ----------------------------------------------------------------------------- timers

def test_instrumented_kernel_text():
    func = tilelang.compile(GEMM)._func()
    timed, grids = timers.instrument(func)
    text = print_module(Module((timed,)))
    assert grids[0].phases == ("fill", "pack A", "pack B", "gemm", "store")
    assert "tl_timers0: T.Tensor((tl_timer_blocks0, 7), \"int64\")" in text
    assert "tl_block0 = bx + T.ceildiv(N, BLOCK_M) * by" not in text   # constants folded
    assert re.search(r"tl_block0 = bx \+ T\.ceildiv\(N, 64\) \* by", text)
    body = text[text.index("for k in T.Pipelined"):]
    # each tile op of the pipelined loop sits between two counter reads
    assert re.search(r"tl_t1 = T\.cycle_counter\(\)\n\s+T\.copy\(A\[", body)
    assert re.search(r"T\.gemm\(A_s, B_s, C_f\)\n\s+tl_timers0\[tl_block0, 5\] = "
                     r"tl_timers0\[tl_block0, 5\] \+ \(T\.cycle_counter\(\) - tl_t3\)", body)


def test_timed_build_computes_the_same_and_its_stamps_add_up():
    kernel = tilelang.compile(GEMM)
    timed, grids = timers.instrument(kernel._func())
    rk = build_module(Module((timed,)), kernel.options)[timed.name]
    rng = np.random.default_rng(1)
    a = rng.random((130, 70), np.float32)
    b = rng.random((70, 100), np.float32)
    c = np.zeros((130, 100), np.float32)
    table = np.zeros((3 * 2, 7), np.int64)
    rk(a, b, c, table, num_threads=1)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5)
    assert (table[:, timers.END] > table[:, timers.START]).all()
    span = table[:, timers.END] - table[:, timers.START]
    phases = table[:, timers.FIRST_PHASE:].sum(axis=1)
    assert (phases <= span).all() and (phases > 0.5 * span).all()
    hz = timers.counter_hz()
    assert hz > 1e6
    gt = timers.read(grids[0], [table], table, 1, hz)
    assert gt.blocks == 6 and gt.idle_share < 0.5
    assert sum(gt.share(p) for p in gt.phases) == pytest.approx(
        sum(gt.phases.values()) / gt.busy)


def test_thread_timelines_are_recovered_from_stamps():
    # two threads: blocks (0-2, 2-4) on one, (0-3) on the other, then idle till 4
    ends = timers._threads_of(np.array([0.0, 2.0, 0.0]), np.array([2.0, 4.0, 3.0]))
    assert sorted(ends) == [3.0, 4.0]


# ----------------------------------------------------------------------------- outputs

@pytest.fixture(scope="module")
def tcsim_report():
    kernel = tilelang.compile(GEMM, target="tcsim:tiny",
                              defines={"dtype": "bfloat16", "NUM_STAGES": 1})
    return kernel.profile(sizes={"M": 256, "N": 256, "K": 256})


def test_text_and_json(tcsim_report):
    text = tcsim_report.text()
    for word in ("roofline", "reached", "bound", "MMA", "advice"):
        assert word in text
    data = json.loads(tcsim_report.to_json())
    assert data["bound"] == tcsim_report.bound
    g = data["grids"][0]
    assert g["counts"]["flops"] == 2 * 256 ** 3
    assert 0 < g["roofline"]["fraction"] <= 1
    assert data["advice"] and data["advice"][0]["line"]


class _Svg(HTMLParser):
    def __init__(self):
        super().__init__()
        self.elements = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))


def test_html_has_the_roofline_and_the_bars(tcsim_report):
    page = tcsim_report.html()
    assert page.startswith("<!DOCTYPE html>") and "http" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")                 # nothing to fetch
    parser = _Svg()
    parser.feed(page)
    by_class = {}
    for tag, attrs in parser.elements:
        by_class.setdefault(attrs.get("class", ""), []).append((tag, attrs))
    (mem_tag, mem), = by_class["ceiling memory"]
    (cmp_tag, cmp), = by_class["ceiling compute"]
    (pt_tag, point), = by_class["kernel"]
    assert mem_tag == cmp_tag == "line" and pt_tag == "circle"
    # the ceilings meet at the ridge; the compute ceiling is flat; memory rises to it
    assert float(mem["x2"]) == pytest.approx(float(cmp["x1"]))
    assert float(mem["y2"]) == pytest.approx(float(cmp["y1"]))
    assert float(cmp["y1"]) == pytest.approx(float(cmp["y2"]))
    assert float(mem["y1"]) > float(mem["y2"])                      # SVG y grows down
    # the kernel is on or under the roofline at its intensity
    x, y = float(point["cx"]), float(point["cy"])
    if x >= float(cmp["x1"]):
        roof_y = float(cmp["y1"])
    else:
        t = (x - float(mem["x1"])) / (float(mem["x2"]) - float(mem["x1"]))
        roof_y = float(mem["y1"]) + t * (float(mem["y2"]) - float(mem["y1"]))
    assert y >= roof_y - 1.0
    segments = by_class["bar-segment"]
    names = {a["data-name"] for _, a in segments}
    assert {"busy", "waiting", "idle"} <= names
    shares = [float(a["data-share"]) for _, a in segments]
    assert all(0 <= s <= 1 for s in shares)


# ----------------------------------------------------------------------------- tilec

def _tilec(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "tilelang.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_tilec_profile(tmp_path):
    out = tmp_path / "report.html"
    r = _tilec("profile", "examples/vector_add.tl", "--shape", "N=100000", "--threads", "1",
               "--rep", "5", "--html", str(out))
    assert r.returncode == 0, r.stderr
    assert "bound       memory" in r.stdout and "advice" in r.stdout
    assert out.read_text().count("<svg") == 2
    j = _tilec("profile", "examples/vector_add.tl", "--shape", "N=4096", "--target",
               "tcsim:tiny", "--json")
    assert j.returncode == 0, j.stderr
    assert json.loads(j.stdout)["target"] == "tcsim:tiny"


def test_tilec_profile_user_errors():
    r = _tilec("profile", "examples/gemm.tl", "--shape", "M=64")
    assert r.returncode == 1 and "error[TL0707]" in r.stderr and "Traceback" not in r.stderr
    r = _tilec("profile", "examples/vector_add.tl", "--shape", "N=64", "--html",
               "/nonexistent-dir/x.html", "--target", "tcsim:tiny")
    assert r.returncode == 1 and "cannot write" in r.stderr


@pytest.mark.slow
def test_html_renders_in_headless_chromium(tmp_path, tcsim_report):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed")
    page = tmp_path / "report.html"
    page.write_text(tcsim_report.html())
    png = tmp_path / "report.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                    f"--screenshot={png}", "--window-size=900,1200", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
