"""The GPU step's cell grid, as device functions: which cell a boid is in, and where the
candidates around a cell lie in the boids sorted by cell.

Plain numba functions: numba-cuda compiles them into the kernels that call them (the CPU
compiles them for the tests), so they need no numba-cuda to import.

The grid: ``gf`` (6,) float64 holds its origin and cell sides, ``gi`` (4,) int64 its cells
along x, y, z and ``spread``; cell ``(cx, cy, cz)`` has key ``(cz * ny + cy) * nx + cx``, so the
boids of a row of cells along x are one contiguous run of the sorted order, and ``start[key]``
.. ``start[key + 1] - 1`` are the rows of the boids of a cell. Cells are at least the farthest
sight wide along y and z and at least 1 / spread of it along x: every boid a boid sees lies in
the 9 rows of cells around its own, within ``spread`` cells of its own along x. Thinner cells
along x cost no more runs (a row's cells are one run) and leave fewer candidates: 3 x 3 x
(2 spread + 1) / spread cells' volume, 3 x 3 x 3 at spread 1, 3 x 3 x 2.5 at 2.
"""

from __future__ import annotations

import numba

from flock3d.core.neighbors import cell_index

__all__ = ["cell_of", "cell_key", "candidate_run", "RUNS"]

#: Runs of candidates around a cell: 9 rows of cells along x (z, y each -1, 0, +1), each
#: up to 2 runs (a periodic row wraps around its end).
RUNS = 18

_device = numba.njit(inline="always")


@_device
def cell_of(px, py, pz, gf, gi):
    """The cell ``(cx, cy, cz)`` of a point, clamped into the grid (as the CPU's grid clamps)."""
    return (
        cell_index(px, gf[0], 1.0 / gf[3], gi[0]),
        cell_index(py, gf[1], 1.0 / gf[4], gi[1]),
        cell_index(pz, gf[2], 1.0 / gf[5], gi[2]),
    )


@_device
def cell_key(cx, cy, cz, gi):
    """The index of cell ``(cx, cy, cz)`` in the sorted order's cells."""
    return (cz * gi[1] + cy) * gi[0] + cx


@_device
def _step_along(c, d, n, periodic):
    """The cell ``d`` (-1, 0, 1) cells from cell ``c`` along an axis of ``n``, or -1 where there
    is none (off a closed grid) or it is one seen already (a periodic axis of 1 or 2 cells)."""
    if periodic:
        if n < 3:
            return (c + d + 1) % n if d + 1 < n else -1
        return (c + d + n) % n
    e = c + d
    return e if 0 <= e < n else -1


@_device
def candidate_run(r, cx, cy, cz, gi, start, periodic):
    """Run ``r`` (0 .. RUNS - 1) of the candidates of a boid in cell ``(cx, cy, cz)``: the rows
    ``lo .. hi - 1`` of the sorted order (empty: ``lo == hi``). Together the runs hold every boid
    of the 27 cells around it, each once, in the order of (cell, index)."""
    nx, ny = gi[0], gi[1]
    zz = _step_along(cz, r // 6 - 1, gi[2], periodic)
    yy = _step_along(cy, (r // 2) % 3 - 1, ny, periodic)
    if zz < 0 or yy < 0:
        return 0, 0
    first = r % 2 == 0
    if periodic and nx < 3:  # the whole row, once
        a, b = (0, nx - 1) if first else (1, 0)
    elif periodic and cx == 0:  # cells 0, 1 and, wrapped, nx - 1
        a, b = (0, 1) if first else (nx - 1, nx - 1)
    elif periodic and cx == nx - 1:  # cells nx - 2, nx - 1 and, wrapped, 0
        a, b = (cx - 1, cx) if first else (0, 0)
    else:  # cells 1 / spread of the reach wide along x (a periodic grid's spread is 1)
        spread = gi[3]
        a, b = (max(cx - spread, 0), min(cx + spread, nx - 1)) if first else (1, 0)
    if a > b:
        return 0, 0
    row = (zz * ny + yy) * nx
    return start[row + a], start[row + b + 1]
