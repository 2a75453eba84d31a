"""What the viewer runs, without any GUI: a scene, its flock, a fixed-step clock, live edits,
and the worker thread that steps the flock while the window draws.

Kept free of Qt and vispy so that its behaviour (parameter edits between steps,
reset and reseed, the real-time factor, the worker thread) is tested like the
rest of the library.

Threading. A step writes the flock's arrays in place, so nothing may read them
while a step runs. The worker steps under the session's lock and, after each
batch of steps, publishes a :class:`Snapshot`: copies of the arrays that no one
writes again. The window only ever draws snapshots, so a frame never waits for a
step and never sees a half-written state. Edits from the window (a slider, reset,
a new count) take the same lock, so they land between steps. The numba kernels
release the GIL while they run, so stepping and drawing overlap. The worker
steps on all cores but one, which is left to drawing: on two cores 10,000 boids
keep real time on one core; a flock too large for real time steps at most half
the time, slowing down instead of starving the window. The worker thread and the compiles
behind it are :mod:`flock3d.viewer.worker`'s.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from flock3d.core.fields import Problem
from flock3d.core.objects import Object, covered_start_problems, needs_field
from flock3d.core.params import Params
from flock3d.core.state import FlockState
from flock3d.errors import Flock3dError
from flock3d.flock import Flock
from flock3d.look.motion import FrameAcceleration
from flock3d.look.world import shape_key
from flock3d.scene import Scene
from flock3d.viewer.phases import PhaseTimes
from flock3d.viewer.worker import PRECOMPILE_AFTER, Worker, shipped_mark

__all__ = ["FixedStepClock", "Session", "Snapshot", "World", "shipped_mark"]


@dataclass
class FixedStepClock:
    """Turns elapsed real time into a whole number of fixed simulation steps.

    Simulated time advances by ``dt`` per step whatever the frame rate; real time
    left over carries into the next call. When stepping would take more than
    ``budget`` seconds of one call, the excess is dropped, so a machine that cannot
    keep up slows the simulation down (``real_time_factor`` < 1) instead of
    falling ever further behind.
    """

    budget: float = 0.03
    """Seconds of each call that stepping may use."""
    max_lag: float = 0.25
    """Real time carried over beyond one step is capped at this many seconds."""
    behind: bool = False
    """Whether the last call dropped steps that were due (the machine cannot keep up)."""
    _carry: float = 0.0
    _step_cost: float = 1e-4
    _real: float = 0.0
    _simulated: float = 0.0

    def steps_due(self, real_elapsed: float, dt: float, time_scale: float = 1.0) -> int:
        """Steps to run now for ``real_elapsed`` seconds of wall time at ``time_scale``."""
        # The cap keeps one whole step above max_lag: with dt = 1 s a cap of 0.25 s alone
        # would never let a step fall due.
        cap = self.max_lag * max(time_scale, 1.0) + dt
        self._carry = min(self._carry + max(real_elapsed, 0.0) * time_scale, cap)
        wanted = int(self._carry / dt)
        affordable = max(1, int(self.budget / self._step_cost))
        steps = min(wanted, affordable)
        self.behind = steps < wanted
        self._carry = 0.0 if steps < wanted else self._carry - steps * dt
        self._real += real_elapsed * time_scale
        self._simulated += steps * dt
        return steps

    def seconds_to_next_step(self, dt: float, time_scale: float = 1.0) -> float:
        """Wall-clock seconds until the next step falls due (0 if one is due now)."""
        return max(dt - self._carry, 0.0) / max(time_scale, 1e-9)

    def record_step_cost(self, seconds: float, steps: int) -> None:
        """Tell the clock how long ``steps`` steps took (a moving average)."""
        if steps > 0:
            self._step_cost = 0.8 * self._step_cost + 0.2 * max(seconds / steps, 1e-7)

    def real_time_factor(self) -> float:
        """Simulated time / (scaled) real time since the last call; 1 when keeping up."""
        factor = self._simulated / self._real if self._real > 0 else 1.0
        self._real = self._simulated = 0.0
        return factor

    def reset(self) -> None:
        self._carry = 0.0


@dataclass(frozen=True)
class Snapshot:
    """A copy of the flock at one instant, safe to read while the flock steps on.

    ``acceleration`` is the change of the velocities over the last steps taken, divided by
    the simulated time they took, (N, 3) units/s^2 (zeros until two batches of steps have run):
    the steering they applied (the last step's, at one step a frame), used to bank the boids
    into their turns and for the steering debug lines.
    ``generation`` changes whenever the flock is replaced (reset, reseed, a new
    count or scene), so that a renderer knows to forget the trails of the old one.
    """

    state: FlockState
    acceleration: np.ndarray
    params: Params
    generation: int

    @property
    def time(self) -> float:
        return self.state.time

    @property
    def step_count(self) -> int:
        return self.state.step_count


class World(NamedTuple):
    """What the viewer's edits change (:mod:`flock3d.viewer.editing`): the objects, the
    attractors and the predators, as ``(positions (M, 3), velocities (M, 3), orientations
    (M, 4))``, or None for a world whose predators an edit leaves as they fly. Compared as
    values, so that a drag can tell whether anything moved."""

    objects: tuple[Object, ...]
    attractors: tuple
    predators: tuple[np.ndarray, np.ndarray, np.ndarray] | None

    def __eq__(self, other) -> bool:
        if not isinstance(other, World) or (self.predators is None) != (other.predators is None):
            return False
        return (
            self.objects == other.objects
            and self.attractors == other.attractors
            and (
                self.predators is None
                or all(np.array_equal(a, b) for a, b in zip(self.predators, other.predators, strict=True))
            )
        )

    __hash__ = None  # type: ignore[assignment]


def edited(p: Params, field: str, value) -> Params:
    """``p`` with one field changed and the others kept valid: lowering the view distance below
    the separation distance lowers that too, and raising min_speed above max_speed raises
    max_speed (and the reverse); ``attractor_weight`` sets every attractor's weight and
    ``path_weight`` the path's. Raises ValueError for an invalid value."""
    if field == "attractor_weight":  # one weight for every attractor
        changes = {"attractors": tuple(a._replace(weight=value) for a in p.attractors)}
    elif field == "path_weight":
        changes = {"path": p.path._replace(weight=value) if p.path else None}
    else:
        changes = {field: value}
    if field == "view_distance" and value < p.separation_distance:
        changes["separation_distance"] = value
    elif field == "separation_distance" and value > p.view_distance:
        changes["view_distance"] = value
    elif field == "min_speed" and value > p.max_speed:
        changes["max_speed"] = value
    elif field == "max_speed" and value < p.min_speed:
        changes["min_speed"] = value
    return p.replace(**changes)


class MeshFields:
    """The distance fields of the objects read from files (meshes, heightfields), by their shape
    (:func:`~flock3d.look.world.shape_key`): an object moved, turned or renumbered by an edit keeps
    its field; a rescaled one is read again."""

    def __init__(self) -> None:
        self._field_of: dict[Object, Any] = {}

    def remember(self, objects, fields: Mapping[int, Any] | None) -> None:
        """Keep ``fields`` (by place in ``objects``) for their objects' shapes."""
        for k, field in (fields or {}).items():
            self._field_of[shape_key(objects[k])] = field

    def fields_for(self, params: Params) -> dict[int, Any] | None:
        """The fields of the objects of ``params`` read from files, by their places in
        ``params.objects``: those known already, else read; None where none needs one."""
        objects = params.objects
        if not any(needs_field(o) for o in objects):
            return None
        if any(needs_field(o) and shape_key(o) not in self._field_of for o in objects):
            from flock3d.io.meshes import object_fields  # the world extra, as loading the scene needed

            self.remember(objects, object_fields(params))
        return {k: self._field_of[shape_key(o)] for k, o in enumerate(objects) if needs_field(o)}


class Session:
    """A scene being watched: the flock, pausing, stepping, and live parameter edits.

    ``flock`` (default: a new one from the scene) is the flock to watch, e.g. the caller's own.
    ``engine`` steps every flock the session makes (None: each scene's own ``sim.engine``).

    Used directly, nothing runs by itself: :meth:`advance` steps on the caller's
    thread. :meth:`start` moves stepping to a worker thread (the viewer's way);
    :meth:`snapshot` then returns the latest published copy of the flock.
    """

    def __init__(
        self, scene: Scene, flock: Flock | None = None, rules=(), forces=(), engine: str | None = None
    ) -> None:
        self.scene = scene
        self.seed = scene.seed
        self.engine = engine
        self.flock = (
            Flock.from_scene(scene, rules=rules, forces=forces, engine=engine) if flock is None else flock
        )
        self.paused = False
        self.time_scale = 1.0
        self.clock = FixedStepClock()
        self.times = PhaseTimes()  # the simulation's and the copies' seconds (bench --viewer)
        self.steps_per_second = 0.0
        self.lock = threading.RLock()
        self._generation = 0
        self._acceleration = np.zeros_like(self.flock.velocities)
        self._change = FrameAcceleration()  # the velocities of the last read, and when
        self._snapshot: Snapshot | None = None
        self._first_step_done = threading.Event()
        self._worker = Worker(self)
        self.error: BaseException | None = None
        """An exception that stopped the worker (shown by the viewer), or None."""
        self._fields: Mapping[int, Any] | None = self.flock.fields
        self._meshes = MeshFields()
        self._meshes.remember(self.params.objects, self._fields)

    @property
    def params(self) -> Params:
        return self.flock.params

    @property
    def first_step_done(self) -> bool:
        """Whether the kernel has run once (the first step compiles it, which can take a while)."""
        return self._first_step_done.is_set()

    # -- edits between steps ------------------------------------------------------------

    def set_param(self, field: str, value) -> Params:
        """Change one parameter of the running flock (no reset), keeping the others valid.

        Lowering the view distance below the separation distance lowers that too,
        and raising min_speed above max_speed raises max_speed (and the reverse);
        ``count`` re-spawns the flock; ``attractor_weight`` sets every attractor's weight
        and ``path_weight`` the path's. Raises ValueError for an invalid value.
        """
        if field == "count":
            return self.respawn(int(value))
        with self.lock:
            self.flock.params = edited(self.params, field, value)
            self._publish()
            return self.flock.params

    def read_fields(self, objects) -> None:
        """Read the grids of ``objects`` that are read from files and that this session lacks (a
        rescaled mesh's grid is sampled again: 0.6 s for the cave's rock), so that
        :meth:`set_world` with them finds them; on any thread, without the lock.

        Raises:
            ValueError: the objects are refused (as :meth:`set_world` would say).
            Flock3dError: a grid cannot be sampled.
        """
        self._meshes.fields_for(self.params.replace(objects=tuple(objects)))

    def _replace_flock(self, flock: Flock) -> None:
        with self.lock:
            self.flock = flock
            self.clock.reset()
            self._generation += 1
            self._acceleration = np.zeros_like(flock.velocities)
            self._change.forget()
            self._publish()

    def new_flock(self, params: Params, seed: int) -> Flock:
        """A new flock with these parameters, keeping the user's rules and forces (--rules) and the
        fields of the objects read from files, stepped by the session's engine or the scene's; on
        any thread, without the lock (placing a world's boids may wait for a child compiling the
        objects' distances). :meth:`restart` makes it the session's."""
        return self._flock_of(params, seed, self._fields, self.scene)

    def _flock_of(self, params: Params, seed: int, fields: Mapping[int, Any] | None, scene: Scene) -> Flock:
        flock, engine = self.flock, self.engine or scene.engine
        return Flock(params, seed, rules=flock.rules, forces=flock.forces, fields=fields, engine=engine)

    def flock_for(self, scene: Scene) -> Flock:
        """The flock :meth:`load` would start for ``scene``, built without the lock, on any thread:
        placing a world's boids may wait seconds for a child compiling the objects' distances.

        Raises:
            Flock3dError: the flock cannot be built (an engine this machine lacks, a compile that failed).
        """
        return self._flock_of(scene.params, scene.seed, scene.fields, scene)

    def load(self, scene: Scene, flock: Flock | None = None) -> None:
        """Start watching another scene, with ``flock`` (from :meth:`flock_for`) or a new one."""
        flock = self.flock_for(scene) if flock is None else flock
        with self.lock:
            self.scene = scene
            self.seed = scene.seed
            self._fields = scene.fields
            self._meshes.remember(scene.params.objects, scene.fields)
            self._replace_flock(flock)

    # -- the world's edits ------------------------------------------------------------------

    def world(self, predators: bool = True) -> World:
        """The objects, attractors and (with ``predators``) the predators now (copies)."""
        with self.lock:
            if not predators:
                return World(self.params.objects, self.params.attractors, None)
            state = self.flock.state
            flying = (state.predator_positions, state.predator_velocities, state.predator_orientations)
            return World(self.params.objects, self.params.attractors, tuple(a.copy() for a in flying))

    def set_world(self, world: World) -> Params:
        """Make ``world`` the running flock's, between steps; the boids go on from where they are,
        and so do the predators where ``world.predators`` is None.

        Raises:
            ValueError: the objects or attractors are refused, or leave the boids no room to
                start (the message names them); then nothing changes.
        """
        with self.lock:
            count = self.params.predator_count if world.predators is None else len(world.predators[0])
            params = self.params.replace(
                objects=world.objects, attractors=world.attractors, predator_count=count
            )
            try:
                fields = self._meshes.fields_for(params)
            except Flock3dError as error:  # a rescaled mesh whose grid cannot be sampled
                raise ValueError(str(error)) from None
            if fields:  # Params judged the primitives alone; with meshes' grids it could not
                values = {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}
                covered = covered_start_problems(values, fields)
                if covered:
                    raise ValueError(str(Problem(*covered[0])))
            if world.predators is not None:
                state = self.flock.state
                positions, velocities, orientations = (np.array(a, dtype=np.float64) for a in world.predators)
                state.predator_positions, state.predator_velocities = positions, velocities
                state.predator_orientations = orientations
            self.flock.params = params
            self.flock.fields = self._fields = fields
            self._publish()
            return params

    def reset(self) -> None:
        """Start over from the same seed, keeping the current parameters."""
        self.restart(self.new_flock(self.params, self.seed), self.seed)

    def reseed(self) -> int:
        """Start over from the next seed; returns it."""
        seed = self.seed + 1
        self.restart(self.new_flock(self.params, seed), seed)
        return seed

    def restart(self, flock: Flock, seed: int) -> None:
        """Run ``flock`` (:meth:`new_flock`, made with the seed ``seed``) from now on."""
        with self.lock:
            self.seed = seed
            self._replace_flock(flock)

    def respawn(self, count: int) -> Params:
        """A new flock of ``count`` boids with the current parameters (same seed)."""
        self.restart(self.new_flock(self.params.replace(count=count), self.seed), self.seed)
        return self.params

    def current_scene(self) -> Scene:
        """The scene as it is now (current parameters, seed and fields), e.g. to save it."""
        return self.scene.replace(params=self.params, seed=self.seed, fields=self._fields)

    # -- time ---------------------------------------------------------------------------

    def _step(self, n: int) -> None:
        """``n`` steps, keeping the boids' mean acceleration over them (call with the lock held).

        The velocities are read once a call, after its steps, and the acceleration taken from the
        last call's: reading them before the last step too cost the GPU engine a download and an
        upload of the whole state each time (at 1,000,000 boids, 100 MB each way)."""
        if n <= 0:
            return
        flock = self.flock
        flock.step(n)
        state = flock.state
        with state.reading():  # read, not edited: nothing goes back to a GPU flock's device
            change = self._change.read(state.velocities, state.time)
            # None: a new flock, or a jump back in time
            self._acceleration = np.zeros_like(state.velocities) if change is None else change
        self._first_step_done.set()

    def advance(self, real_elapsed: float) -> int:
        """Run the steps due after ``real_elapsed`` seconds of wall time; returns how many."""
        with self.lock:
            if self.paused:
                self.clock.steps_due(0.0, self.params.dt)
                return 0
            steps = self.clock.steps_due(real_elapsed, self.params.dt, self.time_scale)
            if steps:
                start = time.perf_counter()
                self._step(steps)
                cost = time.perf_counter() - start
                self.clock.record_step_cost(cost, steps)
                self.times.add("simulation", cost)
                self._publish()
            return steps

    def single_step(self) -> None:
        """One step, whether paused or not."""
        with self.lock:
            self._step(1)
            self._publish()

    # -- what the window draws ------------------------------------------------------------

    def _publish(self) -> None:
        """Make the current state the latest snapshot (call with the lock held)."""
        if self._worker.thread is None:
            self._snapshot = None  # built on demand: no copy needed on the caller's own thread
            return
        self._snapshot = self._make_snapshot(copy=True)

    def _make_snapshot(self, copy: bool) -> Snapshot:
        state = self.flock.state
        if not copy:
            return Snapshot(state, self._acceleration, self.flock.params, self._generation)
        with self.times.timed("copy"):  # read, not edited: the GPU engine's state stays on its device
            return Snapshot(state.copy(), self._acceleration.copy(), self.flock.params, self._generation)

    def snapshot(self) -> Snapshot:
        """The flock as last published: safe to read on any thread while the worker steps.

        Without a worker thread, the live state itself (nothing else writes it).
        """
        snap = self._snapshot
        if snap is not None:
            return snap
        with self.lock:
            if self._worker.thread is None:
                return self._make_snapshot(copy=False)
            self._snapshot = self._make_snapshot(copy=True)
            return self._snapshot

    # -- the worker thread (:class:`~flock3d.viewer.worker.Worker`) ------------------------

    @property
    def running(self) -> bool:
        """Whether a worker thread is stepping the flock."""
        return self._worker.running

    def start(self) -> None:
        """Step the flock on a worker thread from now on (real time, at ``time_scale``)."""
        self._worker.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the worker thread (after the batch of steps it is running)."""
        if self._worker.stop(timeout):
            self._snapshot = None

    def precompile_shipped(self, after: float = PRECOMPILE_AFTER, names: tuple[str, ...] | None = None):
        """Compile the shipped scenes' steps in the background
        (:meth:`~flock3d.viewer.worker.Worker.precompile_shipped`)."""
        self._worker.precompile_shipped(after, names)

    def _warm_up(self) -> bool:
        """Compile the flock's step for its layout before stepping it, in a child process that
        steps a copy (:meth:`~flock3d.viewer.worker.Worker.warm_up`); the worker calls this."""
        return self._worker.warm_up(f"{__name__}:_step_once")


def _step_once(params: Params, seed, positions, velocities, orientations, fields) -> None:
    """A child's compile of a flock's step (:meth:`Session._warm_up`): one step of its twin."""
    Flock(params, seed, positions=positions, velocities=velocities, orientations=orientations,
          fields=fields).step(1)  # fmt: skip
