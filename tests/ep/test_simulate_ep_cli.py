"""`tilec simulate-ep` and its YAML configuration: the brief's file as written, flags
over the file, and clear errors (file:line:col, the key named) for bad files."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from tilelang.cli import main
from tilelang.ep.cluster.config import load_config
from tilelang.ep.errors_eplb import EPError

BRIEF = """\
training:
  strategy: moe_expert_parallel
  expert_count: 64
  communication:
    backend: deep_ep
    topology: hierarchical
    bandwidth_optimization: true
cluster:
  ranks: 16
  nodes: 2
  links:
    nvlink: {bandwidth_gb_s: 160, latency_us: 1.0}
    rdma: {bandwidth_gb_s: 50, latency_us: 3}
workload:
  tokens_per_rank: 256
  hidden: 512
"""

SMALL = ["--tokens", "128", "--hidden", "256", "--experts", "32", "--groups", "4"]


def tilec(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result


def write(tmp_path, text, name="moe.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_brief_config_is_accepted(tmp_path):
    values = load_config(write(tmp_path, BRIEF))
    assert values == {"experts": 64, "routing": "hierarchical", "eplb": True, "ranks": 16,
                      "nodes": 2, "nvlink_bw": 160.0, "nvlink_latency": 1.0,
                      "rdma_bw": 50.0, "rdma_latency": 3.0, "tokens": 256, "hidden": 512}
    r = tilec("simulate-ep", "--config", write(tmp_path, BRIEF))
    assert r.exit_code == 0, r.output
    assert "16 ranks (2 nodes x 8), 64 experts + 16 redundant (EPLB)" in r.output
    assert "hierarchical, no EPLB" in r.output and "hierarchical, EPLB" in r.output
    assert "flat," not in r.output                     # the file chose the topology


def test_flags_win_over_the_file(tmp_path):
    r = tilec("simulate-ep", "--config", write(tmp_path, BRIEF), "--ranks", "8", "--nodes",
              "1", "--no-eplb")
    assert r.exit_code == 0, r.output
    assert "8 ranks (1 node x 8), 64 experts, top-8" in r.output
    assert "flat, no EPLB" in r.output and ", EPLB" not in r.output   # one node: flat


@pytest.mark.parametrize("text,code,where,words", [
    ("training:\n  expert_cout: 64\n", "TL1203", ":2:3", "unknown key `training.expert_cout`"),
    ("cluster:\n  links:\n    nvlink: {bandwidth: 1}\n", "TL1203", ":3:14",
     "unknown key `cluster.links.nvlink.bandwidth`"),
    ("training:\n  communication:\n    topology: ring\n", "TL1204", ":3:15",
     "expected `hierarchical` or `flat`, got 'ring'"),
    ("cluster:\n  ranks: -4\n", "TL1204", ":2:10", "expected a positive integer"),
    ("training:\n  communication:\n    bandwidth_optimization: yes please\n", "TL1204",
     ":3:29", "expected true or false"),
    ("cluster:\n  links:\n    rdma: {bandwidth_gb_s: 0}\n", "TL1204", ":3:28",
     "expected a positive number"),
    ("training: [1, 2]\n", "TL1204", ":1:11", "`training` must be a mapping"),
    ("training:\n  strategy: data_parallel\n", "TL1204", ":2:13", "moe_expert_parallel"),
    ("cluster: {ranks: 4\n", "TL1205", ":1:10", "not valid YAML"),
    ("cluster:\n  ranks: 4\n nodes: 2\n", "TL1205", ":3:2", "not valid YAML"),
    ("gpus: 8\n", "TL1203", ":1:1", "unknown key `gpus`"),
])
def test_bad_config_is_a_clear_error(tmp_path, text, code, where, words):
    path = write(tmp_path, text)
    with pytest.raises(EPError) as info:
        load_config(path)
    assert info.value.code == code and words in str(info.value)
    r = tilec("simulate-ep", "--config", path)
    assert r.exit_code == 1
    assert f"error[{code}]" in r.output and f"{path}{where}" in r.output
    assert "^" in r.output and "Traceback" not in r.output


def test_unknown_key_lists_the_known_ones(tmp_path):
    r = tilec("simulate-ep", "--config", write(tmp_path, "cluster:\n  rank: 4\n"))
    assert "help: `cluster` takes: ranks, nodes, self_copies, shared_memory, links" in r.output


def test_shared_memory_flag_and_key(tmp_path):
    r = tilec("simulate-ep", "--ranks", "2", "--nodes", "1", "--shared-memory",
              "--nvlink-bw", "5", *SMALL, "--links")
    assert r.exit_code == 0, r.output
    assert "nvlink in" not in r.output          # only the copying rank's pool is used
    cfg = write(tmp_path, "cluster:\n  ranks: 2\n  nodes: 1\n  shared_memory: true\n")
    assert load_config(cfg)["shared_memory"] is True


def test_missing_config_file(tmp_path):
    r = tilec("simulate-ep", "--config", tmp_path / "nope.yaml")
    assert r.exit_code == 1 and "error[TL1205]: cannot read" in r.output


def test_inconsistent_flags_are_user_errors():
    r = tilec("simulate-ep", "--ranks", "12", "--nodes", "5", *SMALL)
    assert r.exit_code == 1 and "error[TL1201]" in r.output and "--nodes 5" in r.output
    r = tilec("simulate-ep", "--ranks", "6", "--nodes", "1", *SMALL)
    assert r.exit_code == 1 and "do not divide over 6 ranks" in r.output
    r = tilec("simulate-ep", "--topk", "40", *SMALL)
    assert r.exit_code == 1 and "topk (40) exceeds" in r.output


def test_tables_links_and_trace_round_trip(tmp_path):
    trace = tmp_path / "t.npz"
    r = tilec("simulate-ep", "--ranks", "16", *SMALL, "--links", "--save-trace", trace)
    assert r.exit_code == 0, r.output
    for name in ("flat, no EPLB", "hierarchical, no EPLB", "flat, EPLB", "hierarchical, EPLB",
                 "rdma in", "nvlink out", "max util", "replicas of one expert"):
        assert name in r.output
    again = tilec("simulate-ep", "--ranks", "16", "--trace", trace, "--hidden", "256",
                  "--links")
    assert again.exit_code == 0
    assert r.output.split("\n", 3)[3] == again.output.split("\n", 3)[3]   # same tables
    bad = tilec("simulate-ep", "--ranks", "16", "--trace", tmp_path / "nope.npz")
    assert bad.exit_code == 1 and "TL1202" in bad.output


def test_projection_table_and_picture(tmp_path):
    svg = tmp_path / "step.svg"
    r = tilec("simulate-ep", "--ranks", "16", *SMALL, "--project", "--compute-tflops",
              "500", "--svg", svg)
    assert r.exit_code == 0, r.output
    assert "training step of one MoE layer" in r.output and "comm share" in r.output
    root = ET.parse(svg).getroot()                         # well-formed XML
    assert root.tag.endswith("svg")
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert any(t.startswith("dispatch:") for t in titles)


def test_runs_as_python_module():
    """`python -m tilelang.cli` runs cli.py as __main__: registering the command must not
    import the CLI module a second time."""
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "tilelang.cli", "simulate-ep", "--ranks",
                           "8", *SMALL], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "flat, no EPLB" in proc.stdout


def test_help_shows_the_settings_defaults():
    from tilelang.ep.cluster.settings import Settings
    from tilelang.simulate_ep import _FLAGS
    defaults = Settings()
    for flag, field, _, _, shown in _FLAGS:
        assert getattr(defaults, field) == shown, flag


def test_tilec_starts_without_the_model():
    """Registering simulate-ep loads neither numpy nor tilelang.ep: every tilec command
    starts as fast as before."""
    import subprocess
    import sys
    code = ("import sys, tilelang.cli; print(sorted(m for m in sys.modules "
            "if m == 'numpy' or m.startswith('tilelang.ep')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
