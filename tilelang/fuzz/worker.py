"""A fuzz worker: a process that checks programs for the campaign, one per request.

Requests and replies are JSON lines on the worker's stdin and on a private copy of its
stdout (anything the compiler or a kernel prints goes to stderr), so a crash of the
process (a segfault in generated code) loses only the program being checked, and the
campaign sees it as the end of the stream.

    {"op": "seed", "seed": 7, "stages": "ends", "families": [...], "malformed": false}
    {"op": "text", "text": "...", "sizes": {...}, "seed": 7, "targets": [...], ...}
"""
from __future__ import annotations

import json
import os
import sys
import time


OPT_LEVELS = (3, 2, 3, 1, 3, 0)      # every level of LLVM's pipeline, -O3 most often


def handle(request: dict) -> dict:
    from .differential import check
    from .generate import RandomChooser, generate
    start = time.perf_counter()
    if request["op"] == "exit":         # the campaign runner's tests: a worker that dies
        os._exit(int(request.get("status", 1)))
    if request["op"] == "seed":
        seed = request["seed"]
        program = generate(RandomChooser(seed), tuple(request["families"]))
        if request.get("malformed"):
            return _malformed(program, seed, start)
        text, sizes, targets = program.render(), program.size_dict, program.targets
        family = program.family
    else:
        seed, text, sizes = request["seed"], request["text"], request["sizes"]
        targets, family = tuple(request["targets"]), request.get("family", "")
    opt = request.get("opt", OPT_LEVELS[seed % len(OPT_LEVELS)])
    verdict = check(text, sizes, seed=seed, targets=targets,
                    stages=request.get("stages", "ends"), opt=opt)
    reply = {"seed": seed, "family": family, "kind": verdict.kind, "where": verdict.where,
             "detail": verdict.detail[:2000], "stages": verdict.stages_checked,
             "seconds": time.perf_counter() - start}
    if verdict.is_bug:                  # the program itself, whatever generated it
        reply.update(text=text, sizes=sizes, targets=list(targets))
    return reply


def _malformed(program, seed: int, start: float) -> dict:
    from .generate import RandomChooser
    from .malformed import check_mutant, mutate
    text = mutate(program.render(), RandomChooser(seed + 1))
    outcome, detail = check_mutant(text, program.targets)
    return {"seed": seed, "family": "malformed", "kind": outcome,
            "where": "malformed", "detail": detail[:2000], "text": text if detail else "",
            "stages": 0, "seconds": time.perf_counter() - start}


def main() -> None:
    os.environ.setdefault("TILELANG_DISABLE_CACHE", "1")    # thousands of one-off kernels
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)                                           # stray output goes to stderr
    sys.stdout = sys.stderr
    for raw in sys.stdin:
        request = json.loads(raw)
        try:
            reply = handle(request)
        except Exception as e:  # noqa: BLE001 - the harness itself must keep going
            reply = {"seed": request.get("seed"), "family": "", "kind": "internal",
                     "where": "fuzz harness", "detail": f"{type(e).__name__}: {e}",
                     "stages": 0, "seconds": 0.0}
        replies.write(json.dumps(reply) + "\n")


if __name__ == "__main__":
    main()
