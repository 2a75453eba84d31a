"""The skeleton of a GPU step: one CUDA thread a boid, with named holes.

:mod:`flock3d.core.step.cuda_generate` copies :func:`advance` into a layout's module and
fills each ``hole(NAME)`` line as :mod:`flock3d.core.step.generate` fills the CPU template's
(the same term lines: each term's numba components compile as CUDA device functions), then
compiles it as a kernel (``flock3d debug step SCENE --engine gpu`` prints the whole module).
The grid, the sort by cell and the gather before it are :mod:`flock3d.core.gpu.kernels`.

The holes are the CPU template's: ``values`` (the numbers read from ``pv``), ``species``,
``boid`` (the desired velocity staged, its pair loop running over the candidate runs of
:func:`flock3d.core.gpu.cells.candidate_run`) and ``turn`` (the turn, the move and its check,
:func:`flock3d.core.kernel.turn_rows` and ``move_rows`` on a batch of one), and ``batch``:
where that batch of one lies. A step is one kernel (:func:`advance` whole: the batch in the
thread's local memory) or two (split: :func:`advance` stages the boid in its column of
``staged_all``, and :func:`settle` turns and moves it), as the CPU engine stages a chunk's
boids before it turns them. Split, the pair loop's kernel holds fewer registers a thread
(more threads resident), and each kernel may be capped on its own. The module's imports below
are copied into every generated module.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from flock3d.core.gpu.cells import RUNS, candidate_run, cell_key, cell_of
from flock3d.core.gpu.device import cuda, jit_options
from flock3d.core.gpu.nearest import insert_nearest
from flock3d.core.kernel import (
    OK,
    RULE_NOT_FINITE,
    RULE_SHAPE,
    STAGED,
    clamp_speed,
    image,
    move_rows,
    record,
    turn_mesh_rows,
    turn_rows,
)


def hole(name: str, *values: str) -> None:
    """A place the generator fills (never called: a template function is never run as it is)."""
    raise RuntimeError(f"the template's hole {name!r} was not filled")


def advance(cols, heads, ids, quat, pos, vel, waypoints, start, gf, gi, pv, flags, box, sides, world, world_at,
            hunters, status, first_failed, call_step, now, seed, step_count, staged_all, failed_all, keys,
            counts, order, quat0):  # fmt: skip
    """Step ``call_step`` of a call for the boid of thread k: row k of the state sorted by (cell, index).

    It reads the start-of-step state every boid reads (``cols`` (N, 8): positions, velocities
    and indices; ``heads`` (3, N): headings), its own orientation where the last step left it
    (row ``order[k]`` of ``quat0``), and writes its new
    state to row k of ``pos``, ``vel`` and ``quat``: every row (the gather writes none; a boid
    that does not move writes its start-of-step state, the ``kept`` lines). ``hunters``: the
    predators' start-of-step positions. A failure is recorded in its row of ``status`` (N, 3), and the
    first step of the call that failed in ``first_failed`` (1,), an atomic minimum of integers;
    a step after it moves no boid. ``staged_all`` (cuda_generate.staged_rows, N) and
    ``failed_all`` (N,): where a split step stages each boid for :func:`settle`, and after the
    STAGED rows the carried state it keeps if it moves (unused by a whole one). The carried
    state rides after the values in ``pv``. The kernel that writes the positions counts each
    boid in its cell of the grid ``gf``, ``gi`` for the next step's sort (``keys`` (N,),
    ``counts``: the ``counted`` lines, as :func:`flock3d.core.gpu.kernels.count_cells` counts).
    """
    k = cuda.grid(1)
    if k >= ids.shape[0]:
        return
    if first_failed[0] < call_step:  # a step after a failed one moves no boid
        hole("kept")
        hole("counted")
        return
    hole("values", "reach")
    periodic, wraps, planar, mesh = flags[0], flags[1], flags[2], flags[3]
    hole("world")  # the world features' data, each a view of ``world`` (rows, or a flat record)
    i, t, slot = k, k, 0  # its row, its row of status, its column in a batch of one
    boid = ids[k]
    px, py, pz = cols[k, 0], cols[k, 1], cols[k, 2]
    vx, vy, vz = cols[k, 3], cols[k, 4], cols[k, 5]
    last = order[k]  # its row of the last step's state
    qw, qx, qy, qz = quat0[last, 0], quat0[last, 1], quat0[last, 2], quat0[last, 3]
    fx, fy, fz = heads[0, k], heads[1, k], heads[2, k]
    cx, cy, cz = cell_of(px, py, pz, gf, gi)  # its candidates: the runs around this cell
    bx, by, bz, bvx, bvy, bvz, bid = cols[:, 0], cols[:, 1], cols[:, 2], cols[:, 3], cols[:, 4], cols[:, 5], cols[:, 6]  # fmt: skip
    hole("batch")  # staged, turned, failed_rows: the boid's batch of one
    hole("species")  # with species: the boid's species, and its own values
    hole("boid")  # the boid's desired velocity, staged
    hole("turn")  # it turns, moves, settles and is written (a split step: in settle)
    if failed_rows[0]:
        cuda.atomic.min(first_failed, 0, call_step)
        hole("kept")
    hole("counted")


def settle(staged_all, failed_all, cols, ids, quat, pos, vel, gf, gi, pv, flags, box, world, world_at, status,
           first_failed, call_step, now, keys, counts, order, quat0):  # fmt: skip
    """A split step's second kernel: the boid of thread k, staged by :func:`advance` in column k of
    ``staged_all``, turns, moves, settles and is written to row k of ``quat``, ``vel``, ``pos``
    (its start-of-step state where it does not move), and counted in its cell."""
    k = cuda.grid(1)
    if k >= ids.shape[0]:
        return
    if first_failed[0] < call_step:
        hole("kept")
        hole("counted")
        return
    hole("values")
    periodic, wraps, planar, mesh = flags[0], flags[1], flags[2], flags[3]
    hole("world")
    t = k  # its row of status
    staged, failed_rows = staged_all[:, k : k + 1], failed_all[k : k + 1]
    hole("turned")  # the batch's turned states (aerodynamic flight: turned in advance, in staged_all)
    hole("turn")
    if failed_rows[0]:
        cuda.atomic.min(first_failed, 0, call_step)
        hole("kept")
    hole("counted")
