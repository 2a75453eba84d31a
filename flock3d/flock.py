"""``Flock``: the public face of a simulation (state + parameters + a stepper)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from flock3d.core import assemble, compiling
from flock3d.core.fields import checked_count, checked_number
from flock3d.core.kernel import Workspace
from flock3d.core.params import Params
from flock3d.core.space import settled_positions, up_axis
from flock3d.core.state import (
    FlockState,
    check_state,
    nearest_waypoints,
    random_state,
    restart_carried,
    state_from_arrays,
)
from flock3d.core.user_rules import Force, PairRule
from flock3d.errors import EngineError, SimulationError
from flock3d.flock_views import Boids, Engine, FlockViews
from flock3d.gpu import GpuEngine
from flock3d.rules import check_model_runs_rules, check_rules
from flock3d.runner import MAX_STEPS
from flock3d.step_errors import compile_error, failure_error
from flock3d.stepping import fast_steps, reference_steps

if TYPE_CHECKING:
    from flock3d.scene import Scene

__all__ = ["Flock", "Boids", "Engine", "failure_error", "compile_error"]


#: Most steps one call of :meth:`Flock.step` may ask for: what the compiled driver counts (int64).
#: A call of a trillion steps, ended by Ctrl-C or :meth:`Flock.interrupt`, is a way to run on.
MOST_STEPS_A_CALL = 2**63 - 1


class Flock(FlockViews):
    """A flock of boids in a spherical arena.

    Whatever is not given is drawn as the spec says, so ``positions`` alone
    gives random headings and speeds from ``seed``.

    ``positions``, ``velocities`` and ``orientations`` are the live arrays: the
    flock updates them in place at each step, and :class:`Boid` objects are views
    into them. Copy them to keep a snapshot. The fast engine keeps its working arrays
    (192 bytes a boid) from one :meth:`step` to the next, so a step call does not
    allocate them again.

    Args:
        params: model parameters (None: the defaults); ``params.count`` boids are made
            unless ``positions`` is given.
        seed: seed of ``numpy.random.default_rng`` for the spec's random
            initial state (positions in a ball, random headings and speeds).
        positions: optional (N, 3) starting positions [units]; N then overrides
            ``params.count``.
        velocities: optional (N, 3) starting velocities [units/s]; each boid faces along
            its velocity, with no roll.
        orientations: optional (N, 4) unit quaternions (w, x, y, z); velocities
            are then re-aimed along them, keeping their speeds.
        engine: ``"fast"`` (the parallel numba kernel), ``"reference"`` (the
            readable per-boid implementation; slow, for checking) or ``"gpu"`` (an NVIDIA
            GPU through numba-cuda, ``flock3d[gpu]``: :mod:`flock3d.gpu` says what it runs).
        rules: your pair rules (:func:`flock3d.pair_rule`), compiled into the step.
        forces: your per-boid forces (:func:`flock3d.force`), compiled into the step.
        fields: the grids and heights of ``params.objects`` read from files, by object
            index (:func:`flock3d.io.meshes.object_fields`; a loaded scene holds them).

    Raises:
        TypeError: ``params`` is not a :class:`Params`.
        ValueError: an unknown engine, arrays of mismatched shapes or of a count the species
            do not hold, or a ``rules.order`` that names a stage the flock does not run.
        flock3d.errors.EngineError: float32 precision on a CPU engine.
        flock3d.errors.GpuError: the GPU engine cannot run here, or cannot run this flock.
        RuleError: a rule or force refused as :meth:`set_rules` says.

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
        seed = None if seed is None else checked_count(seed, "seed")  # numpy's own words name no argument
        check_model_runs_rules(params, tuple(rules), tuple(forces))  # before anything compiles
        placing_compiles = _choose_engine(engine, params, own_rules=bool(rules or forces))
        if placing_compiles:  # a window's process has a child compile what placing needs
            assemble.compile_placement_elsewhere(params)
        params, state = _initial_state(params, seed, fields, positions, velocities, orientations)
        if placing_compiles and not compiling.compiles_here():
            # The distances are compiled now: the warm-up child's keep-out loads them.
            assemble.warm_up_in_background(params, placed=True)
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
    def from_scene(
        cls, scene: Scene, seed: int | None = None, engine: Engine | None = None, **kwargs
    ) -> Flock:
        """A flock made from a scene: its params, its seed, its engine and its objects' fields.

        Args:
            scene: the scene (:func:`flock3d.load_scene` reads one from a file or a shipped
                scene's name).
            seed: seed of the initial state; None: the scene's.
            engine: what steps the flock; None: the scene's ``sim.engine``.
            **kwargs: the other arguments of :class:`Flock` (``rules``, ``forces``, ...).

        Returns:
            The new :class:`Flock`.
        """
        if isinstance(scene, str | os.PathLike):  # the core reads no scene files (a layer above it)
            raise TypeError(f"scene must be a flock3d.Scene: flock3d.load_scene({str(scene)!r}) reads one")
        seed = scene.seed if seed is None else seed
        return cls(scene.params, seed, engine=engine or scene.engine, **{"fields": scene.fields, **kwargs})

    # -- stepping ---------------------------------------------------------------------

    def step(self, n: int = 1) -> None:
        """Advance the flock by ``n`` steps of ``params.dt`` seconds.

        A long call can be interrupted: Ctrl-C (KeyboardInterrupt) or :meth:`interrupt` ends it
        after the step under way, with the state whole at the last step done (see
        :meth:`interrupt`).

        Args:
            n: the number of steps (>= 0).

        Raises:
            SimulationError: a step produced a non-finite or absurdly large state, or one
                of your rules failed; the message names the step, the boid and the likely
                cause. Every other boid keeps that step's result; the failing boid keeps
                its state from before it.
            RuleError: one of your rules cannot be compiled.
            TypeError: ``n`` is no whole number.
            ValueError: ``n`` is negative or over :data:`MOST_STEPS_A_CALL`, or one of the
                state's arrays was replaced by one of the wrong shape or type.
        """
        # 1.5 or "3" refused, not rounded: run()'s loop counts on each call taking what it asked.
        n = checked_count(n, "n", most=MOST_STEPS_A_CALL)
        if self._abandoned:
            raise SimulationError(self._abandoned)
        self._stop[0] = False
        if self._gpu is not None:  # it checks the state it uploads (check_state would copy it back)
            status = self._gpu.step(self._params, n, self.noise_seed, self._rules, self._forces, self._fields)
            if not status.ok:
                raise failure_error(self, status.code, status.boid, status.term)
            return
        check_precision(self._params, self._engine)
        check_state(self._state, self._params)
        if self._engine == "fast":
            fast_steps(self, n)
        else:
            reference_steps(self, n)

    def interrupt(self) -> None:
        """Ask a :meth:`step` call under way to end after its current step.

        The call may come from another thread or a signal handler (it is safe there); the
        :meth:`step` call then returns with fewer steps done.

        A step that does not end within a grace period (a rule stuck in a loop) is abandoned:
        :meth:`step` raises :class:`SimulationError`, and the flock cannot step again.
        """
        self._stop[0] = True
        self._stop_asked = time.monotonic()

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

        Args:
            rules: the pair rules (:func:`flock3d.pair_rule`).
            forces: the per-boid forces (:func:`flock3d.force`).

        Raises:
            RuleError: more than :data:`flock3d.rules.MAX_RULES` together, two of one name, a
                model with an update of its own (which takes none), or a rule or force that,
                called once in plain Python on read-only sample arguments, raises, writes into
                its arguments or does not return 3 finite numbers; the message names it.
            ValueError: ``params.rule_order`` names a stage that does not exist.
        """
        rules, forces = tuple(rules), tuple(forces)
        check_rules(rules, forces)
        check_model_runs_rules(self._params, rules, forces)
        assemble.stage_names(self._params, rules, forces)  # rule_order must name stages that exist
        self._rules, self._forces = rules, forces

    # -- state ------------------------------------------------------------------------

    @property
    def params(self) -> Params:
        """The model parameters; assign new ones between steps to re-tune the live flock.

        Raises:
            TypeError: the value assigned is not a :class:`Params`.
            ValueError: the value assigned has another ``count`` (a new Flock changes it).
            RuleError: the flock runs rules or forces of yours and the new model has an update
                of its own, which takes none.
        """
        return self._params

    @params.setter
    def params(self, params: Params) -> None:
        if not isinstance(params, Params):
            raise TypeError(f"params must be a flock3d.Params, got {type(params).__name__}")
        check_model_runs_rules(params, self._rules, self._forces)
        _retune(self._state, self._params, params, self._seed)
        self._params = params

    @property
    def fields(self) -> Mapping[int, Any] | None:
        """The grids and heights of the objects read from files, by object index.

        Assign new ones, between steps, with params whose objects moved in the list (or were
        rescaled).
        """
        return self._fields

    @fields.setter
    def fields(self, fields: Mapping[int, Any] | None) -> None:
        self._fields = fields

    def export(
        self,
        path: str | os.PathLike,
        seconds: float | None = None,
        *,
        steps: int | None = None,
        every: int | None = None,
        scene: Scene | None = None,
        progress: bool | None = None,
    ) -> Path:
        """Fly the flock on and write its flight to ``path`` for another program.

        The formats (:mod:`flock3d.io.export`): ``.usd``, ``.usda`` or ``.usdc`` (Blender,
        Houdini) and ``.glb`` or ``.gltf`` (game engines, at most 5,000 boids), which need the
        export extra, and ``.html`` (a web page), which needs none. The flock moves on as
        :meth:`step` moves it; the frames go through a temporary recording beside ``path``,
        removed afterwards.

        Args:
            path: the file to write; its suffix picks the format.
            seconds: simulated time to fly [s], > 0 (None: 10 s, or ``steps``).
            steps: steps to fly instead (not with ``seconds``).
            every: steps between frames (None: one frame per 0.1 s of simulated time).
            scene: the scene the flock came from, for its look (boid shapes, colours, camera);
                None: the flock's parameters with the default look.
            progress: show progress bars on stderr (None: only on a terminal).

        Returns:
            ``path``.

        Raises:
            flock3d.io.ExportError: an unknown suffix, a missing extra, too many boids for the
                format, or a folder that cannot take the file.
            TypeError, ValueError: ``seconds``, ``steps`` or ``every`` is out of range or of the wrong
                kind, or both ``seconds`` and ``steps`` are given.
        """
        from flock3d.io.export import ExportError, export_flock
        from flock3d.runner import steps_for

        if steps is not None and seconds is not None:
            raise ValueError(f"give seconds or steps, not both (got seconds={seconds!r}, steps={steps!r})")
        if steps is None:
            seconds = checked_number(
                10.0 if seconds is None else seconds, "seconds", 0.0, low_open=True, allow_inf=False
            )
            try:
                steps = steps_for(seconds, self._params.dt)
            except ValueError as error:
                raise ExportError(f"seconds: {error}") from None
        steps = checked_count(steps, "steps", most=MAX_STEPS)
        every = None if every is None else checked_count(every, "every", least=1)
        export_flock(self, path, steps, scene=scene, every=every, progress=progress)
        return Path(path)


def check_precision(params: Params, engine: Engine) -> None:
    """Refuse float32 on a CPU engine: they compute and keep float64 only (no silent fallback)."""
    if params.precision != "float64" and engine != "gpu":
        raise EngineError(
            f"sim.precision = {params.precision!r} runs on the GPU engine (engine 'gpu'); "
            f"engine {engine!r} keeps float64"
        )


def _choose_engine(engine: Engine, params: Params, own_rules: bool = False) -> bool:
    """Refuse an unknown engine; for the fast one, start compiling what numba's cache lacks beside
    this process: the shared driver, the batch's turn and move and a world's keep-out in one child
    (:func:`~flock3d.core.assemble.warm_up_in_background`); a world's step in another, where
    placing its boids compiles the objects' distances here first (not with ``own_rules``, which
    a child cannot be handed).

    Returns:
        Whether placing the boids compiles the distances (here, or for a window's process in a
        child). Here, this process also compiles the keep-out, which calls them, and the warm-up
        child starts at once with the driver; a window's warm-up child starts after the placement,
        since its keep-out calls the same distances and should load them, not compile them too.
    """
    if engine not in ("fast", "reference", "gpu"):
        raise ValueError(f"engine must be 'fast', 'reference' or 'gpu' (got {engine!r})")
    check_precision(params, engine)
    if engine != "fast":
        return False
    placing = not own_rules and assemble.placing_compiles(params)
    if placing and not compiling.compiles_here():
        assemble.compile_step_beside_placement(params)  # the warm-up child follows the placement
    else:  # the warm-up child has the driver alone: it starts now, then the step's
        assemble.warm_up_in_background(params, placed=placing)
    return placing


def _initial_state(
    params: Params,
    seed: int | None,
    fields: Mapping[int, Any] | None,
    positions: np.ndarray | None,
    velocities: np.ndarray | None,
    orientations: np.ndarray | None,
) -> tuple[Params, FlockState]:
    """The params of a new flock (``count`` set by the arrays given) and its first state: what is
    not given drawn from ``seed`` as the spec says, the boids settled in the arena."""
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
    state.carried.update(drawn.carried)  # what the terms' per-boid state starts at
    return params, state


def _retune(state: FlockState, old: Params, params: Params, seed: int | None) -> None:
    """Fit the live ``state`` of a flock from params ``old`` to ``params`` (of the same count)."""
    if params.count != old.count:
        raise ValueError(
            f"params.count is {params.count} but the flock has {old.count} boids; "
            "make a new Flock to change the number of boids"
        )
    state.positions[...] = settled_positions(state.positions, params)  # e.g. a smaller periodic box
    state.predator_positions[...] = settled_positions(state.predator_positions, params)
    if params.path != old.path:
        state.waypoints = nearest_waypoints(state.positions, params)
    if params.predator_count != state.n_predators:
        _set_predators(state, params, seed)
    restart_carried(state, old, params)  # e.g. adaptive radii start at the view distance


def _set_predators(state: FlockState, params: Params, seed: int | None) -> None:
    """Keep the first predators and draw any new ones (reproducibly, from the seed and step)."""
    m = params.predator_count
    keep = min(m, state.n_predators)
    drawn = random_state(params.replace(count=0), np.random.default_rng([seed or 0, state.step_count]))
    for name in ("predator_positions", "predator_velocities", "predator_orientations"):
        setattr(state, name, np.concatenate([getattr(state, name)[:keep], getattr(drawn, name)[keep:m]]))
