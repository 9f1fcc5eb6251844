"""Start a program as N ranks on this host (the `shm` transport): `tilec launch -n N
script.py`, or `launch([...], N)` from Python (the tests' launcher).

The launcher owns the run: it removes what crashed runs left in /dev/shm, creates the
host's control block, starts the ranks with TILELANG_RANK / TILELANG_WORLD_SIZE /
TILELANG_SESSION in their environment, and watches them. When a rank dies or fails,
it marks the run aborted in the control block, so the other ranks' waits stop with an
error naming that rank instead of running into their timeout; ranks still alive after
the timeout are killed. Whatever the outcome, the run's segments are removed.
"""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from .control import KIND_EXITED, KIND_KILLED, ControlBlock
from .shm import clean_stale, remove_session
from .wait import timeout_s

_GRACE_S = 10.0


@dataclass
class LaunchResult:
    returncodes: list
    outputs: list = field(default_factory=list)    # per rank, when captured

    @property
    def ok(self) -> bool:
        return all(rc == 0 for rc in self.returncodes)

    @property
    def returncode(self) -> int:
        """0, or the status of the first rank that failed (128 + signal when killed)."""
        for rc in self.returncodes:
            if rc:
                return rc if rc > 0 else 128 - rc
        return 0


def launch(argv: list, num_ranks: int, *, env: dict | None = None, capture: bool = False,
           timeout: float | None = None) -> LaunchResult:
    """Run `python *argv` as `num_ranks` ranks and wait for all of them. `timeout`: how
    long ranks may outlive a failed one (default: the wait timeout plus a grace)."""
    if num_ranks < 1:
        raise ValueError(f"the number of ranks must be at least 1, got {num_ranks}")
    clean_stale()
    session = f"{os.getpid()}-{secrets.token_hex(4)}"
    control = ControlBlock.create(session)
    logs, procs = [], []
    try:
        for rank in range(num_ranks):
            out = tempfile.TemporaryFile() if capture else None
            logs.append(out)
            procs.append(subprocess.Popen([sys.executable, *argv],
                                          env=_rank_env(env, rank, num_ranks, session),
                                          stdout=out, stderr=subprocess.STDOUT if capture
                                          else None))
        codes = _watch(procs, control, timeout_s() + _GRACE_S if timeout is None else timeout)
        outputs = [_read(f) for f in logs] if capture else []
        return LaunchResult(codes, outputs)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        control.close()
        remove_session(session)


def _rank_env(extra: dict | None, rank: int, num_ranks: int, session: str) -> dict:
    env = dict(os.environ)
    env.update(extra or {})
    env.update(TILELANG_RANK=str(rank), TILELANG_WORLD_SIZE=str(num_ranks),
               TILELANG_SESSION=session)
    # the host's cores are shared among the ranks (at least one thread each)
    env.setdefault("TILELANG_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // num_ranks)))
    return env


def _watch(procs: list, control: ControlBlock, grace: float) -> list:
    """Wait for every rank; mark the run aborted at the first failure and kill what is
    still running `grace` seconds after it."""
    codes = [None] * len(procs)
    failed_at = None
    while any(c is None for c in codes):
        for rank, p in enumerate(procs):
            if codes[rank] is None and (rc := p.poll()) is not None:
                codes[rank] = rc
                if rc != 0 and failed_at is None:
                    failed_at = time.monotonic()
                    kind, status = (KIND_KILLED, -rc) if rc < 0 else (KIND_EXITED, rc)
                    control.abort(rank, kind, status)
        if failed_at is not None and time.monotonic() - failed_at > grace:
            for rank, p in enumerate(procs):
                if codes[rank] is None:
                    p.send_signal(signal.SIGKILL)
                    codes[rank] = p.wait()
        time.sleep(0.01)
    return codes


def _read(f) -> str:
    f.seek(0)
    text = f.read().decode("utf-8", errors="replace")
    f.close()
    return text


__all__ = ["launch", "LaunchResult"]
