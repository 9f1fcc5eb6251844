"""A fuzz campaign: N random programs (or a time budget), checked by worker processes.

    python -m tilelang.fuzz --programs 500 --time 600 --seed 1 --jobs 2
    make fuzz FUZZ_ARGS="--programs 500 --seed 1"

Program i of a campaign is generated from seed `seed + i`, so a campaign is reproduced
by its seed and count. A share of the programs (`--malformed`) is mutated into malformed
input instead and only compiled. The summary gives the programs tried, the rate, and
the outcomes: miscompiles, crashes (a worker process died or hung) and internal errors
are bugs; with `--shrink` each bug's program is shrunk and saved under `--save-dir`
as a regression test. The exit status is 1 when a bug was found.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass, field

from .generate import FAMILIES

BUG_KINDS = ("miscompile", "crash", "internal")
PROGRAM_TIMEOUT = 300.0          # seconds one program may take before it counts as a hang
ALL_STAGES_EVERY = 5             # mixed stages: every pass interpreted for 1 program in 5


@dataclass
class Summary:
    seed: int
    jobs: int
    stages: str
    tried: int = 0
    seconds: float = 0.0
    outcomes: collections.Counter = field(default_factory=collections.Counter)
    malformed: collections.Counter = field(default_factory=collections.Counter)
    families: collections.Counter = field(default_factory=collections.Counter)
    stages_checked: int = 0
    bugs: list = field(default_factory=list)

    def record(self, reply: dict) -> None:
        self.tried += 1
        kind = reply["kind"]
        if reply.get("family") == "malformed":
            self.malformed[kind] += 1
            kind = "internal" if kind == "internal" else "ok"
        else:
            self.outcomes[kind] += 1
            self.families[reply.get("family", "?")] += 1
        self.stages_checked += reply.get("stages", 0)
        if kind in BUG_KINDS:
            self.bugs.append(reply)

    def count(self, kind: str) -> int:
        return sum(1 for b in self.bugs if b["kind"] == kind)

    def lines(self) -> list[str]:
        rate = self.tried / self.seconds if self.seconds else 0.0
        diff = sum(self.outcomes.values())
        out = [f"fuzz: seed {self.seed} (tilelang {_version()}), {self.tried} programs "
               f"({diff} differential, "
               f"{sum(self.malformed.values())} malformed) in {self.seconds:.0f} s, "
               f"{rate:.2f} programs/s, {self.jobs} job{'s' if self.jobs != 1 else ''}, "
               f"stages {self.stages}",
               "  differential: " + ", ".join(f"{k} {v}" for k, v in
                                               sorted(self.outcomes.items())),
               "  families: " + ", ".join(f"{k} {v}" for k, v in sorted(self.families.items())),
               "  malformed: " + (", ".join(f"{k} {v}" for k, v in
                                            sorted(self.malformed.items())) or "none"),
               f"  interpreter runs compared: {self.stages_checked}",
               f"  miscompiles {self.count('miscompile')}, crashes {self.count('crash')}, "
               f"internal errors {self.count('internal')}"]
        for b in self.bugs:
            out.append(f"  BUG seed {b['seed']} ({b.get('family', '')}): {b['kind']} in "
                       f"{b.get('where', '')}: {b.get('detail', '')[:300]}")
        return out


def _version() -> str:
    """The commit the campaign ran (a seed reproduces a program only with its code)."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10,
                             cwd=os.path.dirname(os.path.abspath(__file__)))
        return out.stdout.strip() or "unknown commit"
    except (OSError, subprocess.SubprocessError):
        return "unknown commit"


# ----------------------------------------------------------------------------- workers

class Worker:
    def __init__(self):
        env = dict(os.environ, TILELANG_DISABLE_CACHE="1", PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen([sys.executable, "-m", "tilelang.fuzz.worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, text=True,
                                     bufsize=1)
        self.request: dict | None = None
        self.started = 0.0

    def send(self, request: dict) -> None:
        self.request, self.started = request, time.monotonic()
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        try:
            self.proc.kill()
        except OSError:
            pass
        self.proc.wait()


def _died(worker: Worker, why: str) -> dict:
    r = worker.request or {}
    return {"seed": r.get("seed"), "family": r.get("family", ""), "kind": "crash",
            "where": "worker process", "detail": why, "stages": 0, "seconds": 0.0,
            "request": r}


def run_requests(requests, jobs: int, deadline: float | None, on_reply) -> None:
    """Send `requests` (an iterator) to `jobs` workers; `on_reply(reply)` for each."""
    pending = iter(requests)
    sel = selectors.DefaultSelector()
    workers: list[Worker] = []
    busy = 0

    def feed(w: Worker) -> bool:
        if deadline is not None and time.monotonic() >= deadline:
            return False
        req = next(pending, None)
        if req is None:
            return False
        w.send(req)
        return True

    for _ in range(jobs):
        w = Worker()
        workers.append(w)
        sel.register(w.proc.stdout, selectors.EVENT_READ, w)
        if feed(w):
            busy += 1
    try:
        while busy:
            events = sel.select(timeout=5.0)
            for key, _ in events:
                w: Worker = key.data
                raw = w.proc.stdout.readline()
                if raw:
                    reply = json.loads(raw)
                else:                               # the process died under the request
                    code = w.proc.wait()
                    reply = _died(w, f"the worker died (exit status {code}) running it")
                    sel.unregister(w.proc.stdout)
                    w = _replace(workers, w, sel)
                busy -= 1
                on_reply(reply)
                if feed(w):
                    busy += 1
            for w in list(workers):
                if w.request is not None and time.monotonic() - w.started > PROGRAM_TIMEOUT:
                    reply = _died(w, f"no answer after {PROGRAM_TIMEOUT:.0f} s (a hang)")
                    sel.unregister(w.proc.stdout)
                    w.kill()
                    w = _replace(workers, w, sel)
                    busy -= 1
                    on_reply(reply)
                    if feed(w):
                        busy += 1
    finally:
        for w in workers:
            w.kill()


def _replace(workers, old: Worker, sel) -> Worker:
    new = Worker()
    workers[workers.index(old)] = new
    sel.register(new.proc.stdout, selectors.EVENT_READ, new)
    return new


# ----------------------------------------------------------------------------- campaign

def campaign(programs: int, seconds: float | None, seed: int, jobs: int, stages: str,
             malformed: float, families=FAMILIES, progress=None) -> Summary:
    summary = Summary(seed, jobs, stages)
    start = time.monotonic()
    deadline = None if seconds is None else start + seconds
    every = max(1, int(round(1 / malformed))) if malformed > 0 else 0

    def requests():
        for i in range(programs):
            mode = stages if stages != "mixed" else \
                ("all" if (seed + i) % ALL_STAGES_EVERY == 0 else "bisect")
            yield {"op": "seed", "seed": seed + i, "stages": mode,
                   "families": list(families), "malformed": bool(every) and i % every == 0}

    def on_reply(reply):
        summary.record(reply)
        summary.seconds = time.monotonic() - start
        if progress is not None:
            progress(summary, reply)

    run_requests(requests(), jobs, deadline, on_reply)
    summary.seconds = time.monotonic() - start
    return summary


def shrink_bug(bug: dict, families, save_dir: str | None) -> str | None:
    """Shrink one bug's program (checked by a worker) and save it; returns the path."""
    from .generate import RandomChooser, generate
    from .shrink import save, shrink
    if bug.get("family") == "malformed" or bug.get("seed") is None:
        return None
    program = generate(RandomChooser(bug["seed"]), tuple(families))
    want = (bug["kind"], bug.get("where", ""))

    def still_fails(candidate) -> bool:
        got = []
        request = {"op": "text", "text": candidate.render(), "sizes": candidate.size_dict,
                   "seed": bug["seed"], "targets": list(candidate.targets),
                   "stages": "all" if bug["kind"] == "miscompile" else "ends"}
        run_requests([request], 1, None, got.append)
        return bool(got) and (got[0]["kind"], got[0].get("where", "")) == want

    small = shrink(program, still_fails)
    if save_dir is None:
        return None
    return save(small.render(), small.size_dict, bug["seed"],
                f"{bug['kind']} in {bug.get('where', '')}: {bug.get('detail', '')}",
                save_dir, found_by=f"tilelang.fuzz campaign, program seed {bug['seed']}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tilelang.fuzz", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--programs", type=int, default=200, help="programs to try (default 200)")
    ap.add_argument("--time", type=float, default=None, help="stop after this many seconds")
    ap.add_argument("--seed", type=int, default=0, help="seed of the first program")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--stages", choices=("mixed", "bisect", "ends", "all"), default="mixed",
                    help="when the interpreter runs the lowered IR: after every pass "
                         "(all), after the last (ends), only to find the pass when a "
                         "target disagrees (bisect), or all for one program in "
                         f"{ALL_STAGES_EVERY} and bisect for the others (mixed, default)")
    ap.add_argument("--malformed", type=float, default=0.1,
                    help="share of programs mutated into malformed input (default 0.1)")
    ap.add_argument("--families", default=",".join(FAMILIES),
                    help=f"program families (default {','.join(FAMILIES)})")
    ap.add_argument("--shrink", action="store_true", help="shrink and save every bug")
    ap.add_argument("--save-dir", default="tests/regressions",
                    help="where shrunk programs go (default tests/regressions)")
    ap.add_argument("--log", default=None, help="append every reply as a JSON line here")
    a = ap.parse_args(argv)
    families = tuple(f for f in a.families.split(",") if f)
    log = open(a.log, "a", encoding="utf-8") if a.log else None

    def progress(summary, reply):
        if log:
            log.write(json.dumps(reply) + "\n")
            log.flush()
        if reply["kind"] in BUG_KINDS:
            print(f"  [{summary.tried}] BUG seed {reply['seed']}: {reply['kind']} in "
                  f"{reply.get('where', '')}: {reply.get('detail', '')[:200]}", flush=True)
        elif summary.tried % 50 == 0:
            print(f"  [{summary.tried}] {summary.tried / summary.seconds:.2f} programs/s",
                  flush=True)

    summary = campaign(a.programs, a.time, a.seed, a.jobs, a.stages, a.malformed, families,
                       progress)
    print("\n".join(summary.lines()), flush=True)
    if a.shrink:
        for bug in summary.bugs:
            path = shrink_bug(bug, families, a.save_dir)
            if path:
                print(f"  shrunk seed {bug['seed']} -> {path}", flush=True)
    return 1 if summary.bugs else 0
