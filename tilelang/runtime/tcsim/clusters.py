"""Thread-block clusters: their launch order and the gangs of block slots that run
them (see docs/tcsim.md, "Clusters"). A cluster's blocks start together on
neighbouring cores and free them together; multicast loads meet in sim.py."""
from __future__ import annotations

import math


class Gang:
    """Block slots on `cluster_size` neighbouring cores that run one cluster's blocks
    together (a single slot without clusters); `launch` numbers the cluster."""
    __slots__ = ("cores", "active", "launch", "active_size")

    def __init__(self, cores):
        self.cores = cores
        self.active = 0
        self.launch = -1
        self.active_size = len(cores)


def check_cluster(grid, cluster, cfg) -> None:
    from .errors import LaunchError
    if math.prod(cluster) > cfg.cores:
        raise LaunchError(f"a cluster of {'x'.join(map(str, cluster))} blocks needs more "
                          f"than the {cfg.cores} cores of {cfg.name}")
    if any(g % c for g, c in zip(grid, cluster)) and min(grid) > 0:
        raise LaunchError(f"grid {'x'.join(map(str, grid))} is not a multiple of the "
                          f"cluster {'x'.join(map(str, cluster))}: every cluster must be "
                          f"whole")


def cluster_order(order, cluster) -> list[list[tuple]]:
    """The launch order of clusters: each cluster once, where its first block comes in
    block order, with its blocks in rank order (x fastest). Without clusters, one
    block per launch."""
    cx, cy, cz = cluster
    if cx * cy * cz == 1:
        return [[c] for c in order]
    out, seen = [], set()
    for bx, by, bz in order:
        key = (bx // cx, by // cy, bz // cz)
        if key in seen:
            continue
        seen.add(key)
        x0, y0, z0 = key[0] * cx, key[1] * cy, key[2] * cz
        out.append([(x0 + i, y0 + j, z0 + k) for k in range(cz) for j in range(cy)
                    for i in range(cx)])
    return out
