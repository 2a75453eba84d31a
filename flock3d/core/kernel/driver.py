"""The synchronous driver every assembled step shares: the phases of a step run chunk by chunk in
parallel, the chunk called through a pointer, the working arrays a flock keeps."""

from __future__ import annotations

import functools

import numba
import numpy as np
from numba import prange, types
from numba.core.types import WrapperAddressProtocol
from numba.experimental.function_type import _get_wrapper_address
from numba.extending import typeof_impl

from flock3d.core.kernel.base import FAST, shared
from flock3d.core.kernel.calls import is_cached
from flock3d.core.kernel.candidates import COLUMNS, chunk_cells, crowded, gather
from flock3d.core.kernel.motion import wrap_into_box
from flock3d.core.kernel.predators import hunt, kept_out
from flock3d.core.neighbors import build_grid, build_periodic_grid
from flock3d.core.status import OK

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


def _make_advance(periodic, hunting):
    """The driver's step loop for a periodic arena or not, with predators or not.

    Both are constants of the closure, so numba drops the branches a flock does not use
    before typing them: a first run compiles neither the periodic grid nor the hunt
    unless its scene has them.
    """

    def _advance(run, chunk, state, predators, n_steps, time0, clock0, step0, seed, pv, flags, box, world,
                 world_at, shield, status, fixed, stop, work):  # fmt: skip
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
            now = time0 + (clock0 + s) * dt
            if hunting:  # not the argument `predators`, a tuple, always true
                hunt(pred_pos, pred_vel, pred_quat, pos_c, rows[0], box, periodic, flags[WRAPS],
                     flags[PLANAR], fixed[2], dt, fixed[3], fixed[4], fixed[5])  # fmt: skip
                kept_out(pred_pos, hunters, world, shield, now, now + dt, flags[PLANAR])  # the boids' times
            for phase in (GATHER, ADVANCE):
                run(phase, n_chunks, chunk, grid, gathered, rows, rows_to, inputs, now, seed, step0 + s)
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
    types.float64, types.int64, types.int64, types.int64, _F1, types.boolean[::1], _F1, _F1, _I1, _I1, _I2,
    _F1, types.boolean[::1], types.Tuple((_F2, _F2, _I1, _I1, _F2, _F2, _F2, _I1)),
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
    :meth:`~flock3d.core.state.FlockState.clock`); ``shield`` says where the world's objects lie in
    ``world`` and the address of their keep-out, which holds the predators too
    (:func:`~flock3d.core.kernel.predators.kept_out`); ``fixed`` holds the grid's cell size, dt and
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


def phase_runner():
    """The driver's loop over chunks as Python can call it: ``run(phase, n_chunks, chunk, grid,
    gathered, rows, rows_to, inputs, now, seed, step)`` runs one phase of a step alone (see
    :func:`_run_chunks`), as the driver runs it; ``flock3d bench --profile`` times each.

    Compiled on first use and not cached: a second compile of the function the driver calls
    through its pointer, which numba's cache would file under the same name.
    """
    if not _phase_runner:
        run = numba.njit(fastmath=FAST, error_model="numpy", nogil=True, parallel=True)(_run_chunks)
        _phase_runner.append(run)
    return _phase_runner[0]


_phase_runner: list = []


def driver_loaded(periodic: bool = False, predators: bool = False) -> bool:
    """Whether this process has the driver :func:`synchronous_driver` gives (compiled or loaded)."""
    return driver_options(periodic, predators) in _drivers


def driver_is_cached(periodic: bool = False, predators: bool = False) -> bool:
    """Whether numba's cache holds the driver :func:`synchronous_driver` would compile."""
    return is_cached(_make_advance(*driver_options(periodic, predators)), _ADVANCE_SIGNATURE)
