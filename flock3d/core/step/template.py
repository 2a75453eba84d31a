"""The skeleton of an assembled step: the loops every layout shares, with named holes.

:mod:`flock3d.core.step.generate` copies these functions into a layout's module and fills
each ``hole(NAME)`` line with the code that layout needs (its terms, its neighbour kind,
its species); nothing else of them changes. Read them as the step itself: what runs is
this, with the holes filled (``flock3d debug step SCENE`` prints a scene's whole module).

``hole("values", ...)`` becomes the lines unpacking the numbers the function reads from
``pv`` into ``v_<name>`` locals (the names listed are those the skeleton itself reads; the
holes add theirs). The module's imports below are copied into every generated module.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from flock3d.core.kernel import (
    CHUNK_SIGNATURE,
    FAST,
    OK,
    RULE_NOT_FINITE,
    RULE_RAISED,
    RULE_SHAPE,
    STAGED,
    candidate_buffer,
    clamp_speed,
    fill_around,
    fill_candidates,
    fill_row,
    heading,
    hunt,
    image,
    move_rows,
    move_rows_at,
    record,
    row_span,
    turn_mesh_rows,
    turn_mesh_rows_at,
    turn_rows,
    turn_rows_at,
    wrap_into_box,
)
from flock3d.core.neighbors import CellGrid, build_grid, build_periodic_grid


def hole(name: str, *values: str) -> None:
    """A place the generator fills (never called: a template function is never run as it is)."""
    raise RuntimeError(f"the template's hole {name!r} was not filled")


def chunk(t, bounds, gf, gi, ids, start, cols, heads, pos, vel, quat, waypoints, pv, flags, box, sides, world,
          world_at, hunters, status, now, seed, step_count):  # fmt: skip
    """Chunk t of a synchronous step: cells ``bounds[t] .. bounds[t + 1] - 1``. Each boid's new
    state is computed from the start-of-step state (``cols``, ``heads``) and written to its row."""
    hole("values", "reach")
    periodic, wraps, planar, mesh = flags[0], flags[1], flags[2], flags[3]
    hole("world")  # the world features' data, each a view of ``world`` (rows, or a flat record)
    grid = CellGrid(gf[0], gf[1], gf[2], gf[3], gi[0], gi[1], gi[2], ids, start, gf[4], gf[5])
    fxs, fys, fzs = heads[0], heads[1], heads[2]
    c_lo, c_hi = bounds[t], bounds[t + 1]
    cells_x, cells_y = gi[0], gi[1]
    crowded = gi[3] != 0  # candidates cell by cell (fill_candidates), else row by row (fill_row)
    hole("buffer")  # buf: the candidate columns (x, y, z, vx, vy, vz, and the indices where needed)
    p_i, v_i, p_j, v_j = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    reach2 = v_reach * v_reach
    rows0 = start[c_lo]  # the chunk's boids turn and move as one batch (turn_rows)
    n_rows = start[c_hi] - rows0
    staged, turned = np.empty((STAGED, n_rows)), np.empty((7, n_rows))
    failed_rows = np.zeros(n_rows, dtype=np.bool_)
    hole("batch")  # what a layout keeps per chunk: the chosen neighbours, the adaptive radii
    c_next = c_lo
    while c_next < c_hi:  # row segment after row segment: cells seg_first .. seg_last of a row
        seg_row = c_next // cells_x
        seg_first, seg_last = c_next, min(c_hi, (seg_row + 1) * cells_x) - 1
        c_next = seg_last + 1
        while seg_first <= seg_last and start[seg_first + 1] == start[seg_first]:
            seg_first += 1
        while seg_last >= seg_first and start[seg_last + 1] == start[seg_last]:
            seg_last -= 1
        if seg_first > seg_last:
            continue
        row_x = seg_row * cells_x
        span_a, span_b = row_span(seg_first - row_x, seg_last - row_x, cells_x, periodic)
        if not crowded:
            fill_row(seg_row % cells_y, seg_row // cells_y, span_a, span_b, grid, cols, reach2, buf, xoff,
                     periodic, sides)  # fmt: skip
        for c in range(seg_first, seg_last + 1):
            if start[c + 1] == start[c]:
                continue
            if crowded:
                run0 = 0
                m = fill_candidates(c, grid, cols, reach2, buf, periodic, sides)
            else:  # the candidates of cell c: x-cells c - 1 .. c + 1 of the row buffer
                cell_x = c - row_x
                run0 = xoff[max(cell_x - 1, span_a) - span_a]
                m = xoff[min(cell_x + 1, span_b) - span_a + 1] - run0
            hole("cell")  # bx, by, ...: the candidates of cell c, from run0 on
            for k in range(start[c], start[c + 1]):
                i, boid, slot = k, ids[k], k - rows0  # its row, its public index, its slot in the batch
                px, py, pz = cols[k, 0], cols[k, 1], cols[k, 2]
                vx, vy, vz = cols[k, 3], cols[k, 4], cols[k, 5]
                fx, fy, fz = fxs[k], fys[k], fzs[k]
                qw, qx, qy, qz = quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3]
                hole("species")  # with species: the boid's species, and its own values
                hole("boid")  # the boid's desired velocity, staged in column ``slot`` of the batch
    hole("turn")  # the batch turns, moves, settles and is written, row by row


def advance(pos, vel, quat, waypoints, pred_pos, pred_vel, pred_quat, n_steps, time0, clock0, pv, flags, box,
            world, world_at, status, stop, seed):  # fmt: skip
    """``n_steps`` in-place steps (sequential or per rule), single-threaded over the live arrays in
    index order, as their sources do. Returns the steps done."""
    hole("values", "reach", "slack", "dt")
    periodic, wraps, planar, mesh = flags[0], flags[1], flags[2], flags[3]
    hole("world")
    n = pos.shape[0]
    b = np.empty((7, n + 8))  # room for the padding (see fill_around)
    buf = (b[0], b[1], b[2], b[3], b[4], b[5], b[6])
    bx, by, bz, bvx, bvy, bvz, bid = buf
    heads = np.empty((n, 3))
    p_i, v_i, p_j, v_j = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    t = 0
    dt = v_dt
    rows_ids = np.arange(n)
    n_rows = n
    staged, turned = np.empty((STAGED, n_rows)), np.empty((7, n_rows))
    failed_rows = np.zeros(n_rows, dtype=np.bool_)
    hole("batch")
    for s in range(n_steps):
        if stop[0]:  # set by another thread: end the call between steps
            return s
        now = time0 + (clock0 + s) * dt
        hole("grid")  # wrap into a periodic box; grid <- cells at least reach + slack wide
        hunters = pred_pos.copy()
        hole("hunt")  # the predators hunt from the start-of-step state
        for i in range(n):
            q, v = quat[i], vel[i]
            heads[i, 0], heads[i, 1], heads[i, 2] = heading(q[0], q[1], q[2], q[3], v[0], v[1], v[2], mesh)
        hole("update")  # boid after boid, or rule after rule: each in place
        if status[0, 0] != OK:
            return s + 1
    return n_steps
