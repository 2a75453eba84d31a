"""The grid of a step and the candidates of a cell: chunks of cells, the candidate buffers
(row by row, or cell by cell in a crowded flock), gathering the state in cell order."""

from __future__ import annotations

import math

import numba
import numpy as np

from flock3d.core.kernel.base import shared
from flock3d.core.kernel.motion import image
from flock3d.core.neighbors import cell_index
from flock3d.core.quaternion import (
    forward_of,
)

# -- the grid and the candidates of a cell --------------------------------------------------


@shared
def chunk_cells(start, n_boids, n_chunks):
    """Cell boundaries splitting the sorted boids into ``n_chunks`` runs of whole cells."""
    n_cells = start.shape[0] - 1
    bounds = np.empty(n_chunks + 1, dtype=np.int64)
    bounds[0] = 0
    c = 0
    for t in range(1, n_chunks):
        target = (n_boids * t) // n_chunks
        while start[c + 1] <= target:
            c += 1
        bounds[t] = c
    bounds[n_chunks] = n_cells
    return bounds


@shared
def _wrap_cell(index, n, periodic):
    """A neighbour cell's index along one axis and its image shift (-1, 0, +1 boxes), or -1."""
    if 0 <= index < n:
        return index, 0.0
    if not periodic:
        return -1, 0.0
    if index < 0:
        return index + n, -1.0
    return index - n, 1.0


@shared
def _cell_box(c, grid):
    """Cell c's coordinates along each axis, and its box's lower and upper corners."""
    nx, ny = grid.nx, grid.ny
    sx, sy, sz = grid.cell_size, grid.cell_size_y, grid.cell_size_z
    cx, cy, cz = c % nx, (c // nx) % ny, c // (nx * ny)
    lo_x, lo_y, lo_z = grid.origin_x + cx * sx, grid.origin_y + cy * sy, grid.origin_z + cz * sz
    return cx, cy, cz, lo_x, lo_y, lo_z, lo_x + sx, lo_y + sy, lo_z + sz


@shared
def count_candidates(c, grid, periodic):
    """How many boids (and images) the 27 cells around cell c hold: the buffer size c needs."""
    nx, ny = grid.nx, grid.ny
    cx, cy, cz = c % nx, (c // nx) % ny, c // (nx * ny)
    xa, xb = row_span(cx, cx, nx, periodic)
    return _row_capacity(cy, cz, xa, xb, grid, periodic)


#: Columns of a step's boids in cell order (``cols``, a row a boid): x, y, z, vx, vy, vz
#: (headings, in the Couzin model), the public index, and a spare one that makes a row 64
#: bytes, a cache line's size. The candidate fills read whole rows from 9 rows of cells at
#: once: 9 streams of reads, where seven (N,) columns would be 63, too many for the
#: prefetchers.
COLUMNS = 8


@shared
def _pad(buf, lo, hi):
    """Entries ``lo .. hi - 1`` of a candidate buffer (a tuple of columns, x, y, z first) as
    padding that every pair test rejects: NaN positions, zeros in the other columns."""
    for q in range(lo, hi):
        buf[0][q], buf[1][q], buf[2][q] = np.nan, np.nan, np.nan
        for col in range(3, len(buf)):
            buf[col][q] = 0.0


@shared
def fill_candidates(c, grid, cols, reach2, buf, periodic, sides):
    """Copy into ``buf`` the boids around cell ``c`` that may lie within reach of its boids.

    Candidates are the boids of the 27 surrounding cells whose distance to c's box is
    below sqrt(reach2). In a periodic arena (box sides ``sides`` (3,)) each is copied
    at its image nearest to c, so plain distances in ``buf`` are minimum-image ones.
    Entries m .. multiple of 8 above m are padding: NaN positions and zero velocities.
    ``grid`` is the step's :class:`~flock3d.core.neighbors.CellGrid`; ``cols`` is the
    step's (N, COLUMNS) array of boids in cell order (see :data:`COLUMNS`) and ``buf`` a
    6-tuple of 1-D arrays, x, y, z first (the other three are copied along), or a
    7-tuple whose last column (the boids' indices) is copied too. Returns the number
    copied.
    """
    nx, ny, nz = grid.nx, grid.ny, grid.nz
    start = grid.cell_start
    cx, cy, cz, lo_x, lo_y, lo_z, hi_x, hi_y, hi_z = _cell_box(c, grid)
    m = 0
    for dz in range(-1, 2):
        z, wz = _wrap_cell(cz + dz, nz, periodic and nz > 1)
        if z < 0:
            continue
        for dy in range(-1, 2):
            y, wy = _wrap_cell(cy + dy, ny, periodic)
            if y < 0:
                continue
            row = (z * ny + y) * nx
            # One run of cells along x, or three when wrap-around can split it.
            for dx in range(-1, 2) if periodic else range(1):
                if periodic:
                    x, wx = _wrap_cell(cx + dx, nx, True)
                    a, b = start[row + x], start[row + x + 1]
                else:
                    wx = 0.0
                    a, b = start[row + max(cx - 1, 0)], start[row + min(cx + 1, nx - 1) + 1]
                shift_x, shift_y, shift_z = wx * sides[0], wy * sides[1], wz * sides[2]
                for jj in range(a, b):
                    j = numba.uint64(jj)
                    x_, y_, z_ = cols[j, 0] + shift_x, cols[j, 1] + shift_y, cols[j, 2] + shift_z
                    gx = max(lo_x - x_, 0.0, x_ - hi_x)
                    gy = max(lo_y - y_, 0.0, y_ - hi_y)
                    gz = max(lo_z - z_, 0.0, z_ - hi_z)
                    # Always copy, advance only when kept: a branch-free compaction.
                    mm = numba.uint64(m)
                    buf[0][mm], buf[1][mm], buf[2][mm] = x_, y_, z_
                    buf[3][mm], buf[4][mm], buf[5][mm] = cols[j, 3], cols[j, 4], cols[j, 5]
                    for col in range(6, len(buf)):  # the boids' indices, where the layout carries them
                        buf[col][mm] = cols[j, col]
                    m += 1 if gx * gx + gy * gy + gz * gz < reach2 else 0
    # Pad to a multiple of 8 with NaN positions: every comparison with them is false, so the
    # pair loop can run whole SIMD vectors (``buf`` holds 8 spare entries, see candidate_buffer).
    _pad(buf, m, (m + 7) & -8)
    return m


#: Boids per occupied cell above which a step gathers candidates cell by cell
#: (:func:`fill_candidates`) rather than row by row (:func:`fill_row`). Row buffers copy
#: each boid 9 times a step instead of 27 but give the pair loop about 18% more candidates;
#: in a crowded flock (a clustered one, 20 boids a cell) copying is cheap per boid and the
#: pair loop is most of the step, so cell buffers win there.
CROWDED = 10.0


@shared
def crowded(start):
    """Whether the boids of the grid whose cells start at ``start`` are crowded (see CROWDED)."""
    occupied = 0
    for c in range(start.shape[0] - 1):
        occupied += 1 if start[c + 1] > start[c] else 0
    return start[start.shape[0] - 1] > CROWDED * occupied


@shared
def row_span(x0, x1, nx, periodic):
    """The x-cells whose boids a row segment of target cells x0..x1 needs: one more each side
    (ghost cells -1 and nx, images of the far ends, in a periodic arena)."""
    if periodic:
        return x0 - 1, x1 + 1
    return max(x0 - 1, 0), min(x1 + 1, nx - 1)


@shared
def _row_capacity(cy, cz, xa, xb, grid, periodic):
    """How many boids (and images) x-cells xa..xb of the 9 rows around row (cy, cz) hold."""
    nx, ny, nz = grid.nx, grid.ny, grid.nz
    start = grid.cell_start
    m = 0
    for dz in range(-1, 2):
        z, _ = _wrap_cell(cz + dz, nz, periodic and nz > 1)
        if z < 0:
            continue
        for dy in range(-1, 2):
            y, _ = _wrap_cell(cy + dy, ny, periodic)
            if y < 0:
                continue
            row = (z * ny + y) * nx
            if periodic:
                for x in range(xa, xb + 1):
                    xx, _ = _wrap_cell(x, nx, True)
                    m += start[row + xx + 1] - start[row + xx]
            else:
                m += start[row + xb + 1] - start[row + xa]
    return m


@shared
def candidate_buffer(c_lo, c_hi, grid, n_columns, periodic, by_cell):
    """A (n_columns, capacity) buffer for the candidates of cells c_lo .. c_hi - 1, and room
    for the x-cell offsets of a row segment, (nx + 3,) int64.

    The capacity is the most that :func:`fill_candidates` copies for one occupied cell
    (``by_cell``) or :func:`fill_row` for one row segment of the cells (otherwise), plus 8
    entries of room to pad to whole SIMD vectors.
    """
    nx, ny = grid.nx, grid.ny
    start = grid.cell_start
    cap = 0
    c = c_lo
    while c < c_hi:
        r = c // nx
        end = c + 1 if by_cell else min(c_hi, (r + 1) * nx)
        if not by_cell or start[c + 1] > start[c]:
            xa, xb = row_span(c - r * nx, end - 1 - r * nx, nx, periodic)
            cap = max(cap, _row_capacity(r % ny, r // ny, xa, xb, grid, periodic))
        c = end
    return np.empty((n_columns, cap + 8)), np.empty(nx + 3, dtype=np.int64)


@shared
def fill_row(cy, cz, xa, xb, grid, cols, reach2, buf, xoff, periodic, sides):
    """Copy into ``buf`` the candidates of a row segment of cells: the boids of x-cells
    xa..xb of the 9 rows around row (cy, cz) whose distance to the row's y-z square is below
    sqrt(reach2), x-cell by x-cell: those of x-cell x are entries ``xoff[x - xa]`` to
    ``xoff[x - xa + 1] - 1``.

    So the candidates of target cell x, x-cells x - 1 .. x + 1, are one contiguous run of
    ``buf``, and each boid is copied once per row it may matter to (9 times a step) rather
    than once per cell (27 times). Entries past a run are boids at least a cell width
    away, or the 8 entries of padding after the last (NaN positions, zero velocities):
    every pair test rejects them, so a pair loop may run on to a multiple of 8. In a
    periodic arena (box sides ``sides`` (3,)) boids are copied at their image nearest the
    row, ghost x-cells -1 and nx as images of the far ends. ``cols`` is the step's
    (N, COLUMNS) array of boids in cell order (see :data:`COLUMNS`); ``buf`` is a 6-tuple of
    1-D arrays (x, y, z, vx, vy, vz), or a 7-tuple whose last column (the boids' indices)
    is copied too. Returns the number copied.
    """
    nx, ny, nz = grid.nx, grid.ny, grid.nz
    start = grid.cell_start
    sy, sz = grid.cell_size_y, grid.cell_size_z
    lo_y, lo_z = grid.origin_y + cy * sy, grid.origin_z + cz * sz
    hi_y, hi_z = lo_y + sy, lo_z + sz
    m = 0
    for x in range(xa, xb + 1):
        xoff[x - xa] = m
        xx, wx = _wrap_cell(x, nx, periodic)
        shift_x = wx * sides[0]
        for dz in range(-1, 2):
            z, wz = _wrap_cell(cz + dz, nz, periodic and nz > 1)
            if z < 0:
                continue
            shift_z = wz * sides[2]
            for dy in range(-1, 2):
                y, wy = _wrap_cell(cy + dy, ny, periodic)
                if y < 0:
                    continue
                shift_y = wy * sides[1]
                c = (z * ny + y) * nx + xx
                for jj in range(start[c], start[c + 1]):
                    j = numba.uint64(jj)
                    y_, z_ = cols[j, 1] + shift_y, cols[j, 2] + shift_z
                    gy = max(lo_y - y_, 0.0, y_ - hi_y)
                    gz = max(lo_z - z_, 0.0, z_ - hi_z)
                    # Always copy, advance only when kept: a branch-free compaction.
                    mm = numba.uint64(m)
                    buf[0][mm], buf[1][mm], buf[2][mm] = cols[j, 0] + shift_x, y_, z_
                    buf[3][mm], buf[4][mm], buf[5][mm] = cols[j, 3], cols[j, 4], cols[j, 5]
                    for col in range(6, len(buf)):  # the boids' indices, where the layout carries them
                        buf[col][mm] = cols[j, col]
                    m += 1 if gy * gy + gz * gz < reach2 else 0
    xoff[xb - xa + 1] = m
    _pad(buf, m, m + 8)
    return m


@shared
def fill_around(px, py, pz, grid, pos, vel, reach2, buf, periodic, box):
    """Copy into ``buf`` the live positions and velocities of the boids within reach of a point.

    For the in-place updates (``sequential`` and ``per_rule``): candidates are read from
    the live arrays ``pos``/``vel`` (N, 3) through the grid built at the start of the
    step, whose cells must be at least the reach plus the farthest any boid may have
    moved since. ``buf`` is a 7-tuple of arrays of at least N + 8 entries (the last takes
    each boid's index); in a periodic arena positions are copied at their image nearest the
    point. Entries m .. the next multiple of 8 are padding that every pair test rejects
    (NaN positions), as in :func:`fill_row`. Returns the count m.
    """
    nx, ny, nz = grid.nx, grid.ny, grid.nz
    start, order = grid.cell_start, grid.order
    cx = cell_index(px, grid.origin_x, 1.0 / grid.cell_size, nx)
    cy = cell_index(py, grid.origin_y, 1.0 / grid.cell_size_y, ny)
    cz = cell_index(pz, grid.origin_z, 1.0 / grid.cell_size_z, nz)
    m = 0
    for dz in range(-1, 2):
        z, _ = _wrap_cell(cz + dz, nz, periodic and nz > 1)
        if z < 0 or (periodic and nz < 3 and dz != 0 and (nz == 1 or dz == 1)):
            continue
        for dy in range(-1, 2):
            y, _ = _wrap_cell(cy + dy, ny, periodic)
            if y < 0 or (periodic and ny < 3 and dy != 0 and (ny == 1 or dy == 1)):
                continue
            row = (z * ny + y) * nx
            # The x-cells cx - 1 .. cx + 1 of a row are one run of the sorted boids, or
            # three when wrap-around can split it.
            for dx in range(-1, 2) if periodic else range(1):
                if periodic:
                    x, _ = _wrap_cell(cx + dx, nx, True)
                    if nx < 3 and dx != 0 and (nx == 1 or dx == 1):
                        continue
                    a, b = start[row + x], start[row + x + 1]
                else:
                    a, b = start[row + max(cx - 1, 0)], start[row + min(cx + 1, nx - 1) + 1]
                for k in range(a, b):
                    j = numba.uint64(order[k])  # unsigned: no wrap-around code for negative indices
                    ox = pos[j, 0] - px
                    oy = pos[j, 1] - py
                    oz = pos[j, 2] - pz
                    if periodic:
                        ox = image(ox, 2.0 * box[3], True)
                        oy = image(oy, 2.0 * box[4], True)
                        oz = image(oz, 2.0 * box[5], nz > 1)
                    # First the indices of those within reach (always write, advance only
                    # when kept: a branch-free compaction); most are not, so their
                    # positions and velocities are copied after, in a second loop.
                    buf[6][numba.uint64(m)] = j
                    m += 1 if ox * ox + oy * oy + oz * oz < reach2 else 0
    for q in range(m):
        j = numba.uint64(buf[6][q])
        ox, oy, oz = pos[j, 0] - px, pos[j, 1] - py, pos[j, 2] - pz
        if periodic:
            ox = image(ox, 2.0 * box[3], True)
            oy = image(oy, 2.0 * box[4], True)
            oz = image(oz, 2.0 * box[5], nz > 1)
        buf[0][q], buf[1][q], buf[2][q] = px + ox, py + oy, pz + oz
        buf[3][q], buf[4][q], buf[5][q] = vel[j, 0], vel[j, 1], vel[j, 2]
    _pad(buf, m, (m + 7) & -8)
    return m


#: Ciura's gap sequence for Shell sort (cells hold at most a few thousand boids).
_SHELL_GAPS = (1750, 701, 301, 132, 57, 23, 10, 4, 1)


@shared
def sort_cells_by_id(c_lo, c_hi, start, order, ids):
    """Put the boids of each cell ``c_lo .. c_hi - 1`` in the order of their public ids.

    ``order`` (N,) lists storage rows by cell; ``ids`` (N,) is each row's public index.
    The order of a cell's boids fixes the order of every sum over them, so it must not
    depend on how the rows happen to be stored: by public id it is what a stable sort of
    the flock in its public order gives. Rows come stored in the last step's cell order,
    so a cell's list is a few runs already sorted: a Shell sort (insertion sorts of gaps
    shrinking to 1) is near linear on it, and compiles in a fraction of numba's argsort.
    """
    for c in range(c_lo, c_hi):
        a, b = start[c], start[c + 1]
        for gap in _SHELL_GAPS:
            if gap >= b - a:
                continue
            for k in range(a + gap, b):
                r = order[k]
                key = ids[r]
                m = k
                while m - gap >= a and ids[order[m - gap]] > key:
                    order[m] = order[m - gap]
                    m -= gap
                order[m] = r


@shared
def gather(t, bounds, start, order, ids, pos, vel, quat, wp, ids_to, pos_to, vel_to, quat_to, wp_to, cols,
           heads, heading_from_velocity, headings_in_cols):  # fmt: skip
    """Chunk ``t`` (cells ``bounds[t] .. bounds[t + 1] - 1``) of the start-of-step state, in
    cell order: the state rows (``ids``, ``pos``, ``vel``, ``quat``, ``wp``) copied to the
    same rows of the ``*_to`` arrays, positions and velocities into the rows of ``cols``
    (N, COLUMNS), then each boid's public index (as a float: topological neighbours break
    ties by it, species are ranges of it), each boid's unit heading into ``heads`` (3, N).

    The heading is the forward axis of its orientation, or with ``heading_from_velocity``
    (the ``mesh`` turn limit: boids see along their motion) its velocity's direction.
    With ``headings_in_cols`` (the Couzin model) ``cols`` carries headings, not velocities.
    """
    c_lo, c_hi = bounds[t], bounds[t + 1]
    sort_cells_by_id(c_lo, c_hi, start, order, ids)
    for k in range(start[c_lo], start[c_hi]):
        i = order[k]
        ids_to[k], wp_to[k] = ids[i], wp[i]
        px, py, pz = pos[i, 0], pos[i, 1], pos[i, 2]
        pos_to[k, 0], pos_to[k, 1], pos_to[k, 2] = px, py, pz
        cols[k, 0], cols[k, 1], cols[k, 2] = px, py, pz
        vx, vy, vz = vel[i, 0], vel[i, 1], vel[i, 2]
        vel_to[k, 0], vel_to[k, 1], vel_to[k, 2] = vx, vy, vz
        qw, qx, qy, qz = quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3]
        quat_to[k, 0], quat_to[k, 1], quat_to[k, 2], quat_to[k, 3] = qw, qx, qy, qz
        hx, hy, hz = heading(qw, qx, qy, qz, vx, vy, vz, heading_from_velocity)
        heads[0, k], heads[1, k], heads[2, k] = hx, hy, hz
        if headings_in_cols:
            vx, vy, vz = hx, hy, hz
        cols[k, 3], cols[k, 4], cols[k, 5] = vx, vy, vz
        cols[k, 6] = ids[i]


@shared
def heading(qw, qx, qy, qz, vx, vy, vz, from_velocity):
    """A boid's unit heading: its orientation's forward axis, or its velocity's direction."""
    if from_velocity:
        s = math.sqrt(vx * vx + vy * vy + vz * vz)
        if s > 0.0:
            return vx / s, vy / s, vz / s
    return forward_of(qw, qx, qy, qz)
