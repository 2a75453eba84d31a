"""``Flock``: the public face of a simulation (state + parameters + a stepper)."""

from __future__ import annotations

import math
import os
import queue
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import numba
import numpy as np

from flock3d.boid import Boid
from flock3d.core import assemble, reference
from flock3d.core.fields import spec_of
from flock3d.core.kernel import Workspace
from flock3d.core.models import model_of
from flock3d.core.params import TERMS_BY_NAME, Params
from flock3d.core.state import (
    FlockState,
    check_state,
    initial_radii,
    nearest_waypoints,
    random_state,
    settled_positions,
    state_from_arrays,
    up_axis,
)
from flock3d.core.user_rules import Force, PairRule, read_only_copy
from flock3d.errors import EngineError, Flock3dError, SimulationError
from flock3d.gpu import GpuEngine
from flock3d.rules import RuleError, check_rules, describe, writes_arguments

if TYPE_CHECKING:
    from flock3d.scene import Scene

__all__ = ["Flock", "Engine", "failure_error", "compile_error"]

Engine = Literal["fast", "reference", "gpu"]

#: A step call expected to take longer than this (seconds) runs where signals can reach it.
_RESPONSIVE = 0.1
#: Seconds an interrupted step may take to end (or ten steps' time, if longer) before it is given up.
_GRACE = 2.0


def _check_precision(params: Params, engine: str) -> None:
    """Refuse float32 on a CPU engine: they compute and keep float64 only (no silent fallback)."""
    if params.precision != "float64" and engine != "gpu":
        raise EngineError(
            f"sim.precision = {params.precision!r} runs on the GPU engine (engine 'gpu'); "
            f"engine {engine!r} keeps float64"
        )


class Flock:
    """A flock of boids in a spherical arena.

    Args:
        params: model parameters; ``params.count`` boids are made unless
            ``positions`` is given.
        seed: seed of ``numpy.random.default_rng`` for the spec's random
            initial state (positions in a ball, random headings and speeds).
        positions: optional (N, 3) starting positions; N then overrides
            ``params.count``.
        velocities: optional (N, 3) starting velocities; each boid faces along
            its velocity, with no roll.
        orientations: optional (N, 4) unit quaternions (w, x, y, z); velocities
            are then re-aimed along them, keeping their speeds.
        engine: ``"fast"`` (the parallel numba kernel), ``"reference"`` (the
            readable per-boid implementation; slow, for checking) or ``"gpu"`` (an NVIDIA
            GPU through numba-cuda, ``flock3d[gpu]``: :mod:`flock3d.gpu` says what it runs).
        fields: the grids and heights of ``params.objects`` read from files, by object
            index (:func:`flock3d.io.meshes.object_fields`; a loaded scene holds them).

    Whatever is not given is drawn as the spec says, so ``positions`` alone
    gives random headings and speeds from ``seed``.

    ``positions``, ``velocities`` and ``orientations`` are the live arrays: the
    flock updates them in place at each step, and :class:`Boid` objects are views
    into them. Copy them to keep a snapshot. The fast engine keeps its working arrays
    (192 bytes a boid) from one :meth:`step` to the next, so a step call does not
    allocate them again.

    Examples:
        >>> flock = Flock(Params(count=300), seed=1)
        >>> flock.step(60)
        >>> flock.params = flock.params.replace(fov=180)  # live tweak, no reset
        >>> flock.boids[0].neighbours()  # doctest: +SKIP
    """

    def __init__(
        self,
        params: Params | None = None,
        seed: int | None = 0,
        *,
        positions: np.ndarray | None = None,
        velocities: np.ndarray | None = None,
        orientations: np.ndarray | None = None,
        engine: Engine = "fast",
        rules: Sequence[PairRule] = (),
        forces: Sequence[Force] = (),
        fields: Mapping[int, Any] | None = None,
    ) -> None:
        params = Params() if params is None else params
        if not isinstance(params, Params):
            raise TypeError(f"params must be a flock3d.Params, got {type(params).__name__}")
        if engine not in ("fast", "reference", "gpu"):
            raise ValueError(f"engine must be 'fast', 'reference' or 'gpu' (got {engine!r})")
        _check_precision(params, engine)
        if engine == "fast" and params.update == "synchronous":
            # A first run on this machine: the other core compiles the shared driver while this
            # one builds the flock and compiles its own step.
            assemble.warm_up_in_background(params)
        given = next((a for a in (positions, velocities, orientations) if a is not None), None)
        if given is not None and params.species and len(np.asarray(given)) != params.count:
            raise ValueError(
                f"{len(np.asarray(given))} boids given, but the species hold {params.count} "
                "(boids are numbered species after species)"
            )
        if given is not None:
            params = params.replace(count=len(np.asarray(given)))
        drawn = random_state(params, seed, fields)  # fields: the grids of objects read from files
        state = state_from_arrays(
            drawn.positions if positions is None else positions,
            drawn.velocities if velocities is None else velocities,
            orientations,
            up=up_axis(params),
        )
        state.positions = settled_positions(state.positions, params)
        state.waypoints = nearest_waypoints(state.positions, params)
        state.predator_positions = settled_positions(drawn.predator_positions, params)
        state.predator_velocities = drawn.predator_velocities
        state.predator_orientations = drawn.predator_orientations
        state.radii = drawn.radii
        self._state = state
        self._params = params
        self._seed = seed
        self._fields = fields
        self._engine: Engine = engine
        self._workspace = Workspace()  # the fast step's working arrays, kept between calls
        self._stop = np.zeros(1, dtype=np.bool_)  # set by interrupt(); the engines read it between steps
        self._stop_asked = 0.0
        self._step_seconds: float | None = None  # what a step took in the last call
        self._abandoned = ""  # why the flock cannot step again, once a step was given up
        self._rules: tuple[PairRule, ...] = ()
        self._forces: tuple[Force, ...] = ()
        self.set_rules(rules, forces)
        self._gpu = None
        if engine == "gpu":  # the state lives on the device between steps (flock3d.gpu)
            self._gpu = GpuEngine(params, state, self._rules, self._forces)
            self._state = self._gpu.state

    @classmethod
    def from_scene(cls, scene: Scene, seed: int | None = None, **kwargs) -> Flock:
        """A flock made from a scene: its params and its seed (unless ``seed`` is given)."""
        return cls(scene.params, scene.seed if seed is None else seed, **{"fields": scene.fields, **kwargs})

    # -- stepping ---------------------------------------------------------------------

    def step(self, n: int = 1) -> None:
        """Advance the flock by ``n`` steps of ``params.dt`` seconds.

        A long call can be interrupted: Ctrl-C (KeyboardInterrupt) or :meth:`interrupt` ends it
        after the step under way, with the state whole at the last step done (see
        :meth:`interrupt`).

        Raises:
            SimulationError: a step produced a non-finite or absurdly large state, or one
                of your rules failed; the message names the step, the boid and the likely
                cause. Every other boid keeps that step's result; the failing boid keeps
                its state from before it.
            RuleError: one of your rules cannot be compiled.
            ValueError: one of the state's arrays was replaced by one of the wrong shape or type.
        """
        n = int(n)
        if n < 0:
            raise ValueError(f"n must be >= 0 (got {n})")
        if self._abandoned:
            raise SimulationError(self._abandoned)
        self._stop[0] = False
        if self._gpu is not None:  # it checks the state it uploads (check_state would copy it back)
            status = self._gpu.step(self._params, n, self.noise_seed, self._rules, self._forces)
            if not status.ok:
                raise failure_error(self, status.code, status.boid, status.term)
            return
        _check_precision(self._params, self._engine)
        check_state(self._state, self._params)
        if self._engine == "fast":
            try:
                stepper = assemble.stepper_for(self._params, self._rules, self._forces)
                status = self._advance(stepper, n)
            except Exception as error:  # not only NumbaError: numba raises ImportError without scipy
                raise compile_error(error, self._rules, self._forces) from None
            if not status.ok:
                raise failure_error(self, status.code, status.boid, status.term)
            return
        state, dt = self._state, self._params.dt
        t0, k0 = state.clock(dt)
        before = state.time, state.step_count, state.clock_origin
        done, failure = 0, None
        try:
            while done < n and not self._stop[0]:
                state.time = t0 + (k0 + done) * dt
                try:
                    model = model_of(self._params)
                    if model.update_kind != "terms":
                        new = model.step(state, self._params, self.noise_seed)
                    else:
                        new = reference.step(
                            state, self._params, self._rules, self._forces, self.noise_seed, self._fields
                        )
                except reference.StepFailure as failed:
                    failure, new = failed, failed.state
                # Keep the live arrays (Boid views and user references stay valid).
                state.assign(new)
                done += 1
                if failure is not None:
                    break
        finally:  # the clock as in the fast engine, so both report the same time
            state.time, state.step_count, state.clock_origin = before
            state.advance_clock(done, dt)
        if failure is not None:
            raise failure_error(self, failure.code, failure.boid, failure.term, failure.cause)

    def interrupt(self) -> None:
        """Ask a :meth:`step` call under way (in another thread, or a signal handler) to end after
        its current step; it then returns with fewer steps done. Safe to call from a signal
        handler.

        A step that does not end within a grace period (a rule stuck in a loop) is abandoned:
        :meth:`step` raises :class:`SimulationError`, and the flock cannot step again.
        """
        self._stop[0] = True
        self._stop_asked = time.monotonic()

    def _advance(self, stepper: assemble.Stepper, n: int) -> assemble.StepStatus:
        """Run ``n`` fast steps; from the main thread, on the stepping thread when the call may
        be long, so that signals (Ctrl-C, SIGTERM) are handled within about a tenth of a second.

        Python runs signal handlers only in the main thread, between its own instructions, so
        a compiled loop of many steps (or a rule that never returns) would hold them off until
        it ends. A short call of built-in terms alone runs here: handing it over costs about as
        much as a small flock's step, and it cannot hang.
        """
        advance = lambda k: stepper.advance(  # noqa: E731
            self._state, self._params, k, self.noise_seed, self._workspace, self._stop, self._fields
        )
        start = time.perf_counter()
        mine = self._rules or self._forces  # user code, which may not return
        long = self._step_seconds is None or n * self._step_seconds > _RESPONSIVE
        if threading.current_thread() is not threading.main_thread() or not (mine or (long and n > 1)):
            status = advance(n)
        else:
            stepper.prepare(self._state)  # compile here, where Ctrl-C reaches the compiler
            status = _stepping_thread.run(lambda: advance(n), self)
        if status.steps:
            self._step_seconds = (time.perf_counter() - start) / status.steps
        return status

    # -- your rules and forces -----------------------------------------------------------

    @property
    def rules(self) -> tuple[PairRule, ...]:
        """Your pair rules (:func:`flock3d.pair_rule`), compiled into the step."""
        return self._rules

    @property
    def forces(self) -> tuple[Force, ...]:
        """Your per-boid forces (:func:`flock3d.force`), compiled into the step."""
        return self._forces

    def set_rules(self, rules: Sequence[PairRule] = (), forces: Sequence[Force] = ()) -> None:
        """Replace your rules and forces (between steps; their weights may be re-tuned live).

        Each is called once in plain Python on sample arguments first: one that raises or
        does not return 3 finite numbers is refused with a :class:`RuleError` naming it.
        """
        rules, forces = tuple(rules), tuple(forces)
        check_rules(rules, forces)
        assemble.stage_names(self._params, rules, forces)  # rule_order must name stages that exist
        self._rules, self._forces = rules, forces

    # -- state ------------------------------------------------------------------------

    @property
    def params(self) -> Params:
        """The model parameters. Assign new ones between steps to re-tune the live flock."""
        return self._params

    @params.setter
    def params(self, params: Params) -> None:
        if not isinstance(params, Params):
            raise TypeError(f"params must be a flock3d.Params, got {type(params).__name__}")
        if params.count != len(self):
            raise ValueError(
                f"params.count is {params.count} but the flock has {len(self)} boids; "
                "make a new Flock to change the number of boids"
            )
        old, state = self._params, self._state
        state.positions[...] = settled_positions(state.positions, params)  # e.g. a smaller periodic box
        state.predator_positions[...] = settled_positions(state.predator_positions, params)
        if params.path != old.path:
            state.waypoints = nearest_waypoints(state.positions, params)
        if params.predator_count != state.n_predators:
            self._set_predators(params)
        if params.adaptive and not (old.adaptive and old.species == params.species):
            state.radii[...] = initial_radii(params)  # radii start at the view distance
        self._params = params

    def _set_predators(self, params: Params) -> None:
        """Keep the first predators and draw any new ones (reproducibly, from the seed and step)."""
        state, m = self._state, params.predator_count
        keep = min(m, state.n_predators)
        drawn = random_state(
            params.replace(count=0), np.random.default_rng([self._seed or 0, state.step_count])
        )
        for name in ("predator_positions", "predator_velocities", "predator_orientations"):
            setattr(state, name, np.concatenate([getattr(state, name)[:keep], getattr(drawn, name)[keep:m]]))

    @property
    def fields(self) -> Mapping[int, Any] | None:
        """The grids and heights of the objects read from files, by object index. Assign new
        ones with params whose objects moved in the list (or were rescaled), between steps."""
        return self._fields

    @fields.setter
    def fields(self, fields: Mapping[int, Any] | None) -> None:
        self._fields = fields

    @property
    def state(self) -> FlockState:
        """The live state record (arrays, time, step count)."""
        return self._state

    @property
    def positions(self) -> np.ndarray:
        """(N, 3) float64 positions, world units (live array)."""
        return self._state.positions

    @property
    def velocities(self) -> np.ndarray:
        """(N, 3) float64 velocities, units/s (live array)."""
        return self._state.velocities

    @property
    def orientations(self) -> np.ndarray:
        """(N, 4) float64 unit quaternions (w, x, y, z), forward = +Z (live array)."""
        return self._state.orientations

    @property
    def time(self) -> float:
        """Simulated seconds since the start."""
        return self._state.time

    @property
    def step_count(self) -> int:
        """Steps taken since the start."""
        return self._state.step_count

    @property
    def species(self) -> np.ndarray:
        """(N,) int32: each boid's species, an index into ``params.species`` (all 0 without species)."""
        return self._params.species_of_boids

    @property
    def predator_positions(self) -> np.ndarray:
        """(M, 3) float64 positions of the predators (live array)."""
        return self._state.predator_positions

    @property
    def seed(self) -> int | None:
        """The seed the initial state was drawn with."""
        return self._seed

    @property
    def noise_seed(self) -> int:
        """What keys a stochastic model's noise: the seed (0 when the flock was given no seed)."""
        return 0 if self._seed is None else int(self._seed)

    @property
    def engine(self) -> Engine:
        """Which implementation steps the flock: ``"fast"``, ``"reference"`` or ``"gpu"``."""
        return self._engine

    def __len__(self) -> int:
        return self._params.count

    def export(
        self,
        path: str | os.PathLike,
        seconds: float = 10.0,
        *,
        steps: int | None = None,
        every: int | None = None,
        scene: Scene | None = None,
        progress: bool | None = None,
    ) -> Path:
        """Fly the flock on and write its flight to ``path`` for another program: ``.usd``,
        ``.usda`` or ``.usdc`` (Blender, Houdini), ``.glb`` or ``.gltf`` (game engines, at most
        5,000 boids), ``.html`` (:mod:`flock3d.io.export`; needs the export extra).

        The flock moves on as :meth:`step` moves it; the frames go through a temporary
        recording beside ``path``, removed afterwards.

        Args:
            path: the file to write; its suffix picks the format.
            seconds: simulated seconds to fly [s] (ignored when ``steps`` is given).
            steps: steps to fly instead.
            every: steps between frames (default: one frame per 0.1 s of simulated time).
            scene: the scene the flock came from, for its look (boid shapes, colours, camera);
                None: the flock's parameters with the default look.
            progress: show progress bars on stderr (None: only on a terminal).

        Returns:
            ``path``.

        Raises:
            flock3d.io.ExportError: an unknown suffix, a missing extra, too many boids for the
                format, or a folder that cannot take the file.
        """
        from flock3d.io.export import ExportError, export_flock
        from flock3d.runner import steps_for

        if steps is None:
            try:
                steps = steps_for(seconds, self._params.dt)
            except ValueError as error:
                raise ExportError(f"seconds: {error}") from None
        export_flock(self, path, steps, scene=scene, every=every, progress=progress)
        return Path(path)

    def _repr_png_(self) -> bytes | None:
        """A picture of the flock as it is now, for notebooks (drawn offscreen with the viewer's
        look); None where offscreen OpenGL is not available."""
        from flock3d.viewer.offscreen import flock_png

        return flock_png(self)

    def __repr__(self) -> str:
        return (
            f"Flock({len(self)} boids, t={self.time:.3f} s, step {self.step_count}, engine={self._engine!r})"
        )

    # -- boids ------------------------------------------------------------------------

    @property
    def boids(self) -> Boids:
        """The boids as :class:`Boid` objects (views of the flock's arrays)."""
        return Boids(self)

    def __iter__(self) -> Iterator[Boid]:
        return iter(self.boids)


class _SteppingThread:
    """The thread that long step calls of the main thread run on, while it waits for signals.

    One thread serves every flock: a parallel loop started from a new thread makes that
    thread its own team of OpenMP threads, so a thread per call would pay for a team each
    time. It is a daemon: a step that never ends (a rule stuck in a loop) is given up and
    does not keep the process from exiting; the next call then gets a new thread.
    """

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue | None = None

    def run(self, call, flock: Flock):
        """``call()`` there; on an interrupt, ask ``flock`` to stop and wait for the step under way."""
        if self._calls is None:
            self._calls = queue.SimpleQueue()
            threading.Thread(
                target=self._serve, args=(self._calls,), name="flock3d-step", daemon=True
            ).start()
        done = threading.Event()
        outcome: list = []
        self._calls.put((call, outcome, done))
        try:
            while not done.wait(_RESPONSIVE):
                if flock._stop[0]:
                    self._wait_or_abandon(done, flock)
        except BaseException:  # Ctrl-C, or an exception a signal handler raised
            flock.interrupt()
            self._wait_or_abandon(done, flock)
            raise
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]

    @staticmethod
    def _serve(calls: queue.SimpleQueue) -> None:
        while True:
            call, outcome, done = calls.get()
            try:
                outcome.append(call())
            except BaseException as error:  # noqa: BLE001 - handed to the caller
                outcome.append(error)
            done.set()

    def _wait_or_abandon(self, done: threading.Event, flock: Flock) -> None:
        """Wait for a call asked to stop; past the grace period, give it and the thread up."""
        grace = max(_GRACE, 10.0 * (flock._step_seconds or 0.0))
        if not done.wait(max(0.0, flock._stop_asked + grace - time.monotonic())):
            self._calls = None  # its thread is stuck in the call
            flock._abandoned = (
                f"step {flock.step_count + 1}: the step did not end within {grace:.3g} s of being "
                "interrupted (is one of your rules stuck in a loop?); this flock's state is undefined "
                "and it cannot step again: make a new Flock"
            )
            raise SimulationError(flock._abandoned)


_stepping_thread = _SteppingThread()


class Boids(Sequence[Boid]):
    """A sequence view of a flock's boids: ``flock.boids[i]``, slicing, iteration."""

    def __init__(self, flock: Flock) -> None:
        self._flock = flock

    def __len__(self) -> int:
        return len(self._flock)

    @overload
    def __getitem__(self, index: int) -> Boid: ...
    @overload
    def __getitem__(self, index: slice) -> list[Boid]: ...
    def __getitem__(self, index):
        n = len(self)
        if isinstance(index, slice):
            return [Boid(self._flock, i) for i in range(*index.indices(n))]
        i = int(index)
        if not -n <= i < n:
            raise IndexError(f"boid index {index} out of range for a flock of {n}")
        return Boid(self._flock, i % n)


# -- when a step fails ----------------------------------------------------------------------


def failure_error(flock: Flock, code: int, boid: int, term: int, cause: BaseException | None = None):
    """The one-line :class:`SimulationError` (or :class:`RuleError`) for a failed step."""
    from flock3d.core import kernel

    where = f"step {flock.step_count}, boid {boid}"
    if code == kernel.NOT_FINITE:
        for name, array in (("position", flock.positions), ("velocity", flock.velocities),
                            ("orientation", flock.orientations)):  # fmt: skip
            if not np.all(np.abs(array[boid]) <= kernel.MAX_COORDINATE):  # the boid keeps its old state
                return SimulationError(
                    f"{where}: its {name} was already non-finite (or beyond {kernel.MAX_COORDINATE:g}) "
                    "before the step: it was set so from outside the flock"
                )
        return SimulationError(
            f"{where}: the state blew up (non-finite, or beyond {kernel.MAX_COORDINATE:g}); "
            f"{_likely_cause(flock, boid)}"
        )
    rules = flock.rules
    item = rules[term] if term < len(rules) else flock.forces[term - len(rules)]
    label = f"{'rule' if term < len(rules) else 'force'} {describe(item.fn)}"
    if code == kernel.RULE_RAISED:
        cause = cause or _reproduce(flock, item, boid)
        what = f"{type(cause).__name__}: {cause}" if cause else "an exception in compiled code"
        return RuleError(f"{where}: {label} raised {what}")
    if code == kernel.RULE_NOT_FINITE:
        return RuleError(f"{where}: {label} returned a non-finite value (nan or inf)")
    return RuleError(f"{where}: {label} did not return 3 numbers (an x, y, z acceleration)")


def _likely_cause(flock: Flock, i: int) -> str:
    """Which term of boid i is huge or non-finite, and the parameter to lower; else dt."""
    p = flock.params
    if model_of(p).update_kind == "terms":
        state, kinds = flock.state, p.species_of_boids
        boid = reference.ReferenceBoid(
            flock.positions[i].copy(), flock.velocities[i].copy(), Boid(flock, i).orientation,
            species=int(kinds[i]), radius=float(state.radii[i]),
        )  # fmt: skip
        world = reference.World(
            [
                reference.ReferenceBoid(
                    q.copy(), v.copy(), reference.Quaternion(o), species=int(k), radius=float(r)
                )
                for q, v, o, k, r in zip(
                    state.positions, state.velocities, state.orientations, kinds, state.radii, strict=True
                )
            ],  # fmt: skip
            [],
            p,
            (),
            (),
            [s for s in assemble.stage_names(p, (), ()) if TERMS_BY_NAME[s].weight],
            state.time,
        )
        sizes = {}
        for name in world.stages:
            with np.errstate(all="ignore"):
                try:
                    a = boid.stage(name, world, boid.velocity)
                except (ArithmeticError, ValueError):
                    a = np.array([np.inf])
            sizes[name] = float(np.linalg.norm(a)) if np.all(np.isfinite(a)) else math.inf
        name, size = max(sizes.items(), key=lambda item: item[1], default=(None, 0.0))
        if name is not None and size * p.dt > 10.0 * (p.max_speed + 1.0):
            field = TERMS_BY_NAME[name].weight
            key = spec_of(Params.__dataclass_fields__[field]).key
            return (
                f"the likely cause: its {name} acceleration is {size:.3g} units/s^2 ({key} = "
                f"{getattr(p, field):g}, sim.dt = {p.dt:g}): lower the weight or sim.dt"
            )
    speed = p.speed if model_of(p).constant_speed else p.max_speed
    return (
        f"the likely cause: sim.dt = {p.dt:g} is too large for these weights and speeds "
        f"(a boid may move {speed * p.dt:.3g} units in one step)"
    )


def _reproduce(flock: Flock, item, i: int) -> BaseException | None:
    """Call the failing rule on boid i's data in plain Python (as the step does, on read-only
    arrays) to get its exception: any but KeyboardInterrupt, which interrupts."""
    p_i, v_i = read_only_copy(flock.positions[i]), read_only_copy(flock.velocities[i])
    try:
        if isinstance(item, Force):
            item.fn(p_i, v_i, flock.time)
            return None
        for other in Boid(flock, i).neighbours():
            item.fn(p_i, v_i, read_only_copy(other.position), read_only_copy(other.velocity))
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        return error
    return None


def compile_error(error: Exception, rules: Sequence[PairRule], forces: Sequence[Force]) -> Exception:
    """The one-line :class:`RuleError` naming the rule numba cannot compile (else the error itself).

    numba's own errors run to dozens of lines, and not all of them are NumbaErrors (linear
    algebra without scipy is an ImportError): each rule is compiled alone, as the step calls
    it, to find the one at fault and say why in one line.
    """
    if isinstance(error, Flock3dError):  # flock3d's own, e.g. an interrupted step given up
        return error
    for item in (*rules, *forces):
        problem = _compile_problem(item)
        if problem:
            return RuleError(
                f"{'rule' if isinstance(item, PairRule) else 'force'} {describe(item.fn)} {problem}"
            )
    if (rules or forces) and isinstance(error, numba.core.errors.NumbaError):
        return RuleError(f"your rules could not be compiled into the step: {_reason(error)}")
    return error


def _compile_problem(item: PairRule | Force) -> str | None:
    """What keeps numba from compiling ``item`` as the step calls it, or None.

    The step passes read-only (3,) float64 arrays (and the time, a float, to a force) and
    leaves further arguments at their defaults; it reads 3 numbers from what comes back.
    """
    from numba import types

    fn = getattr(item.fn, "py_func", item.fn)
    given = (4 if isinstance(item, PairRule) else 2) * [types.float64[::1]]
    given += [] if isinstance(item, PairRule) else [types.float64]
    extra = fn.__code__.co_argcount - len(given)  # further arguments: each has a default
    defaults = [types.Omitted(d) for d in (fn.__defaults__ or ())][-extra:] if extra else []
    read_only = [t.copy(readonly=True) if isinstance(t, types.Array) else t for t in given]
    try:
        compiled = numba.njit(error_model="numpy")(fn)
        compiled.compile((*read_only, *defaults))
    except Exception as own:
        if "linear algebra" in str(own):
            return (
                "needs scipy for linear algebra (np.dot, np.linalg, @) in compiled code: install it "
                "(pip install scipy) or write the sums out, e.g. d[0] * d[0] + d[1] * d[1] + d[2] * d[2]"
            )
        try:
            numba.njit(error_model="numpy")(fn).compile((*given, *defaults))
        except Exception:
            return f"cannot be compiled by numba ({_reason(own)}); write it with numpy and math on its arrays"
        return writes_arguments(item)
    returned = compiled.nopython_signatures[-1].return_type
    number = (types.Integer, types.Float, types.Boolean)
    if isinstance(returned, types.Array):
        fits = returned.ndim == 1 and isinstance(returned.dtype, number)
    elif isinstance(returned, types.BaseTuple):
        fits = len(returned) == 3 and all(isinstance(t, number) for t in returned)
    elif isinstance(returned, types.List):
        fits = isinstance(returned.dtype, number)
    else:
        fits = False
    if fits:
        return None
    if isinstance(returned, (types.Optional, types.NoneType)):
        return "returns None on some path; it must return 3 numbers on every one"
    return f"returns {returned}; it must return 3 numbers: a tuple (x, y, z) or a (3,) array"


def _reason(error: Exception) -> str:
    """The line of a numba error that says what is wrong (not its pipeline boilerplate)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    useful = [
        line for line in lines if not line.startswith(("Failed in", "During:", "File ", "<source", "- "))
    ]
    text = (useful or lines or [type(error).__name__])[0]
    return text if len(text) <= 160 else text[:157] + "..."
