"""The fast engine's runtime: the pieces every assembled stepper shares.

A flock's fast step is assembled from its parameters by :mod:`flock3d.core.assemble`
(which rules and forces it uses, how it combines and updates them) and compiled with
numba. What does not depend on that choice lives here, compiled once and cached for
every stepper: the cell grid of a step, the candidate buffers, gathering the state in
cell order, the turn limit and the move, the predators' hunt.

How a synchronous step is organised, and why (the measurements behind each choice are in
``benchmarks/NOTES.md``; ``flock3d bench --profile`` splits a step into its phases):

- Boids are counting-sorted into cells at least as wide as the longest sight, and
  the start-of-step state is gathered in cell order, a 64-byte row a boid (see
  :data:`COLUMNS`: the candidate copies read 9 rows of cells at once). Within
  one call of ``step(n)`` the state itself stays stored in the last step's cell order
  (two sets of arrays used in turn; the public order is restored at the end), so each
  step reads and writes its rows nearly in sequence; the boids of a cell are kept in
  the order of their public index, so no sum depends on how rows are stored. The
  gathered state and the second set are a :class:`Workspace` that the flock keeps
  between calls, so a call does not allocate (and fault in) them again.
- Work is split into chunks of whole cells (about 256 boids each) run in parallel.
  Candidates are copied into contiguous buffers, one per segment of a row of cells:
  the boids of the 9 rows around it that lie within reach of the row, x-cell by x-cell,
  so the candidates of one cell (x-cells x - 1 .. x + 1) are one contiguous run and
  each boid is copied 9 times a step rather than 27 (in a periodic arena each at its
  image nearest the row). In a crowded flock (over 10 boids per occupied cell) each
  cell gets its own buffer of the 27 cells around instead: fewer candidates per boid.
  Buffers are padded to a multiple of 8 with entries that every test rejects, so the
  pair loop runs whole SIMD vectors with no scalar remainder.
- The pair loop is branch-free and indexes with unsigned integers (which LLVM loads as
  contiguous vectors; signed ones become gathers); the cone test compares ``(f.d)|f.d|`` with
  ``cos|cos| |d|^2``: no square root or arccos per pair; the quaternion turn uses
  precomputed cosines and sines of the limit: no trigonometry per boid.
- A chunk's boids turn together (:func:`turn_rows`): each stages its desired velocity in a
  batch, column by column, and the batch turns as SIMD vectors, rather than each boid
  waiting on its own chain of square roots and divisions.
- Each boid writes only its own rows and sums its neighbours in an order fixed by the
  current positions, so a step is a pure function of the state: the same bit for bit
  whatever the thread count, and ``step(n)`` equals n single steps.
- The functions here are called from the assembled code, not inlined into it, so a new
  combination of rules compiles only its own code (and the cache serves the rest); the
  hot pair loop is generated whole, so nothing is called per pair. The batch turn is the
  exception (see :data:`inlined`): a new scene's first compile compiles it too.
- What a first run compiles is kept small (numba's typing and LLVM dominate it): the
  driver of a step comes in four kinds (periodic arena or not, predators or not) so
  no scene compiles code it cannot reach; the parallel loop over chunks is one loop
  compiled once and called through a pointer, as the chunk is; and the shared functions
  have no entry point from Python (:func:`from_python` makes one for tests and tools).
  While one core compiles the driver, the other compiles the scene's own chunk.
- The driver gets the chunk and the parallel loop as addresses (:class:`Pointer`), so a call
  from Python does not type them again; a flock of one chunk runs it on the calling thread
  (waking the sleeping threads costs more than its whole step).
- Every boid's new state is checked (finite, and within :data:`MAX_COORDINATE`); a boid
  that fails keeps its old state and the step reports it (see :class:`StepStatus`).
"""

from __future__ import annotations

import functools
import math
import os

# Idle OpenMP threads sleep rather than spin, so that a step stays fast when another busy
# process (a renderer, a second simulation) shares the cores; it must be set before the
# OpenMP runtime starts. GOMP_SPINCOUNT lets a user trade that for speed on an idle machine
# (the README's Speed section; benchmarks/NOTES.md).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba import prange, types  # noqa: E402
from numba.core.types import WrapperAddressProtocol  # noqa: E402
from numba.experimental.function_type import _get_wrapper_address  # noqa: E402
from numba.extending import typeof_impl  # noqa: E402

from flock3d.core.neighbors import build_grid, build_periodic_grid, cell_index  # noqa: E402
from flock3d.core.packed import slots  # noqa: E402
from flock3d.core.quaternion import (  # noqa: E402
    forward_of,
    look_rotation_of,
    normalized_of,
    rotate_towards_of,
)
from flock3d.core.status import NOT_FINITE, OK, RULE_NOT_FINITE, RULE_RAISED, RULE_SHAPE  # noqa: E402

__all__ = [
    "FAST",
    "from_python",
    "shared",
    "BOIDS_PER_CHUNK",
    "MAX_COORDINATE",
    "cone_threshold",
    "threads",
    "chunk_cells",
    "candidate_buffer",
    "count_candidates",
    "fill_candidates",
    "fill_row",
    "crowded",
    "CROWDED",
    "row_span",
    "fill_around",
    "gather",
    "sort_cells_by_id",
    "image",
    "settle",
    "clamp_speed",
    "turn_heading",
    "turn_mesh",
    "turn_rows",
    "move_rows",
    "STAGED",
    "slerp_towards",
    "hunt",
    "record",
    "OK",
    "NOT_FINITE",
    "RULE_RAISED",
    "RULE_NOT_FINITE",
    "RULE_SHAPE",
    "heading",
    "is_sound",
    "wrap_into_box",
    "Workspace",
]

# No 'nnan'/'ninf': view distances and turn rates may legitimately be inf, and a blown-up
# state must be seen as NaN to be reported. 'reassoc' lets LLVM vectorise the per-boid
# sums; each boid's summation order is still fixed, so results do not depend on threads.
FAST = {"nsz", "arcp", "contract", "afn", "reassoc"}

#: Compiled once, cached, and called (not inlined) by every assembled stepper. Compiled code
#: calls them; Python calls them through :func:`from_python`. They have no CPython entry
#: point: building one costs about as much as compiling a small function, and a first run
#: compiles dozens of them.
shared = numba.njit(fastmath=FAST, error_model="numpy", cache=True, nogil=True, no_cpython_wrapper=True)

#: Inlined where it is called (at numba's level), so compiled as part of the caller: for the
#: small functions a SIMD loop calls, and for code that must round as its caller's own code.
#: A compiled function calls a :data:`shared` one by its symbol: the process that compiled
#: the caller runs the shared function's own code, and one that loaded the caller from
#: numba's cache runs the copy linked into it, which LLVM optimised again with the caller.
#: With fast-math the two may round differently (the batch turn's did, an ulp a step), and
#: a run that compiled its step drifted apart from one that loaded it.
inlined = numba.njit(fastmath=FAST, error_model="numpy", cache=True, nogil=True, inline="always")


_twins: dict = {}


def from_python(fn):
    """The :data:`shared` function ``fn`` as Python can call it (for tests and tools): the
    same source compiled a second time, with an entry point and its own cache entry."""
    twin = _twins.get(fn)
    if twin is None:
        py = fn.py_func
        copy = type(py)(py.__code__, py.__globals__, py.__name__, py.__defaults__, py.__closure__)
        copy.__qualname__ = f"{py.__qualname__}.from_python"
        twin = _twins[fn] = numba.njit(fastmath=FAST, error_model="numpy", cache=True, nogil=True)(copy)
    return twin


#: Boids per unit of parallel work: large enough to amortise a candidate buffer,
#: small enough to balance two to a few dozen threads.
BOIDS_PER_CHUNK = 256

#: A coordinate or velocity component beyond this is a blown-up state, not a flock: the
#: step that produces it stops with an error (float64 keeps ~1e-4 resolution here).
MAX_COORDINATE = 1e12

# What a step reports (the first field of a status row): flock3d.core.status, re-exported for the
# generated step's template.


def cone_threshold(fov_degrees: float) -> float:
    """The cone test's threshold: cos(fov/2) |cos(fov/2)|, or -inf when nothing is hidden.

    cos(fov/2) is computed as sin((180 - fov)/2), which is exactly 0 at fov = 180, so a
    boid exactly abreast (angle 90) is seen, as ``angle <= fov/2`` says; cos(pi/2)
    would give 6e-17 and hide it.
    """
    if fov_degrees >= 360.0:
        return -math.inf
    c = math.sin(math.radians(180.0 - fov_degrees) / 2.0)
    return c * abs(c)


def threads() -> int:
    """Number of threads the kernel runs on (set with ``numba.set_num_threads``)."""
    return numba.get_num_threads()


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


# -- geometry ----------------------------------------------------------------------------


@shared
def image(d, side, periodic):
    """A coordinate difference reduced to the nearest image in a periodic box of that side."""
    if periodic:
        return d - side * np.rint(d / side)
    return d


@shared
def settle(px, py, pz, vz, box, wrap, planar):
    """Where a boid may be after a move: in its plane (z = c_z, v_z = 0) when ``planar``,
    and inside the box (6,: centre, half sides) when positions ``wrap``."""
    if planar:
        pz, vz = box[2], 0.0
    if wrap:
        lo_x, lo_y = box[0] - box[3], box[1] - box[4]
        px = lo_x + (px - lo_x) % (2.0 * box[3])
        py = lo_y + (py - lo_y) % (2.0 * box[4])
        if not planar:
            lo_z = box[2] - box[5]
            pz = lo_z + (pz - lo_z) % (2.0 * box[5])
    return px, py, pz, vz


@shared
def wrap_into_box(pos, vel, box, planar):
    """Bring every position into the box (given or edited positions may lie outside)."""
    for i in range(pos.shape[0]):
        pos[i, 0], pos[i, 1], pos[i, 2], _ = settle(
            pos[i, 0], pos[i, 1], pos[i, 2], vel[i, 2], box, True, planar
        )


# -- speed, turn, move ---------------------------------------------------------------------


@shared
def clamp_speed(ux, uy, uz, s_min, s_max):
    """The velocity with its speed clamped to [s_min, s_max] (a zero velocity stays zero)."""
    u = math.sqrt(ux * ux + uy * uy + uz * uz)
    s = min(max(u, s_min), s_max)
    if u == 0.0 or s == u:
        return ux, uy, uz
    return ux * (s / u), uy * (s / u), uz * (s / u)


@inlined
def turn_heading(qw, qx, qy, qz, ux, uy, uz, fx, fy, fz, s_min, s_max, cos_max, cos_half, sin_half):
    """The model's steps 8 and 9: the new orientation and velocity from the desired velocity u.

    The speed is |u| clamped to [s_min, s_max]; the orientation turns towards u's direction
    (the current forward f when u = 0) by at most the limit; the velocity is the speed
    along the new forward. Returns ``(qw, qx, qy, qz, vx, vy, vz)``.
    """
    u = math.sqrt(ux * ux + uy * uy + uz * uz)
    speed = min(max(u, s_min), s_max)
    if u > 0.0:
        ex, ey, ez = ux / u, uy / u, uz / u
    else:
        ex, ey, ez = fx, fy, fz
    qw, qx, qy, qz = rotate_towards_of(qw, qx, qy, qz, ex, ey, ez, cos_max, cos_half, sin_half)
    hx, hy, hz = forward_of(qw, qx, qy, qz)
    return qw, qx, qy, qz, speed * hx, speed * hy, speed * hz


#: The rows of a :func:`turn_rows` batch (a (STAGED, n) array, one column a boid): its
#: orientation, desired velocity, heading and position, its speed limits and turn limit
#: (``cos_max, cos_half, sin_half``; for the mesh limit the angle in the first).
Q_W, U_X, F_X, S_MIN, S_MAX, LIMIT, P_X, STAGED = slots(
    ("orientation", 4),
    ("desired velocity", 3),
    ("heading", 3),
    ("min speed", 1),
    ("max speed", 1),
    ("turn limit", 3),
    ("position", 3),
)


@inlined
def turn_rows(n, staged, turned, mesh, upx, upy, upz):
    """Steps 8 and 9 of the model for a batch of boids: the new orientation and velocity of
    columns ``0 .. n - 1`` of ``staged`` (rows as :data:`STAGED` says) into ``turned`` (7, n):
    qw, qx, qy, qz, vx, vy, vz (see :func:`turn_heading` and :func:`turn_mesh`).

    A batch rather than boid by boid: the heading turn is a chain of square roots and
    divisions, each waiting for the last (about 160 cycles a boid), and over a batch whose
    columns are contiguous the loop runs as SIMD vectors, 8 boids at a time.
    """
    if mesh:  # arc cosines and sines: no SIMD form
        for r in range(n):
            nw, nx, ny, nz, nvx, nvy, nvz = turn_mesh(
                staged[Q_W, r], staged[Q_W + 1, r], staged[Q_W + 2, r], staged[Q_W + 3, r], staged[U_X, r],
                staged[U_X + 1, r], staged[U_X + 2, r], staged[S_MIN, r], staged[S_MAX, r], upx, upy, upz,
                staged[LIMIT, r],
            )  # fmt: skip
            turned[0, r], turned[1, r], turned[2, r], turned[3, r] = nw, nx, ny, nz
            turned[4, r], turned[5, r], turned[6, r] = nvx, nvy, nvz
        return
    for r in range(n):
        nw, nx, ny, nz, nvx, nvy, nvz = turn_heading(
            staged[Q_W, r], staged[Q_W + 1, r], staged[Q_W + 2, r], staged[Q_W + 3, r], staged[U_X, r],
            staged[U_X + 1, r], staged[U_X + 2, r], staged[F_X, r], staged[F_X + 1, r], staged[F_X + 2, r],
            staged[S_MIN, r], staged[S_MAX, r], staged[LIMIT, r], staged[LIMIT + 1, r], staged[LIMIT + 2, r],
        )  # fmt: skip
        turned[0, r], turned[1, r], turned[2, r], turned[3, r] = nw, nx, ny, nz
        turned[4, r], turned[5, r], turned[6, r] = nvx, nvy, nvz


@inlined
def move_rows(k0, n, staged, turned, failed, dt, box, wraps, planar, quat, vel, pos, ids, status, t):
    """Move the boids of a :func:`turn_rows` batch and write them: column r to row k0 + r of
    ``quat``, ``vel`` and ``pos``, the boid of public index ``ids[k0 + r]``.

    A boid whose rule failed (``failed[r]``) keeps its state; so does one whose new state is
    not sound (:func:`is_sound`), which is recorded in ``status`` row ``t`` and marked failed.
    """
    for r in range(n):
        if failed[r]:
            continue
        k = k0 + r
        nw, nvx, nvy, nvz = turned[0, r], turned[4, r], turned[5, r], turned[6, r]
        px, py, pz, nvz = settle(staged[P_X, r] + dt * nvx, staged[P_X + 1, r] + dt * nvy,
                                 staged[P_X + 2, r] + dt * nvz, nvz, box, wraps, planar)  # fmt: skip
        if is_sound(px, py, pz, nvx, nvy, nvz) and nw == nw:
            quat[k, 0], quat[k, 1], quat[k, 2], quat[k, 3] = nw, turned[1, r], turned[2, r], turned[3, r]
            vel[k, 0], vel[k, 1], vel[k, 2] = nvx, nvy, nvz
            pos[k, 0], pos[k, 1], pos[k, 2] = px, py, pz
        else:
            record(status, t, NOT_FINITE, ids[k], -1)
            failed[r] = True


@shared
def slerp_towards(aw, ax, ay, az, bw, bx, by, bz, max_angle):
    """Unity's ``Quaternion.RotateTowards(a, b, max_angle)``: b if within max_angle (radians)
    of a, else the spherical interpolation from a towards b by max_angle, the short way."""
    dot = aw * bw + ax * bx + ay * by + az * bz
    if dot < 0.0:  # q and -q are one rotation: go the short way
        bw, bx, by, bz, dot = -bw, -bx, -by, -bz, -dot
    half = math.acos(min(dot, 1.0))  # half the rotation angle between them
    if 2.0 * half <= max_angle or half == 0.0:
        return bw, bx, by, bz
    t = max_angle / (2.0 * half)
    s = math.sin(half)
    wa, wb = math.sin((1.0 - t) * half) / s, math.sin(t * half) / s
    return normalized_of(wa * aw + wb * bw, wa * ax + wb * bx, wa * ay + wb * by, wa * az + wb * bz)


@shared
def turn_mesh(qw, qx, qy, qz, ux, uy, uz, s_min, s_max, upx, upy, upz, max_angle):
    """The ``mesh`` turn limit: the velocity is u with its speed clamped, turning freely; the
    orientation turns towards the look rotation of that velocity (up towards ``up``) by at
    most ``max_angle`` radians. Returns ``(qw, qx, qy, qz, vx, vy, vz)``."""
    vx, vy, vz = clamp_speed(ux, uy, uz, s_min, s_max)
    if vx == 0.0 and vy == 0.0 and vz == 0.0:
        return qw, qx, qy, qz, vx, vy, vz
    tw, tx, ty, tz = look_rotation_of(vx, vy, vz, upx, upy, upz)
    qw, qx, qy, qz = slerp_towards(qw, qx, qy, qz, tw, tx, ty, tz, max_angle)
    return qw, qx, qy, qz, vx, vy, vz


@shared
def record(status, t, code, boid, term):
    """Report a failure of ``boid`` in chunk row ``t`` of ``status`` (lowest index wins)."""
    if status[t, 0] == OK or boid < status[t, 1]:
        status[t, 0], status[t, 1], status[t, 2] = code, boid, term


@shared
def is_sound(px, py, pz, vx, vy, vz):
    """A state that is finite and within :data:`MAX_COORDINATE` on every axis."""
    return (
        abs(px) < MAX_COORDINATE
        and abs(py) < MAX_COORDINATE
        and abs(pz) < MAX_COORDINATE
        and abs(vx) < MAX_COORDINATE
        and abs(vy) < MAX_COORDINATE
        and abs(vz) < MAX_COORDINATE
    )


# -- predators -------------------------------------------------------------------------------


@shared
def hunt(pred_pos, pred_vel, pred_quat, pos, ids, box, periodic, wrap, planar, speed, dt, cos_max, cos_half,
         sin_half):  # fmt: skip
    """Predators: turn (at their own rate) towards their nearest boid and fly on at their speed.

    Reads only the boids' start-of-step positions ``pos`` (N, 3), whose rows hold the boids of
    public index ``ids`` (N,); the lowest public index wins a tie.
    """
    n = pos.shape[0]
    for k in range(pred_pos.shape[0]):
        qx, qy, qz = pred_pos[k, 0], pred_pos[k, 1], pred_pos[k, 2]
        ex, ey, ez = forward_of(pred_quat[k, 0], pred_quat[k, 1], pred_quat[k, 2], pred_quat[k, 3])
        best = np.inf
        best_id = n
        bx = by = bz = 0.0
        for j in range(n):
            dx = image(pos[j, 0] - qx, 2.0 * box[3], periodic)
            dy = image(pos[j, 1] - qy, 2.0 * box[4], periodic)
            dz = image(pos[j, 2] - qz, 2.0 * box[5], periodic and not planar)
            d2 = dx * dx + dy * dy + dz * dz
            if d2 < best or (d2 == best and ids[j] < best_id and best < np.inf):
                best, best_id, bx, by, bz = d2, ids[j], dx, dy, dz
        if planar:
            bz = 0.0
        d = math.sqrt(bx * bx + by * by + bz * bz)
        if n and d > 0.0:
            ex, ey, ez = bx / d, by / d, bz / d
        w, x, y, z = rotate_towards_of(
            pred_quat[k, 0],
            pred_quat[k, 1],
            pred_quat[k, 2],
            pred_quat[k, 3],
            ex,
            ey,
            ez,
            cos_max,
            cos_half,
            sin_half,
        )
        pred_quat[k, 0], pred_quat[k, 1], pred_quat[k, 2], pred_quat[k, 3] = w, x, y, z
        hx, hy, hz = forward_of(w, x, y, z)
        vx, vy, vz = speed * hx, speed * hy, speed * hz
        px, py, pz, vz = settle(qx + dt * vx, qy + dt * vy, qz + dt * vz, vz, box, wrap, planar)
        pred_pos[k, 0], pred_pos[k, 1], pred_pos[k, 2] = px, py, pz
        pred_vel[k, 0], pred_vel[k, 1], pred_vel[k, 2] = vx, vy, vz


# -- the synchronous driver, shared by every assembled step ----------------------------------

_F1, _F2 = types.float64[::1], types.float64[:, ::1]
_I1, _I2 = types.int64[::1], types.int64[:, ::1]

CHUNK_SIGNATURE = types.void(
    types.int64,  # t: the chunk
    _I1,
    _F1,
    _I1,
    _I1,
    _I1,  # bounds; grid floats (origin, cell sizes), ints (nx, ny, nz, crowded); ids; cell_start
    _F2,
    _F2,  # cols (N, COLUMNS): start-of-step positions, velocities and indices in cell order; heads (3, N)
    _F2,
    _F2,
    _F2,
    _I1,  # pos, vel, quat, waypoints: the state in cell order (row k: boid ids[k]), written row by row
    _F1,
    types.boolean[::1],
    _F1,
    _F1,  # pv (values), flags, box (centre, half sides), sides
    _F1,
    _I1,  # world: the world features' rows, packed; world_at: where each feature's start
    _F2,
    _I2,  # predators' start-of-step positions; status (chunks, 3)
    types.float64,
    types.int64,
    types.int64,  # time, noise seed, step number
)
"""The signature of an assembled step's ``chunk`` function (one for every layout, so that
one compiled parallel driver calls any of them through a function pointer)."""

#: Flags (a bool array): positions wrap in a periodic box and distances take the minimum
#: image; positions wrap; the flock is planar; boids see along their velocity (mesh turn
#: limit); the buffer carries headings, not velocities (the Couzin and Vicsek models).
PERIODIC, WRAPS, PLANAR, MESH, COUZIN = range(5)


#: What runs chunk by chunk in parallel (see :func:`_run_chunks`): a step's two phases, and
#: at the end of a call the rows' way back to the public order (copied first when the last
#: step wrote the caller's arrays).
GATHER, ADVANCE, COPY, UNPERMUTE = 0, 1, 2, 3

#: Up to this many chunks (2,048 boids) a step gathers its state on one thread: waking the
#: others (OpenMP threads sleep between parallel loops, see OMP_WAIT_POLICY above) costs more
#: than the copy.
SERIAL_GATHER_CHUNKS = 8

#: A flock of one chunk (256 boids or fewer) is advanced on the calling thread: a parallel
#: loop of one iteration has nothing to share and only wakes the sleeping threads.
SERIAL_ADVANCE_CHUNKS = 1


def _run_chunks(phase, n_chunks, chunk, grid, gathered, rows, rows_to, inputs, now, seed, step):
    """Run ``phase`` over ``n_chunks`` chunks (see :func:`_run_chunk` for the arguments).

    One parallel loop for every phase, called once for each: a second loop would compile a
    second parallel region, a second of the first run's compile. Small flocks run a phase on
    this thread (SERIAL_GATHER_CHUNKS, SERIAL_ADVANCE_CHUNKS).
    """
    if n_chunks <= (SERIAL_ADVANCE_CHUNKS if phase == ADVANCE else SERIAL_GATHER_CHUNKS):
        for t in range(n_chunks):
            _run_chunk(
                phase, np.int64(t), n_chunks, chunk, grid, gathered, rows, rows_to, inputs, now, seed, step
            )
        return
    for t in prange(n_chunks):
        _run_chunk(
            phase, np.int64(t), n_chunks, chunk, grid, gathered, rows, rows_to, inputs, now, seed, step
        )


@shared
def _run_chunk(phase, t, n_chunks, chunk, grid, gathered, rows, rows_to, inputs, now, seed, step):
    """Chunk ``t`` of ``phase``: cells ``bounds[t] .. bounds[t + 1] - 1`` for a step's phases, the
    t-th of ``n_chunks`` equal runs of rows for COPY and UNPERMUTE.

    ``grid``: the step's (bounds, grid floats, grid ints, order, cell_start); ``gathered``: its
    (cols, heads); ``rows`` and ``rows_to``: the state arrays read and written, each (ids, pos,
    vel, quat, waypoints); ``inputs``: (pv, flags, box, sides, world, world_at, hunters, status).
    COPY and UNPERMUTE read ``rows`` and write ``rows_to`` alone (the grid and inputs are the
    last step's, unused).
    """
    bounds, gf, gi, order, start = grid
    cols, heads = gathered
    ids, pos, vel, quat, waypoints = rows
    ids_to, pos_to, vel_to, quat_to, wp_to = rows_to
    pv, flags, box, sides, world, world_at, hunters, status = inputs
    if phase == GATHER:
        gather(t, bounds, start, order, ids, pos, vel, quat, waypoints, ids_to, pos_to, vel_to, quat_to,
               wp_to, cols, heads, flags[MESH], flags[COUZIN])  # fmt: skip
    elif phase == ADVANCE:
        chunk(t, bounds, gf, gi, ids_to, start, cols, heads, pos_to, vel_to, quat_to, wp_to, pv, flags,
              box, sides, world, world_at, hunters, status, now, seed, step)  # fmt: skip
    else:
        n = ids.shape[0]
        lo, hi = n * t // n_chunks, n * (t + 1) // n_chunks
        _move_rows(lo, hi, ids, phase == UNPERMUTE, pos, vel, quat, waypoints, pos_to, vel_to, quat_to, wp_to)


@shared
def _move_rows(lo, hi, ids, unpermute, pos, vel, quat, waypoints, pos_to, vel_to, quat_to, wp_to):
    """Rows ``lo .. hi - 1`` of ``pos``.. into ``pos_to``..: to the same rows, or with ``unpermute``
    row k (the boid of public index ``ids[k]``) to row ``ids[k]``. (A loop: an array assignment
    compiles its shape checks slowly.)"""
    for k in range(lo, hi):
        i = ids[k] if unpermute else k
        pos_to[i, 0], pos_to[i, 1], pos_to[i, 2] = pos[k, 0], pos[k, 1], pos[k, 2]
        vel_to[i, 0], vel_to[i, 1], vel_to[i, 2] = vel[k, 0], vel[k, 1], vel[k, 2]
        for a in range(4):
            quat_to[i, a] = quat[k, a]
        wp_to[i] = waypoints[k]


def _make_advance(periodic, predators):
    """The driver's step loop for a periodic arena or not, with predators or not.

    Both are constants of the closure, so numba drops the branches a flock does not use
    before typing them: a first run compiles neither the periodic grid nor the hunt
    unless its scene has them.
    """

    def _advance(run, chunk, state, predators, n_steps, time0, clock0, step0, seed, pv, flags, box, world,
                 world_at, status, fixed, stop, work):  # fmt: skip
        pos, vel, quat, waypoints = state
        pred_pos, pred_vel, pred_quat = predators
        cols, heads, ids, ids_b, pos_b, vel_b, quat_b, wp_b = work
        n = pos.shape[0]
        n_chunks = status.shape[0]
        sides = 2.0 * box[3:]
        gf = np.empty(6)
        gi = np.empty(4, dtype=np.int64)
        reach, dt = fixed[0], fixed[1]
        gathered = (cols, heads)
        public, second = (ids, pos, vel, quat, waypoints), (ids_b, pos_b, vel_b, quat_b, wp_b)
        # Between steps the boids are stored in the last step's cell order (ids: the public
        # index of each row), in two sets of arrays used in turn: the caller's and a second
        # one (the *_b arrays of the Workspace). A step then reads and writes its rows nearly
        # in sequence instead of at random; the public order is restored at the end. Each
        # boid's sums run in the order of (cell, public index), so the result does not depend
        # on how rows are stored.
        for i in range(n):
            ids[i] = i
        done = n_steps
        grid = (ids, gf, gi, ids, ids)  # the last step's, once there is one
        inputs = (pv, flags, box, sides, world, world_at, pred_pos, status)
        for s in range(n_steps):
            if stop[0]:  # set by another thread: end the call between steps
                done = s
                break
            rows, rows_to = (second, public) if s % 2 else (public, second)
            pos_c, vel_c = rows[1], rows[2]
            if periodic:  # given or edited positions may lie outside the box
                wrap_into_box(pos_c, vel_c, box, flags[PLANAR])
                wrap_into_box(pred_pos, pred_vel, box, flags[PLANAR])
                cells = build_periodic_grid(pos_c, box[:3], box[3:], reach, flags[PLANAR])
            else:
                cells = build_grid(pos_c, reach)
            gf[0], gf[1], gf[2] = cells.origin_x, cells.origin_y, cells.origin_z
            gf[3], gf[4], gf[5] = cells.cell_size, cells.cell_size_y, cells.cell_size_z
            gi[0], gi[1], gi[2] = cells.nx, cells.ny, cells.nz
            gi[3] = 1 if crowded(cells.cell_start) else 0
            grid = (chunk_cells(cells.cell_start, n, n_chunks), gf, gi, cells.order, cells.cell_start)
            hunters = pred_pos.copy()  # boids flee from where the predators were
            inputs = (pv, flags, box, sides, world, world_at, hunters, status)
            if predators:
                hunt(pred_pos, pred_vel, pred_quat, pos_c, rows[0], box, periodic, flags[WRAPS],
                     flags[PLANAR], fixed[2], dt, fixed[3], fixed[4], fixed[5])  # fmt: skip
            for phase in (GATHER, ADVANCE):
                run(phase, n_chunks, chunk, grid, gathered, rows, rows_to, inputs, time0 + (clock0 + s) * dt,
                    seed, step0 + s)  # fmt: skip
            failed = False
            for t in range(n_chunks):
                if status[t, 0] != OK:
                    failed = True
            if failed:
                done = s + 1
                break
        # Back to the public order, from the second set, where the last step wrote it, or else
        # through it.
        if done % 2 == 0 and done > 0:
            run(COPY, n_chunks, chunk, grid, gathered, public, second, inputs, time0, seed, step0)
        if done > 0:
            written = (ids_b if done % 2 else ids, pos_b, vel_b, quat_b, wp_b)
            back = (ids_b, pos, vel, quat, waypoints)  # ids_b unwritten: rows go to their public index
            run(UNPERMUTE, n_chunks, chunk, grid, gathered, written, back, inputs, time0, seed, step0)
        return done

    return _advance


_drivers: dict = {}
_run_pointer: list = []  # the compiled _run_chunks, as every driver takes it (one Pointer)

_CHUNK_TYPE = types.FunctionType(CHUNK_SIGNATURE)
_ROWS = types.Tuple((_I1, _F2, _F2, _F2, _I1))  # a set of state arrays: ids, pos, vel, quat, waypoints
_GRID = types.Tuple((_I1, _F1, _I1, _I1, _I1))  # bounds, grid floats, grid ints, order, cell_start
_INPUTS = types.Tuple((_F1, types.boolean[::1], _F1, _F1, _F1, _I1, _F2, _I2))
_RUN_TYPE = types.FunctionType(
    types.void(types.int64, types.int64, _CHUNK_TYPE, _GRID, types.Tuple((_F2, _F2)), _ROWS, _ROWS, _INPUTS,
               types.float64, types.int64, types.int64)
)  # fmt: skip
_ADVANCE_SIGNATURE = types.int64(
    _RUN_TYPE, _CHUNK_TYPE, types.Tuple((_F2, _F2, _F2, _I1)), types.Tuple((_F2, _F2, _F2)), types.int64,
    types.float64, types.int64, types.int64, types.int64, _F1, types.boolean[::1], _F1, _F1, _I1, _I2, _F1,
    types.boolean[::1], types.Tuple((_F2, _F2, _I1, _I1, _F2, _F2, _F2, _I1)),
)  # fmt: skip


class Pointer(WrapperAddressProtocol):
    """A compiled function handed to compiled code as a first-class function of type ``ftype``.

    Passed as a numba function, it would be typed (a long signature) and its compiled
    version looked up on every call, a cost larger than a small flock's whole step. The
    address is looked up once here and the type is given, not inferred.
    """

    def __init__(self, fn, ftype: types.FunctionType) -> None:
        self.fn, self.type = fn, ftype  # fn keeps the compiled code alive
        self.address = _get_wrapper_address(fn, ftype.signature)

    def __wrapper_address__(self) -> int:
        return self.address

    def signature(self):
        return self.type.signature


@typeof_impl.register(Pointer)
def _typeof_pointer(value, context):
    return value.type


def chunk_pointer(chunk) -> Pointer:
    """An assembled ``chunk`` function as the driver takes it (see :class:`Pointer`)."""
    return Pointer(chunk, _CHUNK_TYPE)


class Workspace:
    """The synchronous driver's working arrays for one flock, kept from one call to the next.

    A step gathers its start-of-step state in cell order (``cols`` (N, COLUMNS), ``heads`` (3, N))
    and writes the new state to a second set of state arrays (``ids``, positions,
    velocities, orientations, waypoints), the caller's and the second set used in turn.
    Allocated on every call, blocks this large come from fresh pages (the allocator hands
    them back to the system when freed), which a one-step call would pay for each time; a
    flock keeps one Workspace, so they stay allocated between calls.
    """

    def __init__(self) -> None:
        self._arrays: tuple[np.ndarray, ...] = ()

    def arrays(self, n: int) -> tuple[np.ndarray, ...]:
        """``cols, heads, ids, ids_b, pos_b, vel_b, quat_b, wp_b`` for ``n`` boids, as the driver takes
        them after its other arguments (allocated on first use and when ``n`` changes)."""
        if not self._arrays or self._arrays[2].shape[0] != n:
            ids, ids_b, wp_b = (np.empty(n, dtype=np.int64) for _ in range(3))
            pos_b, vel_b, quat_b = np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 4))
            self._arrays = (np.empty((n, COLUMNS)), np.empty((3, n)), ids, ids_b, pos_b, vel_b, quat_b, wp_b)
        return self._arrays


def driver_options(periodic: bool, predators: bool) -> tuple[bool, bool]:
    """The key of the synchronous driver a flock needs (see :func:`synchronous_driver`)."""
    return bool(periodic), bool(predators)


def synchronous_driver(periodic: bool = False, predators: bool = False):
    """The compiled synchronous step: ``advance(chunk, state arrays..., status, fixed, stop, *work)
    -> steps done``.

    ``chunk`` is an assembled chunk function (:data:`CHUNK_SIGNATURE`) as :func:`chunk_pointer`
    gives it; step s of the call runs at time ``time0 + (clock0 + s) * dt`` (see
    :meth:`~flock3d.core.state.FlockState.clock`); ``fixed`` holds the grid's cell size, dt and
    the predators' speed and turn limit; ``stop`` (1,) bool, when another thread sets it, ends
    the call before its next step; ``work`` is a :class:`Workspace`'s arrays for the flock's size.
    One driver serves every layout of a kind (periodic arena or not, predators or not); each is compiled on
    first use and cached. The parallel loop over chunks is compiled once for all of them
    and called through a pointer, so that no driver's compile links and compiles it again.
    """
    key = driver_options(periodic, predators)
    if key not in _drivers:
        if not _run_pointer:
            run = numba.njit(_RUN_TYPE.signature, fastmath=FAST, error_model="numpy", cache=True,
                             parallel=True, nogil=True, no_cpython_wrapper=True)(_run_chunks)  # fmt: skip
            _run_pointer.append(Pointer(run, _RUN_TYPE))
        advance = numba.njit(_ADVANCE_SIGNATURE, fastmath=FAST, error_model="numpy", cache=True, nogil=True)(
            _make_advance(*key)
        )
        _drivers[key] = functools.partial(advance, _run_pointer[0])
    return _drivers[key]


def driver_is_cached(periodic: bool = False, predators: bool = False) -> bool:
    """Whether numba's cache holds the driver :func:`synchronous_driver` would compile."""
    try:
        from numba.core.caching import FunctionCache
        from numba.core.registry import cpu_target

        cache = FunctionCache(_make_advance(*driver_options(periodic, predators)))
        key = cache._index_key(_ADVANCE_SIGNATURE, cpu_target.target_context.codegen())
        return key in cache._cache_file._load_index()
    except Exception:  # noqa: BLE001 - numba's internals moved: assume cached, compile where needed
        return True
