"""The flock's state: a plain record of arrays, and how a first state is made."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from flock3d.core import objects, quaternion
from flock3d.core.carried import Carried
from flock3d.core.models import MODELS, model_of
from flock3d.core.space import RADII, initial_radii, up_axis
from flock3d.core.stages import TERMS
from flock3d.core.terms import Term

if TYPE_CHECKING:
    from flock3d.core.params import Params

__all__ = [
    "FlockState",
    "CARRIED",
    "carried_of",
    "restart_carried",
    "random_state",
    "spawn_points",
    "state_from_arrays",
    "nearest_waypoints",
    "initial_radii",
    "check_state",
]


def _empty(width: int) -> np.ndarray:
    return np.zeros((0, width))


def carried_of(
    terms: Iterable[Term], models: Iterable[Any], perception: Iterable[Carried] = ()
) -> tuple[Carried, ...]:
    """The per-boid arrays the ``terms``, ``models`` and ``perception`` declare
    (:attr:`~flock3d.core.terms.Term.carries`), in that order.

    Raises:
        ValueError: two declarations of one name, or one named like an attribute of FlockState.
    """
    out = [c for owner in (*terms, *models) for c in owner.carries] + list(perception)
    names = [c.name for c in out]
    taken = {f.name for f in fields(FlockState)} | set(dir(FlockState))
    for c in out:
        if names.count(c.name) > 1 or c.name in taken:
            raise ValueError(
                f"the per-boid state {c.name!r} is declared twice, or names a FlockState attribute"
            )
    return tuple(out)


@dataclass
class FlockState:
    """Everything that changes as a flock moves.

    Besides the arrays below, ``carried`` holds one array per declaration in :data:`CARRIED`:
    the per-boid state a term, a model or the perception keeps (``state.radii``, ``state.spins``,
    ``state.perches``...), each also an attribute of the state, described by its declaration.

    Invariant (spec): ``velocities[i] == |velocities[i]| * forward(orientations[i])``,
    and the same for the predators.
    """

    positions: np.ndarray
    """(N, 3) float64, world units."""
    velocities: np.ndarray
    """(N, 3) float64, units/s."""
    orientations: np.ndarray
    """(N, 4) float64 unit quaternions (w, x, y, z)."""
    time: float = 0.0
    """Simulated seconds since the start."""
    step_count: int = 0
    """Steps taken since the start."""
    waypoints: np.ndarray | None = None
    """(N,) int64: the waypoint of the path each boid is heading for (zeros without a path)."""
    predator_positions: np.ndarray = field(default_factory=lambda: _empty(3))
    """(M, 3) float64."""
    predator_velocities: np.ndarray = field(default_factory=lambda: _empty(3))
    """(M, 3) float64."""
    predator_orientations: np.ndarray = field(default_factory=lambda: _empty(4))
    """(M, 4) float64 unit quaternions."""
    carried: dict[str, np.ndarray] = field(default_factory=dict)
    """Name -> (N,) or (N, width) float64: the per-boid state each declaration of :data:`CARRIED`
    names (zeros where not given)."""
    clock_origin: tuple[float, int, float] | None = field(default=None, repr=False, compare=False)
    """(time, step count, dt) that the clock counts whole steps from (see :meth:`clock`)."""

    def __post_init__(self) -> None:
        if self.waypoints is None:
            self.waypoints = np.zeros(len(self.positions), dtype=np.int64)
        declared = {c.name: c for c in CARRIED}
        unknown = sorted(set(self.carried) - set(declared))
        if unknown:
            raise ValueError(
                f"state.carried names {unknown[0]!r}, which no term, model or perception declares"
            )
        given, n = self.carried, len(self.positions)
        self.carried = {name: given[name] if name in given else c.zeros(n) for name, c in declared.items()}

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: a declared per-boid array (``state.radii``).
        carried = self.__dict__.get("carried")
        if carried is not None and name in carried:
            return carried[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        carried = self.__dict__.get("carried")
        if carried is not None and name in carried:
            carried[name] = value
        else:
            object.__setattr__(self, name, value)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self.__dict__.get("carried", ())})

    def __len__(self) -> int:
        return self.positions.shape[0]

    @property
    def n_predators(self) -> int:
        return self.predator_positions.shape[0]

    def clock(self, dt: float) -> tuple[float, int]:
        """``(t0, k)``: the time is exactly ``t0 + k * dt``, k whole steps after the origin t0.

        The engines time step s of a call as ``t0 + (k + s) * dt``, and the time after it
        likewise, not as a running sum, which drifts by an ulp now and then: so ``step(n)`` and
        n calls of ``step()`` reach the same times, and a time-dependent force gives the same
        trajectory. The origin moves to the current time when the time, the step count or dt
        were changed since it was set.
        """
        if self.clock_origin is not None:
            t0, k0, dt0 = self.clock_origin
            k = self.step_count - k0
            if dt0 == dt and k >= 0 and t0 + k * dt == self.time:
                return t0, k
        self.clock_origin = (self.time, self.step_count, dt)
        return self.time, 0

    def advance_clock(self, n: int, dt: float) -> None:
        """Count ``n`` more steps of ``dt``, the time following :meth:`clock`."""
        t0, k = self.clock(dt)
        self.step_count += n
        self.time = t0 + (k + n) * dt

    def assign(self, other: FlockState) -> None:
        """Take ``other``'s values into this state's arrays, in place (views stay valid).

        The boid and predator counts must match.
        """
        for name, *_ in _arrays():
            getattr(self, name)[...] = getattr(other, name)
        self.time, self.step_count, self.clock_origin = other.time, other.step_count, other.clock_origin

    def reading(self) -> contextlib.AbstractContextManager:
        """A block in which this state's arrays are read, never edited in place: an engine that keeps
        them elsewhere between steps (the GPU's) then sends nothing back before its next step."""
        return contextlib.nullcontext()

    def copy(self) -> FlockState:
        """A deep copy (the arrays are copied)."""
        return FlockState(
            self.positions.copy(),
            self.velocities.copy(),
            self.orientations.copy(),
            self.time,
            self.step_count,
            self.waypoints.copy(),
            self.predator_positions.copy(),
            self.predator_velocities.copy(),
            self.predator_orientations.copy(),
            {name: a.copy() for name, a in self.carried.items()},
            self.clock_origin,
        )


#: The arrays every state has, with their dtype and row width (None: one value a row), and
#: whether a predator has a row of it (else a boid).
_OWN = {
    "positions": (np.float64, 3, False),
    "velocities": (np.float64, 3, False),
    "orientations": (np.float64, 4, False),
    "waypoints": (np.int64, None, False),
    "predator_positions": (np.float64, 3, True),
    "predator_velocities": (np.float64, 3, True),
    "predator_orientations": (np.float64, 4, True),
}

CARRIED: tuple[Carried, ...] = carried_of(TERMS, MODELS, (RADII,))
"""Every per-boid array a term, a model or the perception declares it keeps, in the registries'
order: the arrays of :attr:`FlockState.carried`."""


def _arrays() -> list[tuple[str, Any, int | None, bool]]:
    """The arrays of a state the engines read: (name, dtype, row width or None, of the predators)."""
    own = [(name, dtype, width, predator) for name, (dtype, width, predator) in _OWN.items()]
    return own + [(c.name, np.float64, None if c.width == 1 else c.width, False) for c in CARRIED]


def restart_carried(state: FlockState, old: Params, params: Params) -> None:
    """Start again, in place, the per-boid arrays whose declaration restarts them when a flock is
    retuned from ``old`` to ``params`` (:attr:`~flock3d.core.carried.Carried.restart`)."""
    for c in CARRIED:
        if c.restart is not None and c.restart(old, params):
            state.carried[c.name][...] = c.start(params)


def check_state(state: FlockState, params: Params) -> None:
    """Raise ValueError naming the first array of ``state`` an engine cannot take for ``params``.

    The engines index their arrays without bounds checks, so this is the boundary that lets
    them trust the state: every array a C-contiguous one of its dtype, with ``params.count``
    rows (``params.predator_count`` for the predators), and each boid's waypoint an index into
    the path. Only shapes and the waypoints' range are checked (O(1), or O(N) integers with a
    path); non-finite values are the kernel's to find, as it checks every boid's new state.
    """
    for name, dtype, width, predator in _arrays():
        rows = params.predator_count if predator else params.count
        wanted = (rows,) if width is None else (rows, width)
        a = getattr(state, name)
        kind = f"a C-contiguous {np.dtype(dtype).name} array of shape {wanted}"
        if not isinstance(a, np.ndarray):
            raise ValueError(f"state.{name} must be {kind} (got {type(a).__name__})")
        if a.shape != wanted or a.dtype != dtype or not a.flags.c_contiguous or not a.flags.writeable:
            got = (
                f"{a.dtype.name} array of shape {a.shape}"
                + ("" if a.flags.c_contiguous else ", not C-contiguous")
                + ("" if a.flags.writeable else ", read-only")
            )
            raise ValueError(f"state.{name} must be {kind} for this flock (got a {got})")
    if params.path is not None and params.count:
        waypoints, last = state.waypoints, len(params.path.points) - 1
        low, high = int(waypoints.min()), int(waypoints.max())
        if low < 0 or high > last:
            bad = low if low < 0 else high
            raise ValueError(f"state.waypoints must be indices of the path's points, 0 to {last} (got {bad})")


def random_state(
    params: Params, seed: int | np.random.Generator | None = 0, fields: Mapping[int, Any] | None = None
) -> FlockState:
    """The spec's initial state for ``params.count`` boids (and the predators).

    With ``numpy.random.default_rng(seed)``: positions uniform in the ball of
    radius ``params.initial_radius`` around the arena centre, directions uniform
    on the sphere, speeds uniform in [min_speed, max_speed]; orientations are
    the look rotations of the directions. Draws are made in that order, so one
    seed always gives the same flock. A planar flock (``dimensions = 2``) uses
    the disc and the circle of directions in the plane z = c_z instead, with +Z
    as the boids' up. Positions that fall inside an obstacle or an object (or its
    margin), or outside an arena object, are drawn again (:func:`spawn_points`;
    ``fields``: the objects' grids and images, for those read from files).
    Predators are drawn after the boids, in the same way, at ``predator_speed``;
    each boid starts towards its nearest waypoint.
    """
    rng = np.random.default_rng(seed)
    n = params.count
    positions = spawn_points(params, rng, n, fields)
    directions = _unit_vectors(rng, n, params.dimensions)
    if model_of(params).constant_speed:
        speeds = np.full(n, params.speed)
    elif params.species:  # each species within its own limits
        kinds = [params.of_species(k) for k in params.species_of_boids]
        speeds = rng.uniform([p.min_speed for p in kinds], [p.max_speed for p in kinds]).reshape(n)
    else:
        speeds = rng.uniform(params.min_speed, params.max_speed, n)
    up = up_axis(params)
    state = FlockState(positions, directions * speeds[:, None], quaternion.look_rotation(directions, up))
    state.waypoints = nearest_waypoints(positions, params)
    for c in CARRIED:
        state.carried[c.name] = c.start(params)
    m = params.predator_count
    if m:
        state.predator_positions = spawn_points(params, rng, m, fields)
        hunting = _unit_vectors(rng, m, params.dimensions)
        state.predator_velocities = hunting * params.predator_speed
        state.predator_orientations = quaternion.look_rotation(hunting, up)
    return state


def spawn_points(
    params: Params, rng: np.random.Generator, n: int, fields: Mapping[int, Any] | None = None
) -> np.ndarray:
    """(n, 3) initial positions, uniform in the initial ball (disc), outside every obstacle and
    its margin and, with an arena object, inside it by the margin: those that are not are drawn
    again from the same stream. ``fields``: the objects' grids and images
    (:func:`flock3d.core.objects.pack_objects`).

    When the objects leave so little of the ball free that 1,000 draws of a boid all fall in
    them, the boids still to place start at free points of the fixed draw the check judges
    the room by (:func:`flock3d.core.objects.covered_start_problems`), chosen at random
    and shared only when there are fewer of them than boids: a world the check accepts
    always starts.

    Raises:
        ValueError: when none of those points is free either (the check refuses such objects;
            the obstacles, which it does not judge, may cover the rest).
    """
    positions = _uniform_positions(rng, n, params)
    if n == 0 or not (params.obstacles or params.objects):
        return positions
    blocked = _blocked_by(params, fields)
    # Params refuses obstacles that cover the ball; spheres rarely need more than 10 draws, and
    # if they together all but cover it the last few start in a margin. Objects never let a
    # boid start inside them.
    for _ in range(1000 if params.objects else 100):
        inside = blocked(positions)
        if not inside.any():
            return positions
        positions[inside] = _uniform_positions(rng, int(inside.sum()), params)
    inside = blocked(positions) if params.objects else np.zeros(n, dtype=bool)
    if inside.any():
        samples = objects.start_samples(params.arena_center, params.initial_radius, params.dimensions)
        free = samples[~blocked(samples)]
        if len(free) == 0:
            raise ValueError(
                f"the objects leave too little room to place {n:,} boids in the initial ball of radius "
                f"{params.initial_radius:g}: move them, or set another init_radius"
            )
        k = int(inside.sum())
        positions[inside] = free[rng.choice(len(free), size=k, replace=k > len(free))]
    return positions


def _blocked_by(params: Params, fields: Mapping[int, Any] | None) -> Callable[[np.ndarray], np.ndarray]:
    """A test of (n, 3) positions: which lie inside an obstacle or an object, with the margin."""
    margin = params.avoidance_margin
    centres = np.array([o.center for o in params.obstacles]).reshape(-1, 3)
    radii = np.array([o.radius for o in params.obstacles]) + margin
    packed = objects.pack_objects(params.objects, fields) if params.objects else None
    if packed is not None:
        objects.clearances_ready()  # a window's process compiles nothing: a child compiles them

    def blocked(positions: np.ndarray) -> np.ndarray:
        inside = np.any(np.linalg.norm(positions[:, None] - centres[None], axis=2) < radii[None], axis=1)
        if packed is not None:
            inside |= objects.clearances(*packed, positions, 0.0) < margin
        return inside

    return blocked


def _uniform_positions(rng: np.random.Generator, n: int, params: Params) -> np.ndarray:
    """(n, 3) points uniform in the initial ball (disc for a planar flock) around c; for the
    model that fills its box (the Vicsek model) without an ``init_radius``, uniform in that whole
    periodic box."""
    if model_of(params).fills_box and params.init_radius is None:
        half = np.asarray(params.half_extents)
        if params.dimensions == 2:
            half[2] = 0.0
        return np.asarray(params.arena_center) + rng.uniform(-1.0, 1.0, (n, 3)) * half
    r0 = params.initial_radius
    if params.dimensions == 2:
        offsets = _unit_vectors(rng, n, 2) * (r0 * np.sqrt(rng.random(n)))[:, None]
    else:
        offsets = _unit_vectors(rng, n, 3) * (r0 * np.cbrt(rng.random(n)))[:, None]
    return np.asarray(params.arena_center) + offsets


def _unit_vectors(rng: np.random.Generator, n: int, dimensions: int = 3) -> np.ndarray:
    """(n, 3) directions uniform on the unit sphere (the unit circle of the xy plane in 2D)."""
    v = rng.standard_normal((n, 3))
    if dimensions == 2:
        v[:, 2] = 0.0
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    # A zero draw has probability 0 but would give NaN; point it along +X instead.
    zero = norms[:, 0] == 0.0
    v[zero], norms[zero] = (1.0, 0.0, 0.0), 1.0
    return v / norms


def nearest_waypoints(positions: np.ndarray, params: Params) -> np.ndarray:
    """(N,) index of the path point nearest to each boid (zeros without a path)."""
    if params.path is None or len(positions) == 0:
        return np.zeros(len(positions), dtype=np.int64)
    points = np.asarray(params.path.points)
    d = np.linalg.norm(positions[:, None, :] - points[None, :, :], axis=2)
    return np.argmin(d, axis=1).astype(np.int64)


def state_from_arrays(
    positions: np.ndarray,
    velocities: np.ndarray,
    orientations: np.ndarray | None = None,
    up=(0.0, 1.0, 0.0),
) -> FlockState:
    """A state from given arrays (copied), checked for shape and finiteness.

    Without ``orientations`` each boid faces along its velocity (the look
    rotation towards ``up``; identity for a zero velocity). With them,
    velocities are re-projected onto the orientations' forward axes (keeping
    their speeds) so that the spec's invariant holds.
    """
    p = _checked(positions, 3, "positions")
    v = _checked(velocities, 3, "velocities")
    if v.shape != p.shape:
        raise ValueError(f"velocities has shape {v.shape} but positions has shape {p.shape}")
    if orientations is None:
        q = quaternion.look_rotation(v, up)
    else:
        q = _checked(orientations, 4, "orientations")
        if q.shape[0] != p.shape[0]:
            raise ValueError(f"orientations has {q.shape[0]} rows but positions has {p.shape[0]}")
        norms = np.linalg.norm(q, axis=1)
        if np.any(norms == 0.0):
            raise ValueError("orientations must be non-zero quaternions")
        q = q / norms[:, None]
        v = quaternion.forward(q) * np.linalg.norm(v, axis=1)[:, None]
    return FlockState(p, v, q)


def _checked(a: np.ndarray, width: int, name: str) -> np.ndarray:
    out = np.array(a, dtype=np.float64, copy=True)
    if out.ndim == 1 and out.size == 0:
        out = out.reshape(0, width)
    if out.ndim != 2 or out.shape[1] != width:
        raise ValueError(f"{name} must have shape (N, {width}), got {out.shape}")
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return out
