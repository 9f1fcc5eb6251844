"""Bandwidth pools: posts deferred while a pool event is handled land on the agenda
where the posts themselves would have gone, less the events they made stale."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from tilelang.runtime.tcsim.bandwidth import Pool, flush
from tilelang.runtime.tcsim.machine import POOL

TIMES = [5.0, 6.0, 7.5]


def _agenda(steps, deferring):
    """The agenda after `steps`: ("push", t) appends another unit's event at t, ("post",
    p, t) is pool p posting its next completion at t (a new version each time)."""
    times, at = [], {}
    deferred = [] if deferring else None
    pools = [Pool(f"p{i}", 1.0, 1.0, times, at) for i in range(2)]
    for k, step in enumerate(steps):
        if step[0] == "push":
            at.setdefault(step[1], []).append(("other", k))
            continue
        # an idle pool of 1 byte/cycle given t bytes at time 0 posts its completion at t
        pool, t = pools[step[1]], step[2]
        pool.heap, pool.n, pool.v, pool.t = [], 0, 0.0, 0.0
        pool.deferred = deferred
        pool.add(0.0, t, ("job", k), None)
    if deferring:
        flush(deferred, at, times)
    live = {id(p): p.version for p in pools}
    # what the handler sees: every event but the pool events no longer current
    return {t: [e if e[0] != POOL else (POOL, e[1].name, e[2]) for e in events
                if e[0] != POOL or e[2] == live[id(e[1])]] for t, events in at.items()}


steps = st.lists(st.one_of(st.tuples(st.just("push"), st.sampled_from(TIMES)),
                           st.tuples(st.just("post"), st.integers(0, 1),
                                     st.sampled_from(TIMES))), max_size=12)


@settings(max_examples=300, deadline=None)
@given(steps)
def test_deferred_posts_land_where_the_posts_would_have(steps):
    direct, deferred = _agenda(steps, False), _agenda(steps, True)
    assert {t: e for t, e in direct.items() if e} == {t: e for t, e in deferred.items() if e}
