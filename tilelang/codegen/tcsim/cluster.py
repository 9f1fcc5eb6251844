"""Thread-block clusters: which loads the blocks of a cluster share.

With `cluster=(cx, cy)` the blocks whose indices differ only within a cx x cy tile of
the grid launch together on neighbouring cores. A global load whose box is the same for
all of them (its start does not depend on the block indices the cluster spans, and it
is not under a loop or branch that does) becomes a multicast load (`DMA.LD ... mcast=1`):
read from L2 once and delivered to every block of the cluster, as Hopper's TMA
multicast does. Everything else stays a load of its own.
"""
from __future__ import annotations

from ...ir.nodes import Buffer, For, If, Let, Load, Store, Var
from ...ir.visitor import walk


class ClusterVarying:
    """The scalar values of a kernel that may differ between the blocks of a cluster:
    the spanned block indices and whatever is computed from them (lets, loop variables
    with such bounds, `T.alloc_var` scalars assigned such values)."""

    def __init__(self, kernel, cluster: tuple[int, ...]):
        self.vars: set = {v for v, c in zip(kernel.block_vars, cluster) if c > 1}
        self.scalars: set[str] = set()          # T.alloc_var buffers
        self.active = bool(self.vars)
        changed = self.active
        while changed:
            changed = False
            for n in walk(kernel.body):
                if isinstance(n, Let) and n.var not in self.vars and self.depends(n.value):
                    self.vars.add(n.var)
                    changed = True
                elif isinstance(n, For) and n.var not in self.vars and \
                        (self.depends(n.min) or self.depends(n.extent)):
                    self.vars.add(n.var)
                    changed = True
                elif isinstance(n, Store) and n.buffer.scope == "var" and \
                        n.buffer.name not in self.scalars and self.depends(n.value):
                    self.scalars.add(n.buffer.name)
                    changed = True

    def depends(self, expr) -> bool:
        """Whether `expr` may take different values in the blocks of one cluster."""
        if not self.active or expr is None:
            return False
        for n in walk(expr):
            if isinstance(n, Var) and n in self.vars:
                return True
            if isinstance(n, Load) and n.buffer.scope == "var" and \
                    n.buffer.name in self.scalars:
                return True
            if isinstance(n, Buffer) and n.scope == "var" and n.name in self.scalars:
                return True
        return False

    def steers(self, stmt) -> bool:
        """Whether a loop or branch runs differently in the blocks of one cluster."""
        if isinstance(stmt, For):
            return self.depends(stmt.min) or self.depends(stmt.extent)
        if isinstance(stmt, If):
            return self.depends(stmt.cond)
        return False
