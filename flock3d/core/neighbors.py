"""Uniform-grid cell lists: the one neighbour search of flock3d.

Boids are counting-sorted into cubic cells covering their bounding box. Cells
are numbered x-fastest, so the cells of one (y, z) row that a search touches
are a single contiguous run of the sorted order. The step kernel uses the grid
directly; the queries at the end of this module (counts within a radius,
connected groups, the k nearest neighbours) serve metrics and analysis.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numba
import numpy as np

__all__ = [
    "CellGrid",
    "build_grid",
    "build_periodic_grid",
    "cell_index",
    "axis_span",
    "count_within",
    "nearest_k_search",
    "PARALLEL_NEAREST",
    "components",
    "nearest_k",
    "MAX_CELLS_PER_BOID",
    "grid_shape",
    "periodic_shape",
]

#: The grid never has more than this many cells per boid (plus a small floor): a flock
#: that spreads far gets larger cells instead of an unbounded cell array.
MAX_CELLS_PER_BOID = 8

CellGrid = namedtuple(
    "CellGrid",
    ["origin_x", "origin_y", "origin_z", "cell_size", "nx", "ny", "nz", "order", "cell_start",
     "cell_size_y", "cell_size_z"],
)  # fmt: skip
CellGrid.__doc__ = """A cell list: boids sorted by cell.

``order`` (N,) int64 lists boid indices sorted by cell; the boids of cell c are
``order[cell_start[c]:cell_start[c + 1]]``; ``cell_start`` has ``nx * ny * nz + 1``
entries; cell (cx, cy, cz) is number ``(cz * ny + cy) * nx + cx``. Cells are cubes of
side ``cell_size``, except in a periodic box that is not a cube, whose cells are
``cell_size`` x ``cell_size_y`` x ``cell_size_z``.
"""


@numba.njit(cache=True, inline="always")
def cell_index(coordinate, origin, inv_size, n):
    """Index along one axis of the cell holding ``coordinate``, clamped to [0, n - 1].

    Clamping happens in floating point so that infinite coordinates (an
    infinite search radius) map to the first or last cell, and a NaN maps to the
    first: whatever the input, the index is in range.
    """
    c = (coordinate - origin) * inv_size
    if not c > 0.0:  # also NaN
        return 0
    if c >= n - 1:
        return n - 1
    return int(c)


@numba.njit(cache=True, inline="always")
def axis_span(coordinate, radius, origin, inv_size, n):
    """First and last cell along one axis that [coordinate - radius, coordinate + radius] touches."""
    return (
        cell_index(coordinate - radius, origin, inv_size, n),
        cell_index(coordinate + radius, origin, inv_size, n),
    )


@numba.njit(cache=True, no_cpython_wrapper=True)  # called by build_grid only
def _counting_sort(positions, ox, oy, oz, size, nx, ny, nz, size_y, size_z):
    """Sort boids by cell (stable: boids of a cell keep their index order)."""
    n = positions.shape[0]
    cell = np.empty(n, dtype=np.int64)
    cell_start = np.zeros(nx * ny * nz + 1, dtype=np.int64)
    for i in range(n):
        cx = cell_index(positions[i, 0], ox, 1.0 / size, nx)
        cy = cell_index(positions[i, 1], oy, 1.0 / size_y, ny)
        cz = cell_index(positions[i, 2], oz, 1.0 / size_z, nz)
        c = (cz * ny + cy) * nx + cx
        cell[i] = c
        cell_start[c + 1] += 1
    for c in range(nx * ny * nz):
        cell_start[c + 1] += cell_start[c]
    fill = cell_start[:-1].copy()
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        c = cell[i]
        order[fill[c]] = i
        fill[c] += 1
    return CellGrid(ox, oy, oz, size, nx, ny, nz, order, cell_start, size_y, size_z)


@numba.njit(cache=True, no_cpython_wrapper=True)  # called by build_grid only
def _finite_bounds(positions):
    """Lower and upper corners (3,) of the bounding box of the finite coordinates.

    A NaN or infinite coordinate (a blown-up state, a damaged recording) must not
    size a grid; :func:`cell_index` clamps it into the grid instead. An axis with
    no finite coordinate spans [0, 0].
    """
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    for i in range(positions.shape[0]):
        for a in range(3):
            v = positions[i, a]
            if math.isfinite(v):
                lo[a] = min(lo[a], v)
                hi[a] = max(hi[a], v)
    for a in range(3):
        if lo[a] > hi[a]:
            lo[a] = hi[a] = 0.0
    return lo, hi


@numba.njit(cache=True)
def build_grid(positions, cell_size):
    """Counting-sort boids into cubic cells covering their bounding box.

    Args:
        positions: (N, 3) float64.
        cell_size: wanted side of a cell (> 0, may be inf: one cell holds everyone).
            It grows when the flock is spread so far that the grid would exceed
            ``MAX_CELLS_PER_BOID`` cells per boid.

    Returns:
        A :class:`CellGrid`.
    """
    n = positions.shape[0]
    lo, hi = _finite_bounds(positions)
    size, nx, ny, nz = grid_shape(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], cell_size,
                                  MAX_CELLS_PER_BOID * n + 64)  # fmt: skip
    return _counting_sort(positions, lo[0], lo[1], lo[2], size, nx, ny, nz, size, size)


@numba.njit(cache=True, inline="always")
def grid_shape(ex, ey, ez, cell_size, max_cells):
    """``(size, nx, ny, nz)``: cubic cells at least ``cell_size`` wide (may be inf: one cell holds
    everyone) covering a box of extents ``ex, ey, ez``, coarser when more than ``max_cells`` of
    them would cover it. (Also the GPU engine's, which sizes its grid on the device.)"""
    size = cell_size
    if not math.isfinite(size):
        size = max(ex, ey, ez, 1.0) * 2.0
    # Count cells in floating point: a tiny cell size would overflow integers.
    size = max(size, max(ex, ey, ez) / max_cells)
    while (math.floor(ex / size) + 1.0) * (math.floor(ey / size) + 1.0) * (
        math.floor(ez / size) + 1.0
    ) > max_cells:
        size *= 1.26  # about 2 ** (1/3): halves the cell count per try
    return size, int(ex / size) + 1, int(ey / size) + 1, int(ez / size) + 1


@numba.njit(cache=True)
def build_periodic_grid(positions, center, half, cell_size, planar):
    """Counting-sort boids into the cells that exactly tile a periodic box.

    The box spans ``center +- half`` (half side lengths (3,)) on each axis (x and y
    only when ``planar``: then there is a single layer of cells in z). Axis a holds
    ``max(1, floor(2 * half[a] / cell_size))`` cells (fewer if the grid would exceed
    ``MAX_CELLS_PER_BOID`` cells per boid), so cells are at least ``cell_size`` wide.
    Positions must already lie in the box.

    Returns:
        A :class:`CellGrid` whose origin is the box's lower corner.
    """
    # The same cap as build_grid: coarser cells rather than an unbounded cell array.
    ox, oy, oz, sx, sy, sz, kx, ky, kz = periodic_shape(
        center, half, cell_size, planar, MAX_CELLS_PER_BOID * positions.shape[0] + 64
    )
    return _counting_sort(positions, ox, oy, oz, sx, kx, ky, kz, sy, sz)


@numba.njit(cache=True)
def periodic_shape(center, half, cell_size, planar, max_cells):
    """``(ox, oy, oz, sx, sy, sz, kx, ky, kz)``: the origin, cell sides and cells along x, y, z of
    the grid of :func:`build_periodic_grid` (at most ``max_cells`` cells). (Also the GPU engine's.)"""
    kx = max(1, int(2.0 * half[0] / cell_size))
    ky = max(1, int(2.0 * half[1] / cell_size))
    kz = 1 if planar else max(1, int(2.0 * half[2] / cell_size))
    while kx * ky * kz > max_cells and max(kx, ky, kz) > 1:
        if kx >= ky and kx >= kz:
            kx -= 1
        elif ky >= kz:
            ky -= 1
        else:
            kz -= 1
    sx, sy = 2.0 * half[0] / kx, 2.0 * half[1] / ky
    sz = sx if planar else 2.0 * half[2] / kz
    ox, oy = center[0] - half[0], center[1] - half[1]
    oz = center[2] - half[2] if not planar else center[2] - 0.5 * sz
    return ox, oy, oz, sx, sy, sz, kx, ky, kz


# -- queries built on the grid (metrics and analysis; not on the step's hot path) ----------


@numba.njit(cache=True, parallel=True)
def count_within(positions, radius):
    """(N,) number of other boids closer than ``radius`` to each boid.

    Args:
        positions: (N, 3) float64.
        radius: > 0 and finite.
    """
    n = positions.shape[0]
    counts = np.zeros(n, dtype=np.int64)
    grid = build_grid(positions, radius)
    order, start, nx, ny, nz = grid.order, grid.cell_start, grid.nx, grid.ny, grid.nz
    ox, oy, oz, inv = grid.origin_x, grid.origin_y, grid.origin_z, 1.0 / grid.cell_size
    r2 = radius * radius
    for i in numba.prange(n):
        px, py, pz = positions[i, 0], positions[i, 1], positions[i, 2]
        x0, x1 = axis_span(px, radius, ox, inv, nx)
        y0, y1 = axis_span(py, radius, oy, inv, ny)
        z0, z1 = axis_span(pz, radius, oz, inv, nz)
        c = 0
        for z in range(z0, z1 + 1):
            for y in range(y0, y1 + 1):
                row = (z * ny + y) * nx
                for k in range(start[row + x0], start[row + x1 + 1]):
                    j = order[k]
                    dx, dy, dz = positions[j, 0] - px, positions[j, 1] - py, positions[j, 2] - pz
                    if j != i and dx * dx + dy * dy + dz * dz < r2:
                        c += 1
        counts[i] = c
    return counts


@numba.njit(cache=True)
def _find(parent, i):
    root = i
    while parent[root] != root:
        root = parent[root]
    while parent[i] != root:  # path compression
        parent[i], i = root, parent[i]
    return root


@numba.njit(cache=True)
def components(positions, radius):
    """Connected components of the graph linking boids within ``radius`` of each other.

    Returns:
        ``(count, labels)``: labels (N,) int64 in [0, count), numbered in order of
        each component's lowest boid index.
    """
    n = positions.shape[0]
    parent = np.arange(n)
    grid = build_grid(positions, radius)
    order, start, nx, ny, nz = grid.order, grid.cell_start, grid.nx, grid.ny, grid.nz
    ox, oy, oz, inv = grid.origin_x, grid.origin_y, grid.origin_z, 1.0 / grid.cell_size
    r2 = radius * radius
    for i in range(n):
        px, py, pz = positions[i, 0], positions[i, 1], positions[i, 2]
        x0, x1 = axis_span(px, radius, ox, inv, nx)
        y0, y1 = axis_span(py, radius, oy, inv, ny)
        z0, z1 = axis_span(pz, radius, oz, inv, nz)
        for z in range(z0, z1 + 1):
            for y in range(y0, y1 + 1):
                row = (z * ny + y) * nx
                for k in range(start[row + x0], start[row + x1 + 1]):
                    j = order[k]
                    if j <= i:
                        continue
                    dx, dy, dz = positions[j, 0] - px, positions[j, 1] - py, positions[j, 2] - pz
                    if dx * dx + dy * dy + dz * dz <= r2:
                        a, b = _find(parent, i), _find(parent, j)
                        if a != b:
                            parent[max(a, b)] = min(a, b)
    labels = np.empty(n, dtype=np.int64)
    count = 0
    for i in range(n):
        root = _find(parent, i)
        if root == i:
            labels[i] = count
            count += 1
        else:
            labels[i] = labels[root]
    return count, labels


#: From this many boids :func:`nearest_k` searches on every core; below it, on one: the parallel
#: loop's compile (1.5-3 s more on 2 cores, paid by a first run's closing summary) costs more
#: than it gains (100,000 boids: 0.29 s on one core, 0.15 s on two).
PARALLEL_NEAREST = 100_000


def nearest_k(positions, k):
    """The ``k`` nearest other boids of each boid, nearest first.

    Searches rings of cells of growing Chebyshev radius around each boid, keeping the
    ``k`` best; it stops once the next ring cannot hold anything closer than the
    ``k``-th best found. Equal distances are ordered by boid index, so the result does
    not depend on the grid.

    Args:
        positions: (N, 3) float64 (a boid with a NaN or infinite coordinate is nobody's
            neighbour, and has none itself).
        k: neighbours wanted per boid, >= 1.

    Returns:
        ``(indices, distances)``: (N, k) int64 and (N, k) float64; where a boid has
        fewer than ``k`` others, the missing entries are -1 and inf.
    """
    n = positions.shape[0]
    if n < 2:
        return np.full((n, k), -1, dtype=np.int64), np.full((n, k), np.inf)
    return nearest_k_search(n)(positions, k)


def nearest_k_search(n):
    """The compiled search :func:`nearest_k` runs for ``n`` boids (two or more): on one core, or
    on every core from :data:`PARALLEL_NEAREST` boids."""
    return _nearest_k_everywhere if n >= PARALLEL_NEAREST else _nearest_k_here


@numba.njit(cache=True)
def _nearest_k_here(positions, k):
    indices, distances, order, start, ox, oy, oz, size, nx, ny, nz = _nearest_k_grid(positions, k)
    for i in range(positions.shape[0]):
        _k_nearest_of(i, positions, k, order, start, ox, oy, oz, size, nx, ny, nz, indices, distances)
    return indices, distances


@numba.njit(cache=True, parallel=True)
def _nearest_k_everywhere(positions, k):
    indices, distances, order, start, ox, oy, oz, size, nx, ny, nz = _nearest_k_grid(positions, k)
    for i in numba.prange(positions.shape[0]):
        _k_nearest_of(i, positions, k, order, start, ox, oy, oz, size, nx, ny, nz, indices, distances)
    return indices, distances


@numba.njit(cache=True, inline="always")
def _nearest_k_grid(positions, k):
    """The result's arrays (-1 and inf) and the grid searched, about k boids a cell if they
    filled their bounding box (the :class:`CellGrid`'s fields one by one: a parallel loop's body
    takes no named tuple)."""
    n = positions.shape[0]
    indices = np.full((n, k), -1, dtype=np.int64)
    distances = np.full((n, k), np.inf)
    lo, hi = _finite_bounds(positions)
    extent = max(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2])
    g = build_grid(positions, max(extent / max((n / k) ** (1.0 / 3.0), 1.0), 1e-12))
    return (
        indices,
        distances,
        g.order,
        g.cell_start,
        g.origin_x,
        g.origin_y,
        g.origin_z,
        g.cell_size,
        g.nx,
        g.ny,
        g.nz,
    )


@numba.njit(cache=True, inline="always")
def _k_nearest_of(i, positions, k, order, start, ox, oy, oz, size, nx, ny, nz, indices, distances):
    """Row i of ``indices`` and ``distances``: boid i's k nearest others, searched ring by ring."""
    inv = 1.0 / size
    px, py, pz = positions[i, 0], positions[i, 1], positions[i, 2]
    cx, cy, cz = cell_index(px, ox, inv, nx), cell_index(py, oy, inv, ny), cell_index(pz, oz, inv, nz)
    best_d2 = np.full(k, np.inf)
    best_j = np.full(k, -1, dtype=np.int64)
    for ring in range(max(nx, ny, nz) + 1):
        for z in range(max(cz - ring, 0), min(cz + ring, nz - 1) + 1):
            for y in range(max(cy - ring, 0), min(cy + ring, ny - 1) + 1):
                on_shell_yz = abs(z - cz) == ring or abs(y - cy) == ring
                for x in range(max(cx - ring, 0), min(cx + ring, nx - 1) + 1):
                    if not on_shell_yz and abs(x - cx) != ring:
                        continue  # inside the shell: already searched
                    c = (z * ny + y) * nx + x
                    for s in range(start[c], start[c + 1]):
                        j = order[s]
                        if j == i:
                            continue
                        dx, dy, dz = positions[j, 0] - px, positions[j, 1] - py, positions[j, 2] - pz
                        d2 = dx * dx + dy * dy + dz * dz
                        last = k - 1
                        if not (d2 < best_d2[last] or (d2 == best_d2[last] and j < best_j[last])):
                            continue  # not among the k best (nor a NaN)
                        # Insert (d2, j) into the sorted list, dropping the k-th.
                        m = last
                        while m > 0 and (best_d2[m - 1] > d2 or (best_d2[m - 1] == d2 and best_j[m - 1] > j)):
                            best_d2[m] = best_d2[m - 1]
                            best_j[m] = best_j[m - 1]
                            m -= 1
                        best_d2[m] = d2
                        best_j[m] = j
        # Anything in ring + 1 or beyond is at least ring * size away.
        reach = ring * size
        if best_d2[k - 1] <= reach * reach:
            break
    for m in range(k):
        indices[i, m] = best_j[m]
        distances[i, m] = math.sqrt(best_d2[m])
