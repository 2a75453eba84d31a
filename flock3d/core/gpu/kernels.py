"""The GPU step's fixed kernels: the grid, the sort by cell and the gather (numba-cuda).

Every step sorts the boids by (cell, public index), the order the CPU engine keeps, so that
each boid sums its neighbours in the same order every run: a counting sort whose counts are
atomic integer additions (exact, so deterministic), an exclusive scan of the counts, a
scatter (atomic slots, so in no fixed order within a cell) and an insertion sort of each
cell's few boids by index that fixes it. No floating-point sum is atomic.

Importing this module needs numba-cuda (:mod:`flock3d.core.gpu.device`).
"""

from __future__ import annotations

import functools
import math
from typing import Any

from numba import float64, int64

from flock3d.core.gpu.cells import cell_key, cell_of
from flock3d.core.gpu.device import cuda, simulated
from flock3d.core.kernel import heading, hunt
from flock3d.core.neighbors import grid_shape

__all__ = ["TPB", "blocks", "BOUND_THREADS", "bounds_partial", "bounds_grid", "count_cells", "uncount",
           "in_use", "scan_blocks", "scan_totals", "add_offsets", "SPAN", "scatter", "sort_cells", "gather",
           "unsort", "hunting", "keeping_out"]  # fmt: skip

#: Threads a block. numba's CUDA simulator runs each thread of a block as a Python thread and
#: polls them all: the tests' flocks of tens of boids there take blocks of 32, a quarter of the
#: threads to start and poll, and their scans span several blocks, as a large flock's do.
TPB = 32 if simulated() else 128
#: Threads that each bound a stride of the positions (bounds_partial), reduced by one block.
BOUND_THREADS = 64 * TPB
#: Entries a thread of scan_blocks adds up serially, and entries a block scans.
ITEMS = 8
SPAN = TPB * ITEMS


def blocks(n: int) -> int:
    """Blocks of TPB threads for n items (at least one)."""
    return max(1, (n + TPB - 1) // TPB)


@cuda.jit
def bounds_partial(pos, partial):
    """Thread g's corners of the bounding box of positions g, g + G, g + 2G.. (G threads):
    partial[g] = lo x, y, z, hi x, y, z (non-finite coordinates left out, as the CPU grid does)."""
    g = cuda.grid(1)
    stride = cuda.gridsize(1)
    lx = ly = lz = math.inf
    hx = hy = hz = -math.inf
    for i in range(g, pos.shape[0], stride):
        x, y, z = pos[i, 0], pos[i, 1], pos[i, 2]
        if math.isfinite(x):
            lx, hx = min(lx, x), max(hx, x)
        if math.isfinite(y):
            ly, hy = min(ly, y), max(hy, y)
        if math.isfinite(z):
            lz, hz = min(lz, z), max(hz, z)
    partial[g, 0], partial[g, 1], partial[g, 2] = lx, ly, lz
    partial[g, 3], partial[g, 4], partial[g, 5] = hx, hy, hz


@cuda.jit
def bounds_grid(partial, reach, max_cells, spread, gf, gi):
    """One block: the bounding box of ``partial``'s corners, and the grid covering it with
    cells at least ``reach`` wide (``grid_shape``, as the CPU engine sizes its own), each cut
    into ``spread`` along x (:mod:`flock3d.core.gpu.cells`): origin and sides into gf, cells
    along each axis and ``spread`` into gi; at most ``max_cells`` cells."""
    corners = cuda.shared.array((6, TPB), float64)
    t = cuda.threadIdx.x
    for a in range(6):
        corners[a, t] = math.inf if a < 3 else -math.inf
    for g in range(t, partial.shape[0], TPB):
        for a in range(3):
            corners[a, t] = min(corners[a, t], partial[g, a])
            corners[a + 3, t] = max(corners[a + 3, t], partial[g, a + 3])
    cuda.syncthreads()
    if t == 0:
        for u in range(1, TPB):
            for a in range(3):
                corners[a, 0] = min(corners[a, 0], corners[a, u])
                corners[a + 3, 0] = max(corners[a + 3, 0], corners[a + 3, u])
        for a in range(3):
            if corners[a, 0] > corners[a + 3, 0]:  # no finite coordinate
                corners[a, 0] = corners[a + 3, 0] = 0.0
        ex = corners[3, 0] - corners[0, 0]
        size, nx, ny, nz = grid_shape(ex, corners[4, 0] - corners[1, 0], corners[5, 0] - corners[2, 0], reach,
                                      max_cells / spread)  # fmt: skip
        gf[0], gf[1], gf[2] = corners[0, 0], corners[1, 0], corners[2, 0]
        gf[3], gf[4], gf[5] = size / spread, size, size
        # at most spread * nx along x (so at most max_cells cells), whatever the rounding
        gi[0], gi[1], gi[2], gi[3] = min(int(ex / gf[3]) + 1, spread * nx), ny, nz, spread


@cuda.jit
def count_cells(pos, gf, gi, keys, counts):
    """keys[i] <- the cell of boid row i; counts[cell] += 1 (atomic integer additions)."""
    i = cuda.grid(1)
    if i < pos.shape[0]:
        cx, cy, cz = cell_of(pos[i, 0], pos[i, 1], pos[i, 2], gf, gi)
        key = cell_key(cx, cy, cz, gi)
        keys[i] = key
        cuda.atomic.add(counts, key, 1)


@cuda.jit
def uncount(keys, counts):
    """counts[keys[i]] -= 1 for every row i: the counts the step's kernel left for the next sort
    (each boid in its cell) taken back to zero, when that sort counts afresh (a grid sized
    again, a state uploaded)."""
    i = cuda.grid(1)
    if i < keys.shape[0]:
        cuda.atomic.sub(counts, keys[i], 1)


@cuda.jit(device=True)
def in_use(n, gi, level):
    """How many of ``n`` entries of level ``level`` of the scan of the cells' counts
    (:func:`scan_blocks`) the grid in ``gi`` uses: its cells and one (the end of the last), then
    a block's total for every SPAN of those at each level up. The counts are sized for the most
    cells a grid may have; the grid sized on the device uses a few of them, and the entries past
    them are never read (a scan's entry depends only on those before it)."""
    m = gi[0] * gi[1] * gi[2] + 1
    for _ in range(level):
        m = (m + SPAN - 1) // SPAN
    return min(n, m)


@cuda.jit(device=True)
def _scan_span(values, out, n, first, carry, partial):
    """The block's part of an exclusive scan: ``out[first + i]`` <- ``carry`` plus the entries of
    ``values[first : first + SPAN]`` (those below ``n``) before it; returns the span's total.
    Every thread of the block calls it (its barriers are the block's); ``partial``: TPB shared."""
    t = cuda.threadIdx.x
    base = first + t * ITEMS
    own = 0
    for a in range(ITEMS):
        if base + a < n:
            own += values[base + a]
    partial[t] = own
    cuda.syncthreads()
    d = 1
    while d < TPB:  # Hillis and Steele: an inclusive scan of the threads' sums
        x = partial[t - d] if t >= d else 0
        cuda.syncthreads()
        partial[t] += x
        cuda.syncthreads()
        d *= 2
    running = carry + partial[t] - own
    for a in range(ITEMS):
        if base + a < n:
            out[base + a] = running
            running += values[base + a]
    total = partial[TPB - 1]
    cuda.syncthreads()  # every thread has read the total before the block writes partial again
    return total


@cuda.jit
def scan_blocks(values, out, sums, n, gi, level):
    """Block b's part of an exclusive scan of ``values[:n]`` into ``out``: entries b * SPAN ..
    (b + 1) * SPAN - 1, each the sum of the block's entries before it; the block's total into
    ``sums[b]`` (its offset is added by :func:`add_offsets`). ``out`` is not ``values``. Only
    the entries the grid uses (:func:`in_use`) are scanned; a block past them does nothing."""
    n = in_use(n, gi, level)
    if cuda.blockIdx.x * SPAN >= n:  # the whole block returns, before any barrier
        return
    partial = cuda.shared.array(TPB, int64)
    total = _scan_span(values, out, n, cuda.blockIdx.x * SPAN, 0, partial)
    if cuda.threadIdx.x == 0:
        sums[cuda.blockIdx.x] = total


@cuda.jit
def scan_totals(values, out, n, gi, level):
    """One block: the exclusive scan of ``values[:n]`` (the entries the grid uses at ``level``,
    :func:`in_use`) into ``out``, SPAN entries at a time, each span moved by the total of those
    before it. The blocks' totals of :func:`scan_blocks` are a few hundred at 1,000,000 boids:
    one launch scans them, where a block a span and the scan of their totals took two more."""
    n = in_use(n, gi, level)
    partial = cuda.shared.array(TPB, int64)
    carry = 0
    for first in range(0, n, SPAN):  # every thread runs each span: the barriers are the block's
        carry += _scan_span(values, out, n, first, carry, partial)


@cuda.jit
def add_offsets(out, offsets, n, gi, level):
    """out[c] += offsets[c // SPAN]: each block's scan moved by the scan of the blocks' totals
    (the entries of level ``level`` the grid uses)."""
    c = cuda.grid(1)
    if c < in_use(n, gi, level):
        out[c] += offsets[c // SPAN]


@cuda.jit
def scatter(keys, start, counts, order):
    """order[slot] <- row i, a slot of its cell's (atomic: in no fixed order within the cell).
    Takes the counts back down to zero, ready for the next step's count_cells."""
    i = cuda.grid(1)
    if i < keys.shape[0]:
        key = keys[i]
        order[start[key] + cuda.atomic.sub(counts, key, 1) - 1] = i


@cuda.jit
def sort_cells(start, order, ids, gi):
    """Each cell's slots of ``order`` sorted by the boids' public index ``ids`` (insertion sort:
    a cell holds a few boids), which fixes the order scatter left to chance; the cells of the
    grid in ``gi``."""
    c = cuda.grid(1)
    if c >= gi[0] * gi[1] * gi[2]:
        return
    lo, hi = start[c], start[c + 1]
    for a in range(lo + 1, hi):
        row = order[a]
        key = ids[row]
        b = a - 1
        while b >= lo and ids[order[b]] > key:
            order[b + 1] = order[b]
            b -= 1
        order[b + 1] = row


@cuda.jit
def gather(order, ids, pos, vel, quat, wp, ids_to, wp_to, cols, heads, from_velocity):
    """Row k of the sorted state <- row order[k]: its index and the waypoint it seeks into the
    arrays the step reads and writes them in, its start-of-step position, velocity and index into
    ``cols`` (N, 8) and its heading into ``heads`` (3, N), which every boid's step reads. The step
    writes every row of the positions, velocities and orientations, reading its own orientation
    where the last step left it (a boid that does not move writes its start-of-step state), so
    none is copied twice. (A heading computed in the step rather than read from ``heads`` held
    more registers through its pair loop: twice the spills at its cap.)"""
    k = cuda.grid(1)
    if k >= order.shape[0]:
        return
    i = order[k]
    px, py, pz = pos[i, 0], pos[i, 1], pos[i, 2]
    vx, vy, vz = vel[i, 0], vel[i, 1], vel[i, 2]
    ids_to[k], wp_to[k] = ids[i], wp[i]
    cols[k, 0], cols[k, 1], cols[k, 2], cols[k, 3], cols[k, 4], cols[k, 5] = px, py, pz, vx, vy, vz
    cols[k, 6] = ids[i]
    hx, hy, hz = heading(quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3], vx, vy, vz, from_velocity)
    heads[0, k], heads[1, k], heads[2, k] = hx, hy, hz


@cuda.jit
def unsort(ids, pos, vel, quat, wp, pos_to, vel_to, quat_to, wp_to):
    """Row ``ids[k]`` of the ``_to`` arrays <- row k: the state put back in public order on the
    device, so that the host copies it as it lies (no scatter of its rows on the host)."""
    k = cuda.grid(1)
    if k >= ids.shape[0]:
        return
    i = ids[k]
    pos_to[i, 0], pos_to[i, 1], pos_to[i, 2] = pos[k, 0], pos[k, 1], pos[k, 2]
    vel_to[i, 0], vel_to[i, 1], vel_to[i, 2] = vel[k, 0], vel[k, 1], vel[k, 2]
    for a in range(4):
        quat_to[i, a] = quat[k, a]
    wp_to[i] = wp[k]


@cuda.jit
def hunting(pred_pos, pred_vel, pred_quat, hunters, pos, ids, box, flags, first_failed, call_step, speed, dt,
            cos_max, cos_half, sin_half):  # fmt: skip
    """The predators' step (one thread: they are few), from the boids' start-of-step positions
    (rows ``pos``, public indices ``ids``), after keeping where they were in ``hunters``, which
    the boids flee from (the CPU engine's :func:`flock3d.core.kernel.hunt`). Nothing moves after
    a step of the call that failed, as in the generated step."""
    if cuda.grid(1) != 0 or first_failed[0] < call_step:
        return
    for k in range(pred_pos.shape[0]):
        hunters[k, 0], hunters[k, 1], hunters[k, 2] = pred_pos[k, 0], pred_pos[k, 1], pred_pos[k, 2]
    periodic, wraps, planar = flags[0], flags[1], flags[2]
    hunt(pred_pos, pred_vel, pred_quat, pos, ids, box, periodic, wraps, planar, speed, dt, cos_max, cos_half,
         sin_half)  # fmt: skip


@functools.cache
def keeping_out(keep: Any) -> Any:
    """The kernel that keeps the predators out of the world after the hunt (one thread), by the
    constraint ``keep`` that keeps the boids out (:attr:`flock3d.core.terms.Term.keeps_predators`'s
    function, compiled here as a device function), on the term's record ``world[world_at[k] :
    world_at[k + 1]]``: the CPU engine's :func:`flock3d.core.kernel.predators.kept_out`."""

    @cuda.jit
    def kernel(pred_pos, hunters, world, world_at, k, first_failed, call_step, now, later, planar):
        if cuda.grid(1) != 0 or first_failed[0] < call_step:
            return
        record = world[world_at[k] : world_at[k + 1]]
        for m in range(pred_pos.shape[0]):
            pred_pos[m, 0], pred_pos[m, 1], pred_pos[m, 2] = keep(
                pred_pos[m, 0], pred_pos[m, 1], pred_pos[m, 2], hunters[m, 0], hunters[m, 1], hunters[m, 2],
                record, now, later, planar,
            )  # fmt: skip

    return kernel
