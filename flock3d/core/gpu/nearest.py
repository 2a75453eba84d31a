"""The k nearest candidates a boid sees, chosen on the GPU (topological neighbours).

A GPU thread reads its candidates where they lie, run after run (:mod:`flock3d.core.gpu.cells`),
and keeps the nearest it has seen so far in arrays of its local memory, of a size fixed when
the kernel compiles (:data:`MAX_NEAREST`): a kernel allocates nothing. Each seen candidate is
inserted in order of (distance, index), the order :func:`flock3d.core.components.nearest_seen`
chooses in on the CPU, so both choose the same boids whatever order they meet them in.

A plain numba function: numba-cuda compiles it into the kernels that call it (the CPU compiles
it for the tests), so it needs no numba-cuda to import.
"""

from __future__ import annotations

import numba

__all__ = ["MAX_NEAREST", "insert_nearest"]

#: The most topological neighbours (k) a GPU step chooses: the size of each thread's arrays of them.
MAX_NEAREST = 16


@numba.njit(inline="always")
def insert_nearest(sel, sel_d2, n, k, j, d2, bid):
    """Insert candidate row ``j`` (squared distance ``d2`` [units^2], boid index ``bid[j]``) into
    the ``n`` nearest chosen so far (``sel``: their rows, ``sel_d2``: their squared distances,
    nearest first; at equal distances the lower index first), keeping at most ``k``. Returns how
    many are chosen after it."""
    index = bid[j]
    if n == k and not (d2 < sel_d2[k - 1] or (d2 == sel_d2[k - 1] and index < bid[sel[k - 1]])):
        return n  # no nearer than the k-th
    p = n if n < k else k - 1
    while p > 0 and (sel_d2[p - 1] > d2 or (sel_d2[p - 1] == d2 and bid[sel[p - 1]] > index)):
        sel_d2[p], sel[p] = sel_d2[p - 1], sel[p - 1]
        p -= 1
    sel_d2[p], sel[p] = d2, j
    return min(n + 1, k)
