"""The GPU engine's driver: a flock's state on the device, and ``n`` steps of it.

A step, as launched (no host round trip between steps; the call reads back one flag)::

    grid <- the bounding box of the positions, cells at least `reach` wide (cut in
            SHAPE.x_cells along x), every REGRID_STEPS steps (a periodic box: fixed)
    count the boids of each cell (unless the last step's kernel counted them on this grid),
    scan the counts (of the cells in use), scatter the boids, sort each cell by index
    gather the start-of-step state in that order (positions, velocities, indices, headings)
    one thread a boid: the generated kernel (flock3d.core.step.cuda_template) writes its new state
    and counts it in its cell (split: one kernel stages each boid's desired velocity, a second
    turns, moves and counts it)

Between steps the state stays in the last step's cell order, in two sets of arrays used in
turn (the gather reads one and writes the other), as the CPU engine keeps it; ``ids`` holds
each row's public index, and :meth:`DeviceFlock.download` puts the rows back in public order
(on the device, then copied as they lie).
Importing this module needs numba-cuda (:mod:`flock3d.core.gpu.device`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from flock3d.core.assemble import Layout, Stepper, StepStatus
from flock3d.core.gpu import kernels as K
from flock3d.core.gpu.device import cuda, pin
from flock3d.core.gpu.user import device_functions
from flock3d.core.kernel import OK
from flock3d.core.neighbors import periodic_shape
from flock3d.core.params import Params
from flock3d.core.quaternion import turn_limit
from flock3d.core.space import settled_positions
from flock3d.core.state import FlockState
from flock3d.core.step.cache import load_module
from flock3d.core.step.cuda_generate import DEFAULT_SHAPE, Shape, generate, staged_rows
from flock3d.core.step.values import offsets, predators_keepers, riders
from flock3d.core.user_rules import Force, PairRule

__all__ = ["DeviceFlock", "stepper", "SHAPE", "CELLS_PER_BOID"]

#: The grid's cells are coarsened to at most this many a boid (plus 64) when the flock spreads
#: out: the counts and their scan are that long every step.
CELLS_PER_BOID = 2
#: A grid sized on the device is sized again every this many steps (of the flock's count), not
#: every step. Any grid is right: a boid outside it is clamped into its edge cells, and two
#: points a reach apart are still as few cells apart there (clamping moves no two cells
#: further apart), so the cells around a boid still hold all it sees. Boids drift a little
#: outside the grid between sizings, which costs a few candidates.
REGRID_STEPS = 8
#: No step of a call failed (the flag's value).
_NONE_FAILED = np.iinfo(np.int64).max

#: How each step's kernels are cut and compiled (benchmarks/gpu.py sets it to compare shapes).
SHAPE: Shape = DEFAULT_SHAPE

_steppers: dict[tuple, Stepper] = {}


def stepper(layout: Layout, rules: Sequence[PairRule] = (), forces: Sequence[Force] = (),
            precision: str = "float64") -> Stepper:  # fmt: skip
    """The GPU step of ``layout`` (with the user's ``rules`` and ``forces``, each a device function
    of its own Python function) for a state in ``precision``: its source, the names of its values,
    and its module (whose ``advance`` is the kernel, and ``settle`` the second of a split step),
    generated and loaded once per process (and shape, and functions)."""
    rules, forces = tuple(rules), tuple(forces)
    shape = SHAPE.of_precision(precision)
    key = (layout, shape, tuple(id(r.fn) for r in rules), tuple(id(f.fn) for f in forces))
    kept = _steppers.get(key)
    if kept is None:
        source, names = generate(layout, shape)
        kept = Stepper(
            layout, source, names, load_module(source, device_functions(rules, forces)), rules, forces
        )
        _steppers[key] = kept
    # The rules' weights and radii may differ between calls with the same functions.
    if kept.rules is not rules or kept.forces is not forces:
        kept = replace(kept, rules=rules, forces=forces, _packed={})
        _steppers[key] = kept
    return kept


@dataclass
class _Rows:
    """One set of the state's device arrays, rows in some cell order: ids (the public index of
    each row), positions, velocities, orientations, and the waypoint each boid seeks."""

    ids: Any
    pos: Any
    vel: Any
    quat: Any
    wp: Any


class DeviceFlock:
    """The device arrays of a flock of ``n`` boids, and its steps.

    ``dtype`` is what the state is kept in between steps and what every boid reads of the others
    (positions, velocities, orientations, headings): float64, or float32 (half the memory and
    the reads; each step computes in float64 where its values meet a float64 one, and rounds
    what it writes to float32).
    """

    def __init__(self, n: int, dtype: type = np.float64) -> None:
        self.n, self.dtype = n, np.dtype(dtype)
        shapes = ((n, np.int64), ((n, 3), dtype), ((n, 3), dtype), ((n, 4), dtype), (n, np.int64))
        self.sets = [_Rows(*(cuda.device_array(shape, dt) for shape, dt in shapes)) for _ in range(2)]
        self.current = 0  # the set holding the state
        self.cols, self.heads = cuda.device_array((n, 8), dtype), cuda.device_array((3, n), dtype)
        self.keys, self.order = cuda.device_array(n, np.int64), cuda.device_array(n, np.int64)
        # Whether the counts hold the last step's kernel's (each boid of the current rows counted in
        # its cell of the grid in gf, gi, its cell in keys): the next step of the call sorts by them.
        self.counted = False
        # where a split step's first kernel stages each boid for its second (see stepper), made
        # for the step that needs it (cuda_generate.staged_rows); a whole step reads neither
        self.staged, self.failed = cuda.device_array((1, 1)), cuda.device_array(n, np.bool_)
        # The per-boid state the step carries (riders: a perching timer, an adaptive radius, a
        # spin), by public index after the values in the device's pv, as the CPU step carries it:
        # the arrays riding, and their numbers while no pv is on the device (after an upload).
        self.riding: list[tuple[str, int]] = []
        self._carried = np.zeros(0)
        self.pv_d: Any = None
        self.n_values = 0
        self.status = cuda.to_device(np.zeros((n, 3), dtype=np.int64))
        self.status_written = False
        self.first_failed = cuda.device_array(1, np.int64)
        self.partial = cuda.device_array((K.BOUND_THREADS, 6))
        self.gf, self.gi = cuda.device_array(6), cuda.device_array(4, np.int64)
        self.sized_for: tuple | None = None  # (reach, cells, spread) of the grid in gf, gi; None: none
        self.cells = 0  # the counts' capacity; (re)allocated by _grid
        self._world_host: tuple[np.ndarray, np.ndarray] | None = None  # the world on the device (_world)
        self._world_d: tuple[Any, Any] = ()
        self.periodic_grid: tuple | None = None
        # The host arrays the state is copied into, page-locked (device.pin), by id: each array and
        # its handle; and the page-locked arrays a float32 state is copied into first, by the id of
        # its device array. Pageable memory is copied at a fraction of the bus's speed.
        self._pinned: dict[int, tuple[np.ndarray, Any]] = {}
        self._staging: dict[int, np.ndarray] = {}

    # -- the state in and out --------------------------------------------------------------

    def upload(self, state: FlockState, params: Params, riding: Sequence[tuple[str, int]] = ()) -> None:
        """Take ``state``'s arrays, the boids' and the predators' (public order; positions settled
        into the arena first), and its carried arrays ``riding`` (name, width: what the step of
        :func:`~flock3d.core.step.values.riders` reads and writes)."""
        self.riding = list(riding)
        self._uncount()  # counted for rows written over now
        carried = (state.carried[name].reshape(-1) for name, _ in riding)
        self._carried = np.concatenate([np.zeros(0), *carried])
        self.pv_d = None  # made with the carried numbers at the next call
        rows = self.sets[self.current]
        rows.ids.copy_to_device(np.arange(self.n, dtype=np.int64))
        rows.pos.copy_to_device(np.ascontiguousarray(settled_positions(state.positions, params), self.dtype))
        rows.vel.copy_to_device(np.ascontiguousarray(state.velocities, self.dtype))
        rows.quat.copy_to_device(np.ascontiguousarray(state.orientations, self.dtype))
        rows.wp.copy_to_device(np.ascontiguousarray(state.waypoints, np.int64))
        hunters = np.ascontiguousarray(settled_positions(state.predator_positions, params))
        self.predators = [
            cuda.to_device(a) for a in (hunters, state.predator_velocities, state.predator_orientations)
        ]
        self.hunters = cuda.to_device(hunters)

    def download(self, positions: np.ndarray, velocities: np.ndarray, orientations: np.ndarray,
                 waypoints: np.ndarray, *predators: np.ndarray) -> None:  # fmt: skip
        """Write the state into these (N, 3), (N, 3), (N, 4), (N,) arrays and the predators' (M, 3),
        (M, 3), (M, 4), in place, in public order.

        The rows are put in public order on the device, in the other set of arrays (the next
        step's gather writes all of it before reading any), and each array is copied into its
        host array as it lies: no host scatter (at 1,000,000 boids a scatter of 88 MB of rows).
        The host arrays are page-locked the first time they are copied into (device.pin)."""
        rows, spare = self.sets[self.current], self.sets[1 - self.current]
        K.unsort[K.blocks(self.n), K.TPB](rows.ids, rows.pos, rows.vel, rows.quat, rows.wp,
                                          spare.pos, spare.vel, spare.quat, spare.wp)  # fmt: skip
        hosts = (positions, velocities, orientations, waypoints, *predators)
        devices = (spare.pos, spare.vel, spare.quat, spare.wp, *self.predators)
        pinned = {}  # the arrays copied into now, page-locked: those no longer copied into are let go
        for host, device in zip(hosts, devices, strict=True):
            if host.dtype == device.dtype and host.flags.c_contiguous:
                held = self._pinned.get(id(host))
                pinned[id(host)] = held if held is not None and held[0] is host else (host, pin(host))
                device.copy_to_host(host)
            else:  # float32 state into the float64 host arrays, through a page-locked copy
                staged = self._staging.get(id(device))
                if staged is None:
                    staged = self._staging[id(device)] = cuda.pinned_array(device.shape, device.dtype)
                host[...] = device.copy_to_host(staged)
        self._pinned = pinned

    def download_carried(self, carried: dict[str, np.ndarray]) -> None:
        """Write the carried arrays riding into ``carried``'s (FlockState.carried), in place."""
        numbers = self._carried if self.pv_d is None else self.pv_d.copy_to_host()[self.n_values :]
        at = 0
        for name, _ in self.riding:
            a = carried[name]
            a[...] = numbers[at : at + a.size].reshape(a.shape)
            at += a.size

    def _values(self, pv: np.ndarray) -> Any:
        """The device's pv: ``pv``'s values, then the carried numbers, which stay on the device
        from call to call (the values are copied in again: they may have changed)."""
        size = len(self._carried) if self.pv_d is None else self.pv_d.shape[0] - self.n_values
        if self.pv_d is None or self.n_values != len(pv):
            carried = self._carried if self.pv_d is None else self.pv_d.copy_to_host()[self.n_values :]
            self.pv_d, self.n_values = cuda.to_device(np.concatenate([pv, carried])), len(pv)
        elif len(pv):
            self.pv_d[: len(pv)].copy_to_device(pv)
        assert self.pv_d.shape[0] == len(pv) + size
        return self.pv_d

    # -- steps -----------------------------------------------------------------------------

    def _grid(self, params: Params, reach: float) -> int:
        """Fix what the grid needs before a call: a periodic box's cells (they tile the box, as the
        CPU engine's), or the cell capacity of a grid sized on the device. Returns the capacity."""
        cells = CELLS_PER_BOID * self.n + 64
        before, self.periodic_grid = self.periodic_grid, None
        if params.arena_shape == "periodic":  # cells that tile the box, as the CPU engine's
            box = np.array([*params.arena_center, *params.half_extents])
            *gf, kx, ky, kz = periodic_shape(box[:3], box[3:], reach, params.dimensions == 2, cells)
            self.periodic_grid = (kx, ky, kz, *map(float, gf))
            if self.periodic_grid != before:
                self._uncount()  # counted on another grid
                self.gf.copy_to_device(np.array(gf))
                self.gi.copy_to_device(np.array([kx, ky, kz, 1], dtype=np.int64))
            self.sized_for = None
            cells = max(cells, kx * ky * kz)
        if cells != self.cells:
            self.counts = cuda.to_device(np.zeros(cells + 1, dtype=np.int64))
            self.counted = False
            self.start = cuda.device_array(cells + 1, np.int64)
            m = (cells + K.SPAN) // K.SPAN  # the blocks of the scan of cells + 1 counts
            self.totals = (cuda.device_array(m, np.int64), cuda.device_array(m, np.int64))  # and their scan
            self.cells = cells
        return cells

    def _uncount(self) -> None:
        """The counts back to zero where the last step's kernel left them (:attr:`counted`)."""
        if self.counted:
            K.uncount[K.blocks(self.n), K.TPB](self.keys, self.counts)
            self.counted = False

    def _world(self, world: tuple[np.ndarray, np.ndarray]) -> tuple[Any, Any]:
        """The device's copy of ``world`` (data, offsets), made again whenever it is another array:
        the packed world of a (params, fields) pair is one array (assemble.world_data), and an
        edited world (an object moved) is a new one. The host arrays copied are held, so that
        an identity test cannot match a new array at a freed one's address."""
        if (
            self._world_host is None
            or world[0] is not self._world_host[0]
            or world[1] is not self._world_host[1]
        ):
            data, at = world  # an empty world still needs an array to pass: one entry no feature reads
            self._world_d = (cuda.to_device(data if data.size else np.zeros(1)), cuda.to_device(at))
            self._world_host = world
        return self._world_d

    def _scan(self, values: Any, out: Any, n: int) -> None:
        """out[:n] <- the exclusive scan of values[:n] (of the entries the grid uses: K.in_use), in
        three launches at most: each block's span, the spans' totals in one block, their offsets."""
        n_blocks = (n + K.SPAN - 1) // K.SPAN
        sums, offsets = self.totals
        K.scan_blocks[n_blocks, K.TPB](values, out, sums, n, self.gi, 0)
        if n_blocks > 1:
            K.scan_totals[1, K.TPB](sums, offsets, n_blocks, self.gi, 1)
            K.add_offsets[K.blocks(n), K.TPB](out, offsets, n, self.gi, 0)

    def advance(self, stepper: Stepper, params: Params, n_steps: int, time0: float, clock0: int, step0: int,
                seed: int, world: tuple[np.ndarray, np.ndarray]) -> StepStatus:  # fmt: skip
        """Up to ``n_steps`` steps of ``stepper``'s kernel, step s of the call at time ``time0 + (clock0
        + s) * dt``, in ``world`` (:func:`flock3d.core.assemble.world_data`: the objects' packed data
        and where each feature's lies); stops after one that fails (a later step of the call moves
        no boid)."""
        L, n = stepper.layout, self.n
        if n_steps == 0:
            return StepStatus(0)
        pv = stepper.values(params)
        reach = float(pv[offsets(L, stepper.value_names)["reach"]])
        cells = self._grid(params, reach)
        box = np.array([*params.arena_center, *params.half_extents], dtype=np.float64)
        if riders(L) != self.riding:  # GpuEngine.step uploads the state again when they differ
            raise ValueError(f"the device carries {self.riding}, the step {riders(L)}")
        fixed = (np.array([L.periodic, L.wraps, L.planar, L.turn == "mesh"]), box, 2.0 * box[3:])
        args = [self._values(pv), *(cuda.to_device(a) for a in fixed)]
        pv_d, flags, box_d = args[0], args[1], args[2]
        world_d = self._world(world)
        if self.status_written:
            self.status.copy_to_device(np.zeros((n, 3), dtype=np.int64))
        self.first_failed.copy_to_device(np.array([_NONE_FAILED], dtype=np.int64))
        kernel, threads = stepper.module.advance, (K.blocks(n), K.TPB)
        settle = getattr(stepper.module, "settle", None)  # a split step's second kernel
        if settle is not None and self.staged.shape[0] != staged_rows(L):
            self.staged = cuda.device_array((staged_rows(L), n))
        turn = turn_limit(math.radians(params.predator_turn_rate) * params.dt)
        shields = [(k, term.keeps_predators.fn) for k, term in predators_keepers(L)]
        max_cells, spread = float(cells), SHAPE.x_cells
        bounding = min(K.BOUND_THREADS // K.TPB, K.blocks(n))  # blocks that bound the positions
        partial = self.partial[: bounding * K.TPB]
        for s in range(n_steps):
            rows, out = self.sets[self.current], self.sets[1 - self.current]
            if self.periodic_grid is None and (
                (step0 + s) % REGRID_STEPS == 0 or self.sized_for != (reach, cells, spread)
            ):  # sized by the flock's step count, so that step(8) runs as step(3) then step(5)
                self._uncount()  # counted on the grid sized before
                K.bounds_partial[bounding, K.TPB](rows.pos, partial)
                K.bounds_grid[1, K.TPB](partial, reach, max_cells, spread, self.gf, self.gi)
                self.sized_for = (reach, cells, spread)
            now = time0 + (clock0 + s) * params.dt
            if len(self.hunters):  # from the start-of-step positions, before the boids move
                K.hunting[1, 1](*self.predators, self.hunters, rows.pos, rows.ids, box_d, flags,
                                self.first_failed, s, params.predator_speed, params.dt, *turn)  # fmt: skip
                for k, keep in shields:
                    K.keeping_out(keep)[1, 1](self.predators[0], self.hunters, *world_d, k, self.first_failed,
                                              s, now, now + params.dt, L.planar)  # fmt: skip
            if not self.counted:
                K.count_cells[threads](rows.pos, self.gf, self.gi, self.keys, self.counts)
            self._scan(self.counts, self.start, cells + 1)
            K.scatter[threads](self.keys, self.start, self.counts, self.order)
            K.sort_cells[K.blocks(cells), K.TPB](self.start, self.order, rows.ids, self.gi)
            K.gather[threads](self.order, rows.ids, rows.pos, rows.vel, rows.quat, rows.wp, out.ids, out.wp,
                              self.cols, self.heads, L.turn == "mesh")  # fmt: skip
            kernel[threads](self.cols, self.heads, out.ids, out.quat, out.pos, out.vel, out.wp, self.start,
                            self.gf, self.gi, *args, *world_d, self.hunters, self.status, self.first_failed,
                            s, now, seed, step0 + s, self.staged, self.failed, self.keys, self.counts,
                            self.order, rows.quat)  # fmt: skip
            if settle is not None:
                settle[threads](self.staged, self.failed, self.cols, out.ids, out.quat, out.pos, out.vel,
                                self.gf, self.gi, pv_d, flags, box_d, *world_d, self.status,
                                self.first_failed, s, now, self.keys, self.counts, self.order,
                                rows.quat)  # fmt: skip
            self.counted = True  # each boid of the new rows, in its cell of this grid
            self.current = 1 - self.current
        first = int(self.first_failed.copy_to_host()[0])  # the call's one read back
        if first == _NONE_FAILED:
            return StepStatus(n_steps)
        self.status_written = True
        status = self.status.copy_to_host()
        failed = status[status[:, 0] != OK]
        row = failed[np.argmin(failed[:, 1])]
        return StepStatus(first + 1, int(row[0]), int(row[1]), int(row[2]))
