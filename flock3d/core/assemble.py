"""Assembling a flock's fast step from the terms its parameters use.

The fast step is not one kernel with a flag for every option: for each combination of
choices (the model, the update and combine modes, the turn limit, the arena, the
separation falloff, which world features are present, the user's rules and forces)
:mod:`flock3d.core.step` writes the numba source of a step that contains exactly those
terms (:mod:`flock3d.core.terms`) around the shared runtime (:mod:`flock3d.core.kernel`);
this module packs the values and world data the step reads, compiles it and caches it on
disk (:mod:`flock3d.core.step.cache`), under a name made from a hash of that source. So:

- only what a scene uses is compiled, and a scene compiles once per machine;
- parameter values (weights, radii, the field of view, dt...) are not baked in: they
  travel in one float64 array, so re-tuning a live flock never recompiles; only a
  change of structure (a new shape, the first attractor) assembles another step;
- your rules and forces (:func:`flock3d.pair_rule`, :func:`flock3d.force`) are compiled
  into the same loop as the built-in terms.

A step, for the model's synchronous update, as generated::

    for each of n steps:
        wrap positions into a periodic box; grid <- cells at least `reach` wide
        predators hunt from the start-of-step state
        in parallel, for each chunk of cells: gather the start-of-step state in cell order
        in parallel, for each chunk of cells:
            buffer <- candidates around each cell
            for each boid i of the cell:
                pair sums over the buffer: one branch-free loop for the built-in terms,
                    one more for the user's pair rules
                acceleration <- finished pair terms + per-boid terms  (sum), or
                velocity <- each term in turn, in the chain's order   (chain)
                stage i's desired velocity in the chunk's batch
            the batch turns (heading or mesh limit) as SIMD vectors; move, settle;
                check; write each boid's row

``sequential`` and ``per_rule`` updates run single-threaded over the live arrays in
index order, as their sources do.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numba
import numpy as np

from flock3d.core import compiling, elsewhere
from flock3d.core.forked import Forked
from flock3d.core.kernel import (
    BOIDS_PER_CHUNK,
    OK,
    Pointer,
    Workspace,
    chunk_pointer,
    cone_threshold,
    driver_is_cached,
    driver_loaded,
    synchronous_driver,
)
from flock3d.core.kernel.calls import REGISTRY
from flock3d.core.kernel.motion import MOVE_ROWS, turn_called
from flock3d.core.models import MODELS_BY_NAME, model_of
from flock3d.core.objects import clearances_cached, load_clearances
from flock3d.core.params import TERMS, Params
from flock3d.core.params import stage_names as params_stage_names
from flock3d.core.quaternion import turn_limit
from flock3d.core.stages import used_stages
from flock3d.core.state import FlockState
from flock3d.core.step.cache import fingerprint, load_module
from flock3d.core.step.generate import (
    MATRICES,
    SPECIES_VALUES,
    WORLD_TERMS,
    generate,
    offsets,
    riders,
    value_slots,
)
from flock3d.core.step.values import NO_SHIELD, predators_shield
from flock3d.core.user_rules import Force, PairRule

__all__ = [
    "Layout",
    "Stepper",
    "StepStatus",
    "layout_of",
    "stepper_for",
]


# -- the structure of a step -----------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """The choices that shape a compiled step (everything else is a value in ``pv``)."""

    model: str
    update: str
    combine: str
    stages: tuple[str, ...]
    """Stage names in the order they act (chain), or the order they are summed."""
    turn: str
    shape: str
    planar: bool
    falloff: str
    alignment_form: str
    own_neighbourhoods: tuple[bool, bool, bool]
    """Separation, alignment, cohesion: whether each has its own radius/cone (else the view's)."""
    rules: tuple[tuple[str, bool], ...] = ()
    """User pair rules: (fingerprint, has its own cone)."""
    forces: tuple[str, ...] = ()
    """User forces: fingerprints."""
    neighbours: str = "metric"
    """``metric`` (every boid seen), ``topological`` (the k nearest seen) or ``adaptive`` (the k
    nearest within each boid's own radius, which the step adapts)."""
    species: int = 0
    """Number of species (0: one kind of boid); their values and matrix travel in pv."""
    position_update: str = "new"
    """The Vicsek model's move: with the ``new`` velocity or the ``old`` one."""
    flight: str = "kinematic"
    """The boids model's move: ``kinematic`` (turn and clamp the desired velocity) or ``aerodynamic``
    (forces, turning by banking: :func:`flock3d.core.terms.flight.fly`)."""

    @property
    def periodic(self) -> bool:
        return self.shape == "periodic"

    @property
    def indexed(self) -> bool:
        """Whether the candidate buffer carries the boids' indices (ties, species)."""
        return self.neighbours != "metric" or self.species > 0

    @property
    def wraps(self) -> bool:
        return self.shape in ("periodic", "wrap")

    def flags(self) -> np.ndarray:
        """The step's flags (kernel.PERIODIC, WRAPS, PLANAR, MESH, COUZIN), (5,) bool."""
        return np.array(
            [
                self.periodic,
                self.wraps,
                self.planar,
                self.turn == "mesh",
                MODELS_BY_NAME[self.model].sees_headings,
            ],
            dtype=np.bool_,
        )


def stage_names(params: Params, rules: Sequence[PairRule] = (), forces: Sequence[Force] = ()) -> list[str]:
    """The stages a flock with ``rules`` and ``forces`` runs, in order (:func:`params.stage_names`)."""
    return params_stage_names(params, [r.name for r in rules], [f.name for f in forces])


def layout_of(params: Params, rules: Sequence[PairRule] = (), forces: Sequence[Force] = ()) -> Layout:
    """The structure of the step ``params`` (and the user's rules and forces) need."""
    neighbours = "adaptive" if params.adaptive else "metric" if params.neighbours is None else "topological"
    if model_of(params).update_kind != "terms":
        return Layout(params.model, "synchronous", "sum", (), "heading", params.arena_shape,
                      params.dimensions == 2, "inverse", "difference", (False, False, False),
                      neighbours=neighbours, position_update=params.position_update)  # fmt: skip
    return Layout(
        model=params.model,
        update=params.update,
        combine=params.combine,
        stages=tuple(stage_names(params, rules, forces)),
        turn=params.turn_limit,
        shape=params.arena_shape,
        planar=params.dimensions == 2,
        falloff=params.separation_falloff,
        alignment_form=params.alignment_form,
        own_neighbourhoods=(
            params.separation_fov is not None,
            params.alignment_distance is not None or params.alignment_fov is not None,
            params.cohesion_distance is not None or params.cohesion_fov is not None,
        ),
        rules=tuple((fingerprint(r.fn), r.fov is not None) for r in rules),
        forces=tuple(fingerprint(f.fn) for f in forces),
        neighbours=neighbours,
        species=len(params.species),
        flight=params.flight,
    )


# -- the values a step reads (pv) --------------------------------------------------------------


def _reach(params: Params, rules: Sequence[PairRule]) -> float:
    """The farthest any pair term looks (of any species): the cell size of the step's grid."""
    if model_of(params).update_kind != "terms":
        return model_of(params).reach(params)
    if params.species:
        return max(_reach(params.of_species(k), rules) for k in range(len(params.species)))
    return max(
        [params.view_distance, *(params.view_distance if r.radius is None else r.radius for r in rules)]
    )


def _values(params: Params, rules: Sequence[PairRule], forces: Sequence[Force]) -> dict[str, float]:
    """Every number an assembled step may read, by name (the generated code picks its own): the
    model's, each present term's (:meth:`~flock3d.core.terms.Term.values`) and the user's rules'."""
    p = params
    omega = math.radians(p.max_turn_rate)
    out = {
        "dt": p.dt,
        "s_min": p.min_speed,
        "s_max": p.max_speed,
        "max_angle": min(omega * p.dt, math.inf),
        "reach": _reach(p, rules),
    }
    out["cos_max"], out["cos_half"], out["sin_half"] = turn_limit(omega * p.dt)
    out.update(k=float(p.neighbours or 0), adaptation=p.adaptation)
    model = model_of(p)
    if model.update_kind != "terms":  # the model's own values
        out.update(model.values(p))
        return out
    out.update(view2=p.view_distance * p.view_distance, cone=cone_threshold(p.fov))
    for term in TERMS:  # every term's, present or not: a species may read what its flock lacks
        out.update(term.values(p))
    for k, r in enumerate(rules):
        radius = p.view_distance if r.radius is None else r.radius
        out[f"rule{k}_r2"] = radius * radius
        out[f"rule{k}_cone"] = cone_threshold(p.fov if r.fov is None else r.fov)
        out[f"rule{k}_w"] = r.weight
        out[f"rule{k}_avg"] = 1.0 if r.average else 0.0
    for k, f in enumerate(forces):
        out[f"force{k}_w"] = f.weight
    return out


def _packed(layout: Layout, names: Sequence[str], params: Params, rules, forces) -> list[float]:
    """pv's numbers: each value of ``names`` in its slots (per species, arrays flattened)."""
    values = _values(params, rules, forces)
    kinds = [_values(params.of_species(k), rules, forces) for k in range(layout.species)]
    matrix = np.array(
        [[params.interacts(a, b) for b in range(layout.species)] for a in range(layout.species)]
    )
    out: list[float] = []
    for name in names:
        if name == "slack":  # in-place updates: how far a boid may move before the grid is rebuilt
            fastest = max([values["s_max"], *(kind["s_max"] for kind in kinds)])
            out.append(values["dt"] * fastest * (1.0 + 1e-9) + 1e-12)
        elif name == "ends":
            out += list(np.cumsum([sp.count for sp in params.species])[:-1].astype(float))
        elif name in MATRICES:
            out += list(matrix[:, :, MATRICES.index(name)].reshape(-1).astype(float))
        elif value_slots(layout, name) > 1 or (layout.species and name in SPECIES_VALUES):
            out += [kind[name] for kind in kinds]
        else:
            out.append(values[name])
    return out


# -- steppers -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepStatus:
    """How a call to :meth:`Stepper.advance` ended."""

    steps: int
    """Steps completed (the last of them possibly the failing one)."""
    code: int = OK
    """``kernel.OK``, or what went wrong: NOT_FINITE, RULE_RAISED, RULE_NOT_FINITE, RULE_SHAPE."""
    boid: int = -1
    """The failing boid with the lowest index."""
    term: int = -1
    """For a rule failure, the rule (user pair rules first, then user forces)."""

    @property
    def ok(self) -> bool:
        return self.code == OK


@dataclass
class Stepper:
    """The compiled step of one :class:`Layout`."""

    layout: Layout
    source: str
    value_names: list[str]
    module: Any
    rules: tuple[PairRule, ...] = ()
    forces: tuple[Force, ...] = ()
    _packed: dict = field(default_factory=dict)
    _chunk_pointer: Pointer | None = None
    _world_at: tuple[np.ndarray, np.ndarray] | None = None
    _called_at: np.ndarray | None = None

    def _chunk(self) -> Pointer:
        """The assembled chunk as the synchronous driver takes it (looked up once)."""
        if self._chunk_pointer is None:
            self._chunk_pointer = chunk_pointer(self.module.chunk)
        return self._chunk_pointer

    def values(self, params: Params) -> np.ndarray:
        """pv: the values the step reads, for ``params`` (and the rules' weights and radii)."""
        key = (params, tuple((r.radius, r.fov, r.average, r.weight) for r in self.rules),
               tuple(f.weight for f in self.forces))  # fmt: skip
        pv = self._packed.get(key)
        if pv is None:
            pv = np.array(
                _packed(self.layout, self.value_names, params, self.rules, self.forces), dtype=np.float64
            )
            if len(self._packed) > 64:
                self._packed.clear()
            self._packed[key] = pv
        return pv

    def world(self, params: Params, fields: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """``world`` and ``world_at`` as the step takes them: :func:`world_data`, and after
        ``world_at``'s offsets the addresses of the functions the step calls at their addresses
        (its module's ``CALLED``), looked up once a process, after any compile of them under way in
        the background ends."""
        world, world_at = world_data(params, fields)
        if not self._called():
            return world, world_at
        kept = self._world_at  # world_data keeps a world's arrays: so is their copy with the addresses
        if kept is None or kept[0] is not world_at:
            kept = self._world_at = (world_at, np.concatenate([world_at, self._addresses()]))
        return world, kept[1]

    def _called(self) -> tuple[str, ...]:
        """The names of the functions the step calls at their addresses: its module's ``CALLED``,
        which a module calling none (the in-place updates, a bench walk) does not declare."""
        return getattr(self.module, "CALLED", ())

    def _addresses(self) -> np.ndarray:
        """The addresses of :meth:`_called`, compiled or loaded once a process, after any compile
        of them under way in the background ends; looked up once a stepper, so that a warm-up
        child started later for another flock never holds this one's steps up."""
        if self._called_at is None:
            _await_warm_up()
            self._called_at = np.array([REGISTRY[name].address() for name in self._called()], dtype=np.int64)
        return self._called_at

    def prepare(self, state: FlockState) -> None:
        """Compile now what advancing ``state`` needs and is not compiled yet (the driver, the
        functions the step calls at their addresses), so that a call on another thread only runs
        compiled code."""
        if self.layout.update == "synchronous":
            _driver(self.layout.periodic, state.n_predators > 0)
        if self._called():
            self._addresses()

    def advance(
        self,
        state: FlockState,
        params: Params,
        n: int,
        seed: int = 0,
        workspace: Workspace | None = None,
        stop: np.ndarray | None = None,
        fields: Any = None,
    ) -> StepStatus:
        """Advance ``state`` by up to ``n`` steps in place; stops after a step that fails.

        ``workspace``: the synchronous driver's working arrays, which a flock keeps between calls
        (a fresh one when not given). ``stop``: a (1,) bool array that another thread may set to
        end the call before its next step (the state is then whole, at the last step done).
        ``fields``: what the objects read from files became (:attr:`flock3d.Flock.fields`)."""
        pv = self.values(params)
        box = np.array([*params.arena_center, *params.half_extents], dtype=np.float64)
        L = self.layout
        n_chunks = max(1, (len(state) + BOIDS_PER_CHUNK - 1) // BOIDS_PER_CHUNK)
        flags = L.flags()
        # Per-boid state the step carries from step to step rides after the values; boid i reads and
        # writes its own only (a perching timer, an inertial spin model's spin, an adaptive radius).
        carried = [getattr(state, name) for name, _ in riders(L)]
        if carried:
            pv = np.concatenate([pv, *(a.reshape(-1) for a in carried)])
        status = np.zeros((n_chunks if L.update == "synchronous" else 1, 3), dtype=np.int64)
        world, world_at = self.world(params, fields)
        stop = np.zeros(1, dtype=np.bool_) if stop is None else stop
        time0, clock0 = state.clock(params.dt)
        state_arrays = (state.positions, state.velocities, state.orientations, state.waypoints)
        predators = (state.predator_positions, state.predator_velocities, state.predator_orientations)
        if L.update == "synchronous":
            fixed = np.array([pv[offsets(L, self.value_names)["reach"]], params.dt, params.predator_speed,
                              *turn_limit(math.radians(params.predator_turn_rate) * params.dt)])  # fmt: skip
            driver = _driver(L.periodic, len(state.predator_positions) > 0)
            work = (workspace or Workspace()).arrays(len(state))
            shield = predators_shield(L, world_at) if len(state.predator_positions) else NO_SHIELD
            done = driver(self._chunk(), state_arrays, predators, int(n), time0, clock0,
                          int(state.step_count), int(seed), pv, flags, box, world, world_at, shield, status,
                          fixed, stop, work)  # fmt: skip
        else:
            done = self.module.advance(*state_arrays, *predators, int(n), time0, clock0, pv, flags, box,
                                       world, world_at, status, stop, int(seed))  # fmt: skip
        at = len(pv) - sum(a.size for a in carried)
        for a in carried:
            np.copyto(a, pv[at : at + a.size].reshape(a.shape))
            at += a.size
        state.advance_clock(done, params.dt)
        failed = status[status[:, 0] != OK]
        if len(failed) == 0:
            return StepStatus(done)
        row = failed[np.argmin(failed[:, 1])]
        return StepStatus(done, int(row[0]), int(row[1]), int(row[2]))


def world_data(params: Params, fields: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """The world features' data, packed as the step reads it: ``world`` (float64) holds each world
    term's rows (:meth:`~flock3d.core.terms.Term.world`) one after another, in the registry's
    order, and ``world_at`` (int64, one more than :data:`~flock3d.core.step.generate.WORLD_TERMS`)
    where each term's start and end (the same for a term the flock lacks). ``fields``: what the
    objects read from files became.

    Packed once for a pair (params, fields) and kept (a few pairs): a world of meshes holds their
    grids, megabytes a mesh, which a call of one step must not copy again.
    """
    key = (params, id(fields))
    with _world_lock:
        kept = _worlds.get(key)
    if kept is not None and kept[0] is fields:
        return kept[1], kept[2]
    rows = [
        term.world(params, fields).reshape(-1) if term.present(params) else np.zeros(0)
        for term in WORLD_TERMS
    ]
    at = np.zeros(len(rows) + 1, dtype=np.int64)
    at[1:] = np.cumsum([len(r) for r in rows])
    world = np.concatenate([np.zeros(0), *rows]).astype(np.float64)
    with _world_lock:
        if len(_worlds) >= 4:
            _worlds.pop(next(iter(_worlds)))
        _worlds[key] = (fields, world, at)
    return world, at


#: The last few worlds packed, by (params, id(fields)), with the fields they were packed from.
_worlds: dict[tuple, tuple[Any, np.ndarray, np.ndarray]] = {}
_world_lock = threading.Lock()


_steppers: dict[tuple, Stepper] = {}
_lock = threading.Lock()

# -- the first run on a machine ------------------------------------------------------------------

_warm_up: subprocess.Popen | Forked | None = None


#: What this process compiles itself where placing a world's boids compiles the objects' distances
#: here: the keep-out, the longest of a world's called functions (3-4 s on 2 cores), which calls them.
_WITH_THE_DISTANCES = ("keep_out",)


def warm_up_in_background(params: Params, placed: bool = False) -> None:
    """On a machine whose numba cache lacks what the fast step of ``params`` shares with every
    scene of its kind, compile it in a second process: the synchronous driver, and the functions
    the step calls at their addresses (the batch's turn and move, a world's keep-out and avoidance:
    :class:`~flock3d.core.kernel.calls.Called`).

    The first step then compiles the scene's own chunk here while the other core compiles the
    rest; the first use of each (the driver, :meth:`Stepper.world`) waits for the child and
    loads the result from the cache. Nothing happens once the cache holds them.

    The child compiles one function after another, so this process takes a share at once: the
    batch's turn (0.7 s on 2 cores) while the child compiles the driver (5-6 s) and then the move
    (0.6 s), which balances the default scene's first run (its chunk, 5-6 s, compiles here after the
    turn). Where placing a world's boids compiles the objects' distances here (``placed``: see
    :func:`placing_compiles`), this process also takes the keep-out, which calls them
    (:data:`_WITH_THE_DISTANCES`), and the child starts before the placement: the driver, the move,
    and then the avoidance, whose distances this process has cached by then; the step's own child
    (:func:`compile_step_beside_placement`) starts next, and only then this process's share, so
    that both children can be this process forked (:func:`flock3d.core.elsewhere.start`); the
    three processes end together. A window's process leaves all to the child, which then starts
    after the placement (its keep-out loads the distances the placement's child compiled).
    """
    global _warm_up
    share: list[Any] = []
    if _warm_up is None and not os.environ.get("FLOCK3D_NO_WARM_UP"):
        options = (params.arena_shape == "periodic", params.predator_count > 0)
        driver = params.update == "synchronous" and not driver_is_cached(*options)
        turn = turn_called(_built_in_layout(params).turn)
        called = [turn, MOVE_ROWS, *_terms_called(params)]
        here: tuple[str, ...] = ()
        if compiling.compiles_here():
            here = (_WITH_THE_DISTANCES if placed else ()) + ((turn.name,) if driver else ())
        missing = [c for c in called if not c.cached()]
        names = tuple(c.name for c in missing if c.name not in here)
        if driver or names:
            try:
                job = (options, driver, names)
                _warm_up = elsewhere.start(f"{__name__}:_compile_shared", job, niceness=0)
            except OSError:
                _warm_up = None
        share = [c for c in missing if c.name in here]
    if placed and compiling.compiles_here():  # placed: placing_compiles(params) said so
        compile_step_beside_placement(params)
    for c in share:
        c.address()


def _terms_called(params: Params) -> list:
    """What the terms of ``params``'s step call at their addresses (a world's keep-out, ...)."""
    stages = _built_in_layout(params).stages
    return [c for term in TERMS if term.name in stages for c in term.called]


def _built_in_layout(params: Params) -> Layout:
    """The layout of ``params``' built-in stages alone: what the warm-up compiles for every flock
    of them, whose ``rule_order`` may name rules of yours that the warm-up is not handed."""
    built_in = set(used_stages(params))
    return layout_of(params.replace(rule_order=tuple(n for n in params.rule_order if n in built_in)))


def compile_placement_elsewhere(params: Params) -> None:
    """Where this process leaves compiles to children (a window's), and placing the boids of
    ``params`` compiles the objects' distances (:func:`compile_step_beside_placement` said so):
    have one child compile the distances, then what the step calls that measures them (the
    keep-out, the avoidance), the distance chain typed once, and load them here. Elsewhere
    nothing happens: the placement compiles the distances itself, and
    :func:`warm_up_in_background` the rest.

    A child for the distances alone, then another for the keep-out, took a world's first open
    3-4 s longer than compiling the distances here had (each child imports flock3d and types
    the chain again).

    Raises:
        flock3d.core.elsewhere.CompileFailed: the child failed, or was ended (a window closing).
    """
    if compiling.compiles_here():
        return
    names = tuple(c.name for c in _terms_called(params))
    load = functools.partial(_compile_placement, names)  # here, within forbidden: loads only
    # At the window's own priority: nothing happens in the scene until its boids are placed.
    if not elsewhere.load_or_compile(load, f"{__name__}:_compile_placement", (names,), niceness=0):
        raise elsewhere.CompileFailed("the objects' distances were not compiled: their child was ended")


def _compile_placement(names: tuple[str, ...]) -> None:
    """What :func:`compile_placement_elsewhere`'s child compiles into numba's cache (and its
    process then loads): the distances, and the functions ``names``."""
    load_clearances()
    for name in names:
        REGISTRY[name].address()


def _compile_shared(options: tuple[bool, bool], driver: bool, names: tuple[str, ...]) -> None:
    """What :func:`warm_up_in_background`'s child compiles into numba's cache."""
    if driver:
        synchronous_driver(*options)
    for name in names:
        REGISTRY[name].address()


def _await_warm_up() -> None:
    """Wait for the compile :func:`warm_up_in_background` started, if any. A child that failed or
    ran past its time leaves its compiles to this process."""
    global _warm_up
    if _warm_up is not None:
        try:
            elsewhere.wait_for(_warm_up, f"{__name__}:_compile_shared", timeout=300, announce=False)
        except elsewhere.CompileFailed as failed:
            logging.getLogger("flock3d").debug("flock3d: %s", failed)
        _warm_up = None


#: Steps compiling in a child process (:func:`compile_step_beside_placement`), by layout: the
#: thread that waits for the child.
_steps_elsewhere: dict[Any, threading.Thread] = {}


def placing_compiles(params: Params) -> bool:
    """Whether placing the boids of ``params`` compiles the objects' distances (numba's cache
    lacks them): here, or in a window's process in a child (:func:`compile_placement_elsewhere`).
    Never with ``FLOCK3D_NO_WARM_UP`` set (what a compiling child has)."""
    return bool(params.objects) and not os.environ.get("FLOCK3D_NO_WARM_UP") and not clearances_cached()


def compile_step_beside_placement(params: Params) -> None:
    """Start compiling the fast step of ``params`` (its layout's chunk) in a child process, where
    the cache lacks it: called where placing its boids compiles the objects' distances
    (:func:`placing_compiles`, which each caller has asked already).

    Placing a world's boids outside its objects measures them with the compiled distances, which a
    fresh install compiles there first (3-4 s on 2 cores); the step's own compile (4-5 s) came
    after it. The chunk no longer types any object code (it calls the keep-out at an address), so
    it compiles beside the distances: :func:`stepper_for` waits for the child and loads what it
    compiled. A child that fails leaves the compile to this process, as though it had not run.
    The warm-up child then compiles all but the keep-out, which this process compiles with the
    distances (``placed`` of :func:`warm_up_in_background`).

    The child starts here, in the caller's thread; a thread then waits for it. Nothing happens
    once the step is cached or while it is already under way.
    """
    layout = layout_of(params)
    with _lock:
        if (layout, (), ()) in _steppers or layout in _steps_elsewhere:
            return
    try:
        with compiling.forbidden():
            stepper_for(params)  # loads it, where cached
        return
    except compiling.CompileNeeded:
        pass
    target = f"{__name__}:_compile_step"
    try:
        child = elsewhere.start(target, (params,), niceness=0)
    except OSError:
        return  # stepper_for compiles it here

    def wait() -> None:
        try:
            elsewhere.wait_for(child, target)
        except elsewhere.CompileFailed:
            pass  # stepper_for compiles it here

    thread = threading.Thread(target=wait, name="flock3d-step-elsewhere", daemon=True)
    with _lock:
        _steps_elsewhere[layout] = thread
    thread.start()


def _compile_step(params: Params) -> None:
    """What :func:`compile_step_beside_placement`'s child compiles into the caches: the step of
    ``params``."""
    stepper_for(params)


def _await_step_elsewhere(layout: Any) -> None:
    """Wait for the child compiling ``layout``'s step, if one is (:func:`compile_step_beside_placement`)."""
    with _lock:
        thread = _steps_elsewhere.get(layout)
    if thread is not None:
        thread.join()
        with _lock:
            _steps_elsewhere.pop(layout, None)


def _driver(periodic: bool, predators: bool):
    """The synchronous driver; the first time, after any compile under way in the background ends.
    Once loaded it never waits: a warm-up child started for another flock (a scene opening) must
    not hold up the steps of the one running, under its session's lock."""
    if not driver_loaded(periodic, predators):
        _await_warm_up()
    return synchronous_driver(periodic, predators)


def stepper_for(params: Params, rules: Sequence[PairRule] = (), forces: Sequence[Force] = ()) -> Stepper:
    """The stepper of the layout ``params``, ``rules`` and ``forces`` need (assembled once per process)."""
    rules, forces = tuple(rules), tuple(forces)
    layout = layout_of(params, rules, forces)
    _await_step_elsewhere(layout)
    key = (layout, tuple(id(r.fn) for r in rules), tuple(id(f.fn) for f in forces))
    with _lock:
        stepper = _steppers.get(key)
        if stepper is None:
            source, names = generate(layout)
            if layout.update != "synchronous" and "slack" not in names:
                names.append("slack")
            injected = {"read_only": read_only}
            injected.update({f"U_rule{k}": _compiled_user(r.fn) for k, r in enumerate(rules)})
            injected.update({f"U_force{k}": _compiled_user(f.fn) for k, f in enumerate(forces)})
            module = load_module(source, injected)
            stepper = Stepper(layout, source, names, module, rules, forces)
            _steppers[key] = stepper
    # The rules' weights and radii may differ between calls with the same functions.
    if stepper.rules is not rules or stepper.forces is not forces:
        stepper = replace(stepper, rules=rules, forces=forces, _packed={})
        _steppers[key] = stepper
    return stepper


def _compiled_user(fn: Callable) -> Any:
    if isinstance(fn, numba.core.dispatcher.Dispatcher):
        return fn
    return numba.njit(error_model="numpy")(fn)


@numba.extending.intrinsic
def read_only(typingctx: Any, array: Any) -> Any:
    """The same array typed read-only (no copy): what a user function is given to read.

    The step reuses its argument arrays from call to call, so a rule that wrote into them
    would change what later calls see (and differ from the reference engine, which passes
    read-only copies); typed read-only, such a rule does not compile.
    """
    if not isinstance(array, numba.types.Array):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return numba.core.imputils.impl_ret_borrowed(context, builder, signature.return_type, args[0])

    return array.copy(readonly=True)(array), codegen
