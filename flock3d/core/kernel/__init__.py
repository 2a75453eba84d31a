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
- A chunk's boids turn together (:func:`turn_rows`, :func:`turn_mesh_rows`): each stages its
  desired velocity in a batch, column by column, and the batch turns as SIMD vectors, rather
  than each boid waiting on its own chain of square roots and divisions.
- Each boid writes only its own rows and sums its neighbours in an order fixed by the
  current positions, so a step is a pure function of the state: the same bit for bit
  whatever the thread count, and ``step(n)`` equals n single steps.
- The functions here are called from the assembled code, not inlined into it, so a new
  combination of rules compiles only its own code (and the cache serves the rest); the
  hot pair loop is generated whole, so nothing is called per pair. The batch's turn and move
  are called at their addresses (:class:`Called`), so that they too compile once for every layout.
- What a first run compiles is kept small (numba's typing and LLVM dominate it): the
  driver of a step comes in four kinds (periodic arena or not, predators or not) so
  no scene compiles code it cannot reach; the parallel loop over chunks is one loop
  compiled once and called through a pointer, as the chunk is; and the shared functions
  have no entry point from Python (:mod:`flock3d.core.no_entry`: a call from Python reaches a twin).
  While one core compiles the driver, the other compiles the scene's own chunk; a world's
  keep-out and avoidance are called at their addresses (:class:`Called`), so they too compile on
  the other core while this one compiles the chunk.
- The driver gets the chunk and the parallel loop as addresses (:class:`Pointer`), so a call
  from Python does not type them again; a flock of one chunk runs it on the calling thread
  (waking the sleeping threads costs more than its whole step).
- Every boid's new state is checked (finite, and within :data:`MAX_COORDINATE`); a boid
  that fails keeps its old state and the step reports it (see :class:`StepStatus`).

Its modules, by job: :mod:`.base` (fast-math flags, how the pieces compile, chunk size),
:mod:`.candidates` (the grid, the candidate buffers, gathering), :mod:`.motion` (speed, turn
and move), :mod:`.predators` (the hunt), :mod:`.calls` (functions called through their address)
and :mod:`.driver` (the synchronous driver).
"""

from __future__ import annotations

import os

# Idle OpenMP threads sleep rather than spin, so that a step stays fast when another busy
# process (a renderer, a second simulation) shares the cores; it must be set before the
# OpenMP runtime starts, so before numba is imported by the modules below. GOMP_SPINCOUNT lets
# a user trade that for speed on an idle machine (the README's Speed section; benchmarks/NOTES.md).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# isort: off
from flock3d.core.space import cone_threshold  # the one cone both engines test
from flock3d.core.kernel.base import (
    BOIDS_PER_CHUNK,
    FAST,
    MAX_COORDINATE,
    inlined,
    shared,
    threads,
)
from flock3d.core.kernel.candidates import (
    COLUMNS,
    CROWDED,
    candidate_buffer,
    chunk_cells,
    count_candidates,
    crowded,
    fill_around,
    fill_candidates,
    fill_row,
    gather,
    heading,
    row_span,
    sort_cells_by_id,
)
from flock3d.core.kernel.motion import (
    F_X,
    LIMIT,
    MOVE_ROWS,
    P_X,
    Q_W,
    STAGED,
    S_MAX,
    S_MIN,
    TURN_MESH_ROWS,
    TURN_ROWS,
    U_X,
    clamp_speed,
    image,
    is_sound,
    move_rows,
    move_rows_at,
    record,
    settle,
    slerp_towards,
    turn_heading,
    turn_mesh,
    turn_mesh_rows,
    turn_mesh_rows_at,
    turn_called,
    turn_rows,
    turn_rows_at,
    wrap_into_box,
)
from flock3d.core.kernel.predators import (
    hunt,
)
from flock3d.core.kernel.calls import Called
from flock3d.core.kernel.driver import (
    ADVANCE,
    CHUNK_SIGNATURE,
    COPY,
    COUZIN,
    GATHER,
    MESH,
    PERIODIC,
    PLANAR,
    Pointer,
    SERIAL_ADVANCE_CHUNKS,
    SERIAL_GATHER_CHUNKS,
    UNPERMUTE,
    WRAPS,
    Workspace,
    chunk_pointer,
    driver_is_cached,
    driver_loaded,
    driver_options,
    phase_runner,
    synchronous_driver,
)
from flock3d.core.status import NOT_FINITE, OK, RULE_NOT_FINITE, RULE_RAISED, RULE_SHAPE
# isort: on

__all__ = [
    "FAST",
    "shared",
    "inlined",
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
    "COLUMNS",
    "row_span",
    "fill_around",
    "gather",
    "sort_cells_by_id",
    "heading",
    "image",
    "settle",
    "wrap_into_box",
    "clamp_speed",
    "turn_heading",
    "turn_mesh",
    "turn_rows",
    "turn_mesh_rows",
    "move_rows",
    "TURN_ROWS",
    "TURN_MESH_ROWS",
    "MOVE_ROWS",
    "turn_rows_at",
    "turn_mesh_rows_at",
    "turn_called",
    "move_rows_at",
    "STAGED",
    "Q_W",
    "U_X",
    "F_X",
    "S_MIN",
    "S_MAX",
    "LIMIT",
    "P_X",
    "slerp_towards",
    "record",
    "is_sound",
    "hunt",
    "OK",
    "NOT_FINITE",
    "RULE_RAISED",
    "RULE_NOT_FINITE",
    "RULE_SHAPE",
    "CHUNK_SIGNATURE",
    "PERIODIC",
    "WRAPS",
    "PLANAR",
    "MESH",
    "COUZIN",
    "GATHER",
    "ADVANCE",
    "COPY",
    "UNPERMUTE",
    "SERIAL_GATHER_CHUNKS",
    "SERIAL_ADVANCE_CHUNKS",
    "Pointer",
    "Called",
    "chunk_pointer",
    "Workspace",
    "driver_options",
    "synchronous_driver",
    "driver_is_cached",
    "driver_loaded",
    "phase_runner",
]
