"""Compute times of a training step's kernels on the simulated accelerator (tcsim),
memoised by shape.

`gemm_seconds(m, n, k)` and `attention_seconds(seq, heads)` run `step_kernels.tl` on a
tcsim machine (`h100_like` by default) in timing-only mode. A kernel's blocks are
independent and alike (GEMM tiles; attention heads), so a grid of more than
`WAVES` waves of blocks is timed on a slice of it — whole rows of GEMM tiles, whole heads
— of about `WAVES` waves, and scaled by the ratio of blocks: the simulation then takes
seconds at any shape. The results are kept in memory and in `ep-step-timings.json` in
the compiler's cache directory (`TILELANG_CACHE_DIR`; not with
`TILELANG_DISABLE_CACHE=1`), keyed by machine config, shape, the kernels' source and the
simulator's (its code generator, machine configs and engine: a change to any of them
times again).
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_name("step_kernels.tl")
GEMM_TILE = (128, 256)          # BLOCK_M, BLOCK_N of step_kernels.tl's gemm
ATTN_BLOCK_Q = 64
WAVES = 2
_MEMO: dict = {}
_LIBS: dict = {}


def gemm_seconds(m: int, n: int, k: int, config: str = "h100_like") -> float:
    """Time of a bf16 (m, k) x (k, n) GEMM with a float32 result."""
    if min(m, n, k) <= 0:
        return 0.0
    rows, cols = -(-m // GEMM_TILE[0]), -(-n // GEMM_TILE[1])
    slots = WAVES * _cores(config)
    sub_cols = min(cols, slots)
    sub_rows = min(rows, max(1, slots // sub_cols))
    scale = rows * cols / (sub_rows * sub_cols)
    sub_m = m if sub_rows == rows else sub_rows * GEMM_TILE[0]
    sub_n = n if sub_cols == cols else sub_cols * GEMM_TILE[1]
    shapes = [((sub_m, k), "bfloat16"), ((k, sub_n), "bfloat16"), ((sub_m, sub_n), "float32")]
    return scale * _timed(config, "gemm", shapes)


def attention_seconds(seq: int, heads: int, config: str = "h100_like") -> float:
    """Time of causal attention over `seq` tokens and `heads` heads of dimension 128."""
    if min(seq, heads) <= 0:
        return 0.0
    per_head = -(-seq // ATTN_BLOCK_Q)
    sub_heads = min(heads, max(1, WAVES * _cores(config) // per_head))
    shape = ((sub_heads, seq, 128), "bfloat16")
    return heads / sub_heads * _timed(config, "attention", [shape] * 4)


def _timed(config: str, kernel: str, shapes) -> float:
    key = f"{config}|{kernel}|{_identity()}|{shapes}"
    if key not in _MEMO:
        disk = _load_disk()
        if key not in disk:
            disk[key] = _simulate(config, kernel, shapes)
            _store_disk(disk)
        _MEMO.update(disk)
    return _MEMO[key]


def _simulate(config: str, kernel: str, shapes) -> float:
    lib = _LIBS.get(config)
    if lib is None:
        import tilelang
        lib = _LIBS[config] = tilelang.compile(str(SOURCE), target=f"tcsim:{config}",
                                               raster=8)
    k = lib[kernel]
    k(*shapes, mode="timing")
    return float(k.last_report.time_s)


def _cores(config: str) -> int:
    from ...targets.tcsim.config import get_config
    return get_config(config).cores


_IDENTITY: list = []
_SIMULATOR_PARTS = ("codegen/tcsim", "targets/tcsim", "runtime/tcsim")


def _identity() -> str:
    """A hash of step_kernels.tl and of the size and time of every file of the tcsim
    code generator, machine configs and simulator."""
    if not _IDENTITY:
        h = hashlib.sha256(SOURCE.read_bytes())
        root = Path(__file__).resolve().parents[2]
        for part in _SIMULATOR_PARTS:
            for path in sorted((root / part).rglob("*.py")):
                st = path.stat()
                h.update(f"{path.relative_to(root)}:{st.st_size}:{st.st_mtime_ns}".encode())
        _IDENTITY.append(h.hexdigest()[:16])
    return _IDENTITY[0]


def _disk_path() -> Path:
    base = os.environ.get("TILELANG_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "tilelang")
    return Path(base) / "ep-step-timings.json"


def _disk_enabled() -> bool:
    return os.environ.get("TILELANG_DISABLE_CACHE", "") not in ("1", "true", "yes")


def _load_disk() -> dict:
    if not _disk_enabled():
        return dict(_MEMO)
    try:
        return json.loads(_disk_path().read_text())
    except (OSError, ValueError):
        return {}


def _store_disk(entries: dict) -> None:
    """Atomic (temporary file, then rename); a cache that cannot be written is skipped."""
    if not _disk_enabled():
        return
    path = _disk_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".ep-timings-")
        with os.fdopen(fd, "w") as f:
            json.dump(entries, f)
        os.replace(tmp, path)
    except OSError:
        pass
