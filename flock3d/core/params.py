"""Model parameters (the model's own, then its variants: see ``docs/model.md``).

``Params`` is a frozen dataclass: a flock is re-tuned by building a new one
(``params.replace(fov=180)``) and assigning it to ``flock.params``. Every value
is checked once, here, by :func:`params_problems`; the scene loader reuses the
same checks so that a scene file and a Python caller see the same rules, and the
numerical core then trusts its parameters.

The first sixteen fields are the model's own (``docs/model.md``). The rest select
variants of the classic model, add world features, choose how a step is carried out
(to reproduce published algorithms literally) and parametrise the Couzin model; their
defaults reproduce the model exactly.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from flock3d.core.objects import Object

__all__ = [
    "Params",
    "Problem",
    "params_problems",
    "Attractor",
    "WaypointPath",
    "Obstacle",
    "Species",
    "SPECIES_FIELDS",
    "SPECIES_RULES",
    "ARENA_SHAPES",
    "FALLOFFS",
    "MODELS",
    "UPDATES",
    "COMBINES",
    "ALIGNMENT_FORMS",
    "EMPTY_MEANS",
    "TURN_LIMITS",
    "STAGES",
    "used_stages",
    "rule_order_problems",
    "MAX_MAGNITUDE",
    "COUZIN_DEFAULTS",
    "VICSEK_DEFAULTS",
    "MODEL_DEFAULTS",
    "SPEC_FIELDS",
    "is_real_number",
    "short_repr",
]

ARENA_SHAPES = ("sphere", "box", "periodic", "wrap", "none")
"""``sphere``: soft radial confinement (the model's); ``box``: a cube of side 2R (or
``arena_size``) with a push per axis inside its margin; ``periodic``: that box with
wrap-around, distances by the minimum image; ``wrap``: positions wrap around the box
but boids see only plain distances, across no edge (what many screen tutorials do);
``none``: open space."""
UPDATES = ("synchronous", "sequential", "per_rule")
"""How boids are updated within a step: ``synchronous`` (all from the state at the start
of the step: the model's), ``sequential`` (one boid after another in index order, in
place, each seeing the new state of the boids before it), ``per_rule`` (each rule is
applied to every boid in index order, in place, before the next rule; then all move)."""
COMBINES = ("sum", "chain")
"""How the rules make a new velocity: ``sum`` (u = v + dt * sum of accelerations: the
model's) or ``chain`` (each rule, in ``rule_order``, changes the velocity the previous one
left: v <- v + dt * a_k(v), and the speed limit is a stage of the chain)."""
ALIGNMENT_FORMS = ("difference", "mean")
"""``difference``: k_a (mean v_j - v_i) (the model's); ``mean``: k_a mean v_j (adds the
neighbours' mean velocity itself)."""
EMPTY_MEANS = ("skip", "zero")
"""What alignment and cohesion do for a boid that sees no one: ``skip`` (nothing: the
model's) or ``zero`` (take the neighbours' mean velocity and mean position as zero
vectors, the coordinate origin, as code that averages into a zeroed sum does)."""
TURN_LIMITS = ("heading", "mesh")
"""``heading``: the turn limit steers the motion (the model's; v = |v| forward(q)); ``mesh``:
the velocity turns freely and only the drawn orientation follows it, turning towards the
look rotation of the velocity by at most the limit (a Unity ``RotateTowards`` on the
transform); boids then see along their velocity."""
STAGES = (
    "separation", "alignment", "cohesion", "confinement", "containment", "attractors",
    "path", "obstacles", "flee", "wind", "speed",
)  # fmt: skip
"""The built-in stages of a chained update, in their default order (user rules and forces
follow the built-in rules and forces, before ``speed``)."""
FALLOFFS = ("inverse", "linear", "linear_gap", "quadratic")
MODELS = ("boids", "couzin", "vicsek")
"""``boids``: the spec's model and its variants; ``couzin``: the 2002 zone model; ``vicsek``: the
1995 self-propelled particles (constant speed, alignment with angular noise, periodic box)."""
"""How separation grows as a neighbour closes in (d = distance, u = unit offset away):
``inverse`` u/d (spec), ``linear`` u*d (the offset itself), ``linear_gap`` u*(r_s - d),
``quadratic`` u*(r_s - d)^2."""


class Attractor(NamedTuple):
    """A point that boids seek: steering ``weight * (max_speed * unit(target - p) - v)``."""

    position: tuple[float, float, float]
    weight: float = 1.0
    """1/s: how fast the boid's velocity turns to the seek velocity."""
    radius: float = math.inf
    """Only boids closer than this feel it."""


class WaypointPath(NamedTuple):
    """A closed list of points that every boid seeks in turn."""

    points: tuple[tuple[float, float, float], ...]
    weight: float = 1.0
    """1/s, as for an attractor."""
    reach: float = 2.0
    """A boid this close to its waypoint moves on to the next one."""


class Obstacle(NamedTuple):
    """A sphere that boids steer around (a circle in a planar flock)."""

    center: tuple[float, float, float]
    radius: float


SPECIES_FIELDS = (
    "separation_distance", "separation", "alignment", "cohesion", "view_distance", "fov",
    "min_speed", "max_speed", "max_turn_rate",
)  # fmt: skip
"""The parameters a species may set for itself (the flock's values otherwise)."""
SPECIES_RULES = ("sees", "separates", "aligns", "coheres")
"""The interaction matrix: for each species, the species it sees, and among them those it
separates from, aligns with and coheres with."""


class Species(NamedTuple):
    """One species of a mixed flock: its boids, its own parameters and whom it interacts with.

    The boids of a flock are numbered species after species, in the order of
    ``Params.species``. A parameter left None takes the flock's value. ``sees`` names the
    species whose boids this one perceives at all (None: every species, itself included);
    ``separates``, ``aligns`` and ``coheres`` name, among those, the ones each rule acts on
    (None: all it sees).
    """

    name: str
    count: int
    separation_distance: float | None = None
    separation: float | None = None
    alignment: float | None = None
    cohesion: float | None = None
    view_distance: float | None = None
    fov: float | None = None
    min_speed: float | None = None
    max_speed: float | None = None
    max_turn_rate: float | None = None
    sees: tuple[str, ...] | None = None
    separates: tuple[str, ...] | None = None
    aligns: tuple[str, ...] | None = None
    coheres: tuple[str, ...] | None = None


_ZERO3 = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Params:
    """Parameters of the flocking model.

    Lengths are in world units, times in seconds, angles in degrees.

    The defaults were tuned so that a few hundred boids in an arena of radius 30
    form polarized flocks that keep their spacing: from a random start (P ~ 0.05),
    500 boids reach polarization 0.9 within about 30 s and merge into one flock,
    while the mean number of boids within view distance levels off near 50 and
    the mean nearest-neighbour distance stays near the separation distance (2).
    Weaker separation (10) let the flock contract without bound (over 140
    neighbours within view after 2 minutes).
    """

    arena_radius: float = 30.0
    """R: radius of the arena sphere (half the side of a box arena), > 0."""
    arena_center: tuple[float, float, float] = _ZERO3
    """c: centre of the arena."""
    confinement_start: float = 0.8
    """f_b: fraction of R beyond which confinement pushes inwards, in (0, 1]."""
    confinement: float = 12.0
    """k_b: confinement acceleration, units/s^2, >= 0."""
    view_distance: float = 5.0
    """r_v: how far a boid sees, > 0 (``inf`` for global perception)."""
    fov: float = 270.0
    """alpha: full field-of-view cone angle in degrees, in (0, 360]."""
    separation_distance: float = 2.0
    """r_s: neighbours closer than this repel, 0 < r_s <= r_v."""
    separation: float = 30.0
    """k_s: separation weight, >= 0 (units^2/s^2: S = k_s / d at distance d)."""
    alignment: float = 5.0
    """k_a: velocity-matching weight, 1/s, >= 0."""
    cohesion: float = 1.0
    """k_c: centering weight, 1/s^2, >= 0."""
    min_speed: float = 3.0
    """s_min: lowest speed, units/s, >= 0."""
    max_speed: float = 6.0
    """s_max: highest speed, units/s, >= s_min and > 0."""
    max_turn_rate: float = 180.0
    """omega: largest heading change, degrees/s, > 0 (``inf``: unlimited)."""
    dt: float = 1.0 / 60.0
    """Fixed time step, seconds, > 0."""
    count: int = 500
    """N: number of boids, >= 0."""
    init_radius: float | None = None
    """r_0: radius of the initial ball around c; ``None`` means 0.5 R."""

    # -- variants of the classic model (the defaults are the spec) ----------------------
    arena_shape: str = "sphere"
    """One of :data:`ARENA_SHAPES`. Box and periodic arenas are cubes of side 2R around c;
    a box pushes a boid back by ``confinement`` along each axis where it is beyond
    ``confinement_start * R`` from c; a periodic one wraps positions and measures every
    distance by the minimum image (it needs view_distance < R)."""
    dimensions: int = 3
    """3, or 2 for a planar flock living in the plane z = c_z with headings in that plane."""
    separation_falloff: str = "inverse"
    """One of :data:`FALLOFFS`."""
    separation_average: bool = True
    """Average the separation over the close neighbours (spec) rather than sum it."""
    alignment_distance: float | None = None
    """Radius of the alignment rule, in (0, view_distance]; None: view_distance."""
    cohesion_distance: float | None = None
    """Radius of the cohesion rule, in (0, view_distance]; None: view_distance."""
    separation_fov: float | None = None
    """Cone of the separation rule, degrees; None: fov."""
    alignment_fov: float | None = None
    """Cone of the alignment rule, degrees; None: fov."""
    cohesion_fov: float | None = None
    """Cone of the cohesion rule, degrees; None: fov."""

    # -- world features (the defaults: none) --------------------------------------------
    attractors: tuple[Attractor, ...] = ()
    """Points that boids seek."""
    path: WaypointPath | None = None
    """A closed path that boids follow, waypoint after waypoint."""
    obstacles: tuple[Obstacle, ...] = ()
    """Spheres that boids steer around."""
    avoidance: float = 60.0
    """Obstacle avoidance acceleration, units/s^2, >= 0."""
    avoidance_lookahead: float = 1.0
    """How far ahead a boid checks for obstacles, in seconds at max_speed, > 0."""
    avoidance_margin: float = 1.0
    """Clearance a boid keeps from an obstacle's surface, units, >= 0."""
    predator_count: int = 0
    """Predators that chase the nearest boid, >= 0."""
    predator_speed: float = 7.0
    """Constant speed of the predators, > 0."""
    predator_turn_rate: float = 120.0
    """Largest heading change of a predator, degrees/s, > 0 (inf allowed)."""
    flee_distance: float = 10.0
    """A boid that sees a predator closer than this flees, > 0."""
    flee: float = 40.0
    """Flee acceleration away from each seen predator, units/s^2, >= 0."""
    wind: tuple[float, float, float] = _ZERO3
    """Uniform external acceleration, units/s^2."""
    wind_gradient: tuple[tuple[float, float, float], ...] = (_ZERO3, _ZERO3, _ZERO3)
    """3 x 3 matrix G: the wind at p is ``wind + G @ (p - c)`` (shear, vortex...), 1/s^2.
    In a periodic arena p is the boid's wrapped position, so a gradient jumps at the faces."""

    # -- the Couzin et al. (2002) zone model ---------------------------------------------
    model: str = "boids"
    """``boids`` (the spec and its variants) or ``couzin`` (zones of repulsion,
    orientation and attraction; constant speed; noise; open space). The Couzin model
    uses fov, max_turn_rate, dt, count, init_radius, dimensions and the fields below;
    the boids model ignores those below."""
    speed: float = 3.0
    """s: constant speed of the Couzin model, units/s, > 0."""
    zone_repulsion: float = 1.0
    """r_r: radius of the zone of repulsion, > 0."""
    zone_orientation_width: float = 2.0
    """Delta r_o: width of the zone of orientation (r_o = r_r + Delta r_o), >= 0."""
    zone_attraction_width: float = 14.0
    """Delta r_a: width of the zone of attraction (r_a = r_o + Delta r_a), >= 0."""
    noise_sigma: float = 0.05
    """sigma: standard deviation (radians) of the angular noise on the desired direction, >= 0."""

    # -- arena extras and how a step is carried out (the defaults: the model's) ---------
    arena_size: tuple[float, float, float] | None = None
    """Side lengths (x, y, z) of a box, periodic or wrap arena centred on c; None: 2R each."""
    containment: float = 0.0
    """Wall avoidance, units/s^2, >= 0 (0: off): a boid whose point one turn radius ahead
    (speed / max_turn_rate) lies beyond the confinement start steers sideways, towards the
    inside, with this acceleration (OpenSteer's containment). Keeps slow-turning boids in."""
    update: str = "synchronous"
    """One of :data:`UPDATES`."""
    combine: str = "sum"
    """One of :data:`COMBINES`."""
    rule_order: tuple[str, ...] = ()
    """Chain order: stage names (:data:`STAGES`, or the names of your rules and forces);
    the stages not named follow in their default order. Needs ``combine = "chain"``."""
    alignment_form: str = "difference"
    """One of :data:`ALIGNMENT_FORMS`."""
    empty_mean: str = "skip"
    """One of :data:`EMPTY_MEANS`."""
    turn_limit: str = "heading"
    """One of :data:`TURN_LIMITS`."""

    # -- whom a boid interacts with (the defaults: everyone it sees, one species) --------
    neighbours: int | None = None
    """k: interact with the k nearest of the boids seen (topological interaction, Ballerini et
    al. 2008; ties go to the lower index), >= 1; None: with every boid seen (metric)."""
    adaptive: bool = False
    """StarDisplay's adaptive radius (Hildenbrandt et al. 2010; needs ``neighbours``): each boid
    sees within its own radius, at most ``view_distance``, nudged each step towards the
    distance of its k-th nearest neighbour."""
    adaptation: float = 0.1
    """s: fraction of the gap to that distance an adaptive radius closes each step, in (0, 1]."""
    species: tuple[Species, ...] = ()
    """The species of a mixed flock (boids model only); ``count`` is then their total."""

    # -- the Vicsek et al. (1995) model ------------------------------------------------
    noise_eta: float = 0.0
    """eta: amplitude of the Vicsek model's angular noise, radians, in [0, 2 pi]: uniform in
    [-eta/2, eta/2] in a plane, uniform on the cap of directions within eta/2 in 3D."""

    # -- the world's objects (see flock3d.core.objects) ------------------------------------
    objects: tuple[Object, ...] = ()
    """Primitives, ground and meshes: obstacles boids stay out of, or the arena they stay in."""

    def __post_init__(self) -> None:
        # Accept sequences and numpy numbers from TOML or numpy, but store plain tuples,
        # floats and ints so that Params stays hashable and compares by value.
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        for name in ("arena_center", "wind"):
            vector = _vector(getattr(self, name))
            if vector is not None:
                set_(name, vector)
        rows = self.wind_gradient
        if _is_sequence(rows) and len(rows) == 3 and all(_vector(r) is not None for r in rows):
            set_("wind_gradient", tuple(_vector(r) for r in rows))
        for name in ("count", "predator_count", "dimensions"):
            value = getattr(self, name)
            if isinstance(value, numbers.Integral) and not isinstance(value, bool):
                set_(name, int(value))
        if _is_sequence(self.attractors):
            set_("attractors", tuple(_attractor(a) for a in self.attractors))
        if _is_sequence(self.obstacles):
            set_("obstacles", tuple(_obstacle(o) for o in self.obstacles))
        if self.path is not None:
            set_("path", _path(self.path))
        if _is_sequence(self.objects) and self.objects:
            from flock3d.core.objects import normalise_object

            set_("objects", tuple(normalise_object(o) for o in self.objects))
        if self.arena_size is not None and _vector(self.arena_size) is not None:
            set_("arena_size", _vector(self.arena_size))
        if _is_sequence(self.rule_order):
            set_("rule_order", tuple(self.rule_order))
        if isinstance(self.neighbours, numbers.Integral) and not isinstance(self.neighbours, bool):
            set_("neighbours", int(self.neighbours))
        if _is_sequence(self.species):
            set_("species", tuple(_species(s) for s in self.species))
            if _counted_by_species(self.species):
                set_("count", int(sum(s.count for s in self.species)))  # the species make the flock
        problems = params_problems(self)
        if problems:
            raise ValueError("; ".join(str(p) for p in problems))

    @property
    def initial_radius(self) -> float:
        """r_0 with its default resolved: ``init_radius`` or 0.5 R."""
        return 0.5 * self.arena_radius if self.init_radius is None else self.init_radius

    @property
    def zone_radii(self) -> tuple[float, float, float]:
        """(r_r, r_o, r_a): the outer radii of the Couzin model's three zones."""
        r_o = self.zone_repulsion + self.zone_orientation_width
        return self.zone_repulsion, r_o, r_o + self.zone_attraction_width

    @property
    def perception_distance(self) -> float:
        """How far a boid sees: the view distance (the longest of its species'), or r_a (the
        attraction zone's rim) for the Couzin model. Neighbour lists, focus cones and groups
        all use it."""
        if self.model == "couzin":
            return self.zone_radii[2]
        return max(
            [self.view_distance, *(self.of_species(k).view_distance for k in range(len(self.species)))]
        )

    @property
    def species_of_boids(self) -> np.ndarray:
        """(count,) int32: the species of each boid (0 for every boid of a flock without species)."""
        return np.repeat(np.arange(max(1, len(self.species)), dtype=np.int32),
                         [s.count for s in self.species] or [self.count])  # fmt: skip

    def of_species(self, k: int) -> Params:
        """The parameters boids of species k live by: the flock's, with the species' own values
        (and its count, no species). Without species, k = 0 gives these parameters."""
        if not self.species:
            return self
        return _species_params(self, k)

    def interacts(self, a: int, b: int) -> tuple[bool, bool, bool, bool]:
        """Whether a boid of species a sees, separates from, aligns with and coheres with one of
        species b (all True without species)."""
        if not self.species:
            return (True, True, True, True)
        return _interaction_matrix(self)[a][b]

    @property
    def rule_distances(self) -> tuple[float, float, float]:
        """Radii of separation, alignment and cohesion, defaults resolved."""
        rv = self.view_distance
        return (
            self.separation_distance,
            rv if self.alignment_distance is None else self.alignment_distance,
            rv if self.cohesion_distance is None else self.cohesion_distance,
        )

    @property
    def rule_fovs(self) -> tuple[float, float, float]:
        """Cones (degrees) of separation, alignment and cohesion, defaults resolved."""
        return tuple(
            self.fov if f is None else f for f in (self.separation_fov, self.alignment_fov, self.cohesion_fov)
        )

    @property
    def half_extents(self) -> tuple[float, float, float]:
        """Half side lengths of a box-like arena: ``arena_size / 2``, or (R, R, R)."""
        if self.arena_size is None:
            return (self.arena_radius,) * 3
        return tuple(0.5 * s for s in self.arena_size)

    def replace(self, **changes: Any) -> Params:
        """A copy with some fields changed (validated like a new ``Params``)."""
        return dataclasses.replace(self, **changes)


def _friendly_init(init: Callable) -> Callable:
    """Params' generated __init__, with "did you mean" for a misspelt field (as scene files get)."""
    import difflib
    import functools

    fields = [f.name for f in dataclasses.fields(Params)]

    @functools.wraps(init)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        unknown = [name for name in kwargs if name not in fields]
        if unknown:
            close = difflib.get_close_matches(unknown[0], fields, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else "; see help(flock3d.Params) for the fields"
            raise TypeError(f"Params has no field {unknown[0]!r}{hint}")
        init(self, *args, **kwargs)

    return __init__


Params.__init__ = _friendly_init(Params.__init__)


@functools.lru_cache(maxsize=256)
def _species_params(params: Params, k: int) -> Params:
    own = {name: getattr(params.species[k], name) for name in SPECIES_FIELDS}
    return dataclasses.replace(
        params, species=(), count=params.species[k].count,
        **{name: value for name, value in own.items() if value is not None},
    )  # fmt: skip


@functools.lru_cache(maxsize=64)
def _interaction_matrix(params: Params) -> tuple[tuple[tuple[bool, bool, bool, bool], ...], ...]:
    names = [s.name for s in params.species]
    rows = []
    for s in params.species:
        sees = set(names if s.sees is None else s.sees)
        lists = [sees] + [sees if getattr(s, rule) is None else set(getattr(s, rule)) & sees
                          for rule in SPECIES_RULES[1:]]  # fmt: skip
        rows.append(tuple(tuple(name in rule for rule in lists) for name in names))
    return tuple(rows)


SPEC_FIELDS = tuple(f.name for f in dataclasses.fields(Params))[:16]
"""The spec's sixteen parameters, in its order."""

COUZIN_DEFAULTS: dict[str, Any] = {
    "model": "couzin",
    "count": 100,
    "zone_repulsion": 1.0,
    "fov": 270.0,
    "max_turn_rate": 40.0,
    "speed": 3.0,
    "noise_sigma": 0.05,
    "dt": 0.1,
    "init_radius": 5.0,
    "arena_shape": "none",
}
"""The values of Couzin, Krause, James, Ruxton and Franks (2002) that a scene with
``model = "couzin"`` starts from: N = 100, r_r = 1, alpha = 270, theta = 40 deg/s, s = 3,
sigma = 0.05 rad, tau = 0.1 s, in open space, from a random ball (here of radius 5)."""

VICSEK_DEFAULTS: dict[str, Any] = {
    "model": "vicsek",
    "count": 400,
    "arena_shape": "periodic",
    "arena_radius": 5.0,
    "dimensions": 2,
    "speed": 0.03,
    "view_distance": 1.0,
    "fov": 360.0,
    "max_turn_rate": math.inf,
    "noise_eta": 2.0,
    "dt": 1.0,
}
"""The values of Vicsek, Czirok, Ben-Jacob, Cohen and Shochet (1995) that a scene with
``model = "vicsek"`` starts from: N = 400 in a periodic square of side L = 10 (density 4),
v0 = 0.03, r = 1, Delta t = 1, no turn limit, eta = 2."""

MODEL_DEFAULTS: dict[str, dict[str, Any]] = {"couzin": COUZIN_DEFAULTS, "vicsek": VICSEK_DEFAULTS}
"""What a scene with ``model = NAME`` starts from, for each model with values of its own."""


# -- normalisation of structured values -------------------------------------------------


def _is_sequence(value: object) -> bool:
    return hasattr(value, "__len__") and not isinstance(value, (str, bytes, dict))


def _vector(value: object) -> tuple[float, float, float] | None:
    if _is_sequence(value) and len(value) == 3 and all(is_real_number(v) for v in value):
        return tuple(float(v) for v in value)
    return None


def _record(value: Any, cls: type, normalise: Callable[[Any], Any]) -> Any:
    """``value`` as a ``cls`` record when it is a dict or a plain tuple holding the fields that
    ``cls`` requires (and no others), with ``normalise`` applied; anything else is returned as
    it is, for the validation to report."""
    fields = cls._fields
    required = fields[: len(fields) - len(cls._field_defaults)]
    if isinstance(value, dict) and set(required) <= set(value) <= set(fields):
        value = cls(**value)
    if isinstance(value, tuple) and not isinstance(value, cls) and len(required) <= len(value) <= len(fields):
        value = cls(*value)
    return normalise(value) if isinstance(value, cls) else value


def _attractor(value: Any) -> Any:
    return _record(value, Attractor, lambda a: a._replace(position=_vector(a.position) or a.position))


def _obstacle(value: Any) -> Any:
    return _record(value, Obstacle, lambda o: o._replace(center=_vector(o.center) or o.center))


def _names(value: Any) -> Any:
    if _is_sequence(value) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return value


def _species(value: Any) -> Any:
    def normalise(s: Species) -> Species:
        changes = {rule: _names(getattr(s, rule)) for rule in SPECIES_RULES if getattr(s, rule) is not None}
        if isinstance(s.count, numbers.Integral) and not isinstance(s.count, bool):
            changes["count"] = int(s.count)
        return s._replace(**changes)

    return _record(value, Species, normalise)


def _whole(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _path(value: Any) -> Any:
    def points(path: WaypointPath) -> WaypointPath:
        if not _is_sequence(path.points):
            return path
        return path._replace(points=tuple(_vector(p) or p for p in path.points))

    return _record(value, WaypointPath, points)


# -- validation ------------------------------------------------------------------------


class Problem(NamedTuple):
    """One invalid parameter: the field it concerns and what is wrong."""

    field: str
    message: str
    """Reads after the field's name, e.g. ``must be > 0 (got -1)``, or after an item's
    index, e.g. ``[1].weight must be >= 0 (got -1)``."""

    def __str__(self) -> str:
        return f"{self.field}{'' if self.message.startswith(('[', '.')) else ' '}{self.message}"


def is_real_number(value: object) -> bool:
    """A real number that converts to a float (a 400-digit integer does not)."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        return False
    try:
        float(value)
    except OverflowError:
        return False
    return True


def short_repr(value: object) -> str:
    """repr(value), shortened when huge (a 400-digit integer)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


#: Upper bounds that keep a typo from asking for terabytes.
MAX_BOIDS = 100_000_000
#: Species a flock may have: the compiled step unrolls the interaction matrix's entries (which
#: keeps its pair loop vectorised), so its compile time and memory grow with their number; this
#: many keep a first compile within a minute on two cores.
MAX_SPECIES = 16
MAX_PREDATORS = 10_000
#: The largest finite length, speed, weight or rate a parameter may take. Beyond it the
#: arithmetic of a step overflows (1e308 * anything is inf) long before a flock could use it.
MAX_MAGNITUDE = 1e9
#: The longest time step, seconds.
MAX_DT = 1e3
#: The most cells along a side of a periodic arena's grid, whose cells are at least one reach
#: wide (the longest view distance; r_a in the Couzin model). The step counts the cells in
#: int64 (at most 1e18 in 3D) and coarsens them to its cap of cells per boid a slice a pass,
#: milliseconds a step at this bound. Real scenes have tens to thousands of cells a side.
MAX_CELLS_PER_SIDE = 1_000_000

_M = MAX_MAGNITUDE
# (field, low, high, low_open, high_open, allow_inf) for the plain scalar fields.
_RANGES: list[tuple[str, float, float, bool, bool, bool]] = [
    ("arena_radius", 0.0, _M, True, False, False),
    ("confinement_start", 0.0, 1.0, True, False, False),
    ("confinement", 0.0, _M, False, False, False),
    ("view_distance", 0.0, _M, True, False, True),
    ("fov", 0.0, 360.0, True, False, False),
    ("separation", 0.0, _M, False, False, False),
    ("alignment", 0.0, _M, False, False, False),
    ("cohesion", 0.0, _M, False, False, False),
    ("min_speed", 0.0, _M, False, False, False),
    ("max_speed", 0.0, _M, True, False, False),
    ("max_turn_rate", 0.0, _M, True, False, True),
    ("dt", 0.0, MAX_DT, True, False, False),
    ("avoidance", 0.0, _M, False, False, False),
    ("avoidance_lookahead", 0.0, _M, True, False, False),
    ("avoidance_margin", 0.0, _M, False, False, False),
    ("predator_speed", 0.0, _M, True, False, False),
    ("predator_turn_rate", 0.0, _M, True, False, True),
    ("flee_distance", 0.0, _M, True, False, False),
    ("flee", 0.0, _M, False, False, False),
    ("speed", 0.0, _M, True, False, False),
    ("zone_repulsion", 0.0, _M, True, False, False),
    ("zone_orientation_width", 0.0, _M, False, False, False),
    ("zone_attraction_width", 0.0, _M, False, False, False),
    ("noise_sigma", 0.0, _M, False, False, False),
    ("containment", 0.0, _M, False, False, False),
    ("adaptation", 0.0, 1.0, True, False, False),
    ("noise_eta", 0.0, 2.0 * math.pi, False, False, False),
]


def _range_text(low: float, high: float, low_open: bool, high_open: bool) -> str:
    if math.isinf(high) or high in (MAX_MAGNITUDE, MAX_DT):  # a cap is stated when it is exceeded
        return f"> {low:g}" if low_open else f">= {low:g}"
    return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"


def _check_number(value: Any, low, high, low_open, high_open, allow_inf) -> str | None:
    """The problem with one number against a range, or None."""
    rule = _range_text(low, high, low_open, high_open)
    if not is_real_number(value) or math.isnan(value):
        return f"must be a number {rule} (got {short_repr(value)})"
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if math.isinf(value) and not allow_inf:
        return f"must be finite and {rule} (got {short_repr(value)})"
    if too_low:
        return f"must be {rule} (got {short_repr(value)})"
    if too_high and not (allow_inf and math.isinf(value)):
        if high in (MAX_MAGNITUDE, MAX_DT):
            inf = " or inf" if allow_inf else ""
            return f"must be at most {high:g}{inf} (got {short_repr(value)})"
        return f"must be {rule} (got {short_repr(value)})"
    return None


def _finite_vector(value: Any) -> bool:
    """Three finite numbers, each at most MAX_MAGNITUDE in size."""
    return (
        _is_sequence(value)
        and len(value) == 3
        and all(is_real_number(v) and abs(v) <= MAX_MAGNITUDE for v in value)
    )


def _choice(problems, name, value, options) -> None:
    if value not in options:
        problems.append(Problem(name, f"must be one of {', '.join(map(repr, options))} (got {value!r})"))


def params_problems(
    values: Params | Mapping[str, Any], rule_names: Sequence[str] | None = None
) -> list[Problem]:
    """Every problem with a set of parameter values, in field order.

    Args:
        values: a ``Params`` or a mapping of field names to values (missing
            fields take their defaults).
        rule_names: the names of your rules and forces the flock will run with, which
            ``rule_order`` may name too. None when they are not known (a ``Params`` alone):
            then a name that is no built-in stage may be one of them, and passes.

    Returns:
        An empty list when the values are valid.
    """
    values = _field_values(values)
    problems = _value_problems(values)
    problems += _whole_flock_problems(values, {p.field for p in problems}, rule_names)
    order = [f.name for f in dataclasses.fields(Params)]
    problems.sort(key=lambda p: order.index(p.field))
    return problems


def _field_values(values: Params | Mapping[str, Any]) -> dict[str, Any]:
    """Every field's value: a Params' own, or a mapping's with the defaults for those it lacks."""
    if isinstance(values, Params):
        return {f.name: getattr(values, f.name) for f in dataclasses.fields(Params)}
    return {**{f.name: f.default for f in dataclasses.fields(Params)}, **values}


def _value_problems(values: dict[str, Any]) -> list[Problem]:
    """The problems of each value, and of values that must agree (a species' own values are
    checked by the same, in place of the flock's)."""
    problems: list[Problem] = []
    ok: dict[str, bool] = {}
    for name, *limits in _RANGES:
        problem = _check_number(values[name], *limits)
        if problem:
            problems.append(Problem(name, problem))
        else:
            ok[name] = True
    rv = values["view_distance"] if ok.get("view_distance") else None

    for name in ("arena_center", "wind"):
        if not _finite_vector(values[name]):
            problems.append(
                Problem(
                    name,
                    f"must be 3 finite numbers of at most {MAX_MAGNITUDE:g} (got {values[name]!r})",
                )
            )
    rows = values["wind_gradient"]
    if not (_is_sequence(rows) and len(rows) == 3 and all(_finite_vector(r) for r in rows)):
        problems.append(Problem("wind_gradient", f"must be a 3 x 3 matrix of finite numbers (got {rows!r})"))

    rs = values["separation_distance"]
    rule = "in (0, view_distance]"
    if not is_real_number(rs) or not math.isfinite(rs):
        problems.append(
            Problem("separation_distance", f"must be a finite number {rule} (got {short_repr(rs)})")
        )
    elif rs <= 0 or (rv is not None and rs > rv and values["model"] == "boids"):
        got = f"{rs!r} with view_distance {rv!r}" if rs > 0 else repr(rs)
        problems.append(Problem("separation_distance", f"must be {rule} (got {got})"))

    for name in ("alignment_distance", "cohesion_distance"):
        r = values[name]
        if r is None:
            continue
        if not is_real_number(r) or not math.isfinite(r) or r <= 0 or (rv is not None and r > rv):
            got = f"{r!r} with view_distance {rv!r}" if is_real_number(r) and r > 0 else repr(r)
            problems.append(
                Problem(name, f"must be unset or a finite number in (0, view_distance] (got {got})")
            )
    for name in ("separation_fov", "alignment_fov", "cohesion_fov"):
        if values[name] is not None:
            problem = _check_number(values[name], 0.0, 360.0, True, False, False)
            if problem:
                problems.append(Problem(name, problem.replace("must be", "must be unset or", 1)))

    if ok.get("min_speed") and ok.get("max_speed") and values["min_speed"] > values["max_speed"]:
        problems.append(
            Problem(
                "min_speed", f"must be <= max_speed (got {values['min_speed']!r} > {values['max_speed']!r})"
            )
        )

    for name, top in (("count", MAX_BOIDS), ("predator_count", MAX_PREDATORS)):
        count = values[name]
        if name == "count" and _counted_by_species(values["species"]):
            continue  # the species' total, checked with them
        if not isinstance(count, numbers.Integral) or isinstance(count, bool) or not 0 <= count <= top:
            problems.append(
                Problem(name, f"must be a whole number from 0 to {top:,} (got {short_repr(count)})")
            )

    init = values["init_radius"]
    if init is not None and (not is_real_number(init) or not 0 < init <= MAX_MAGNITUDE):
        problems.append(
            Problem(
                "init_radius",
                f"must be > 0 and at most {MAX_MAGNITUDE:g}, or unset for 0.5 * arena_radius "
                f"(got {short_repr(init)})",
            )
        )

    _choice(problems, "arena_shape", values["arena_shape"], ARENA_SHAPES)
    _choice(problems, "model", values["model"], MODELS)
    if values["model"] == "couzin" and values["arena_shape"] not in ("none", "periodic"):
        problems.append(
            Problem(
                "arena_shape",
                "must be 'none' (open space) or 'periodic' for the couzin model "
                f"(got {values['arena_shape']!r})",
            )
        )
    if values["model"] == "vicsek" and values["arena_shape"] != "periodic":
        problems.append(
            Problem("arena_shape", f"must be 'periodic' for the vicsek model (got {values['arena_shape']!r})")
        )
    problems += _neighbour_problems(values)
    _choice(problems, "separation_falloff", values["separation_falloff"], FALLOFFS)
    if values["dimensions"] not in (2, 3) or isinstance(values["dimensions"], bool):
        problems.append(Problem("dimensions", f"must be 2 or 3 (got {values['dimensions']!r})"))
    if not isinstance(values["separation_average"], bool):
        problems.append(
            Problem("separation_average", f"must be true or false (got {values['separation_average']!r})")
        )
    problems += _mode_problems(values)
    if (
        values["arena_shape"] == "periodic"
        and ok.get("arena_radius")
        and not any(p.field == "arena_size" for p in problems)
    ):
        problems += _periodic_reach_problems(values, ok)

    problems += _item_problems("attractors", values["attractors"], _attractor_problems)
    problems += _item_problems("obstacles", values["obstacles"], _obstacle_problems)
    if not any(p.field in ("obstacles", "arena_center", "init_radius", "arena_radius") for p in problems):
        problems += _covered_start_problems(values)
    path = values["path"]
    if path is not None:
        problems += [Problem("path", p) for p in _path_problems(path)]
    problems += _objects_problems(values, problems)
    if values["model"] != "boids":
        problems += _model_world_problems(values, {p.field for p in problems})
    elif _is_sequence(values["species"]) and values["species"]:
        problems += _species_problems(values)
    return problems


def _mode_problems(values: dict[str, Any]) -> list[Problem]:
    """The arena's size, and how a step is carried out: known choices that work together."""
    problems: list[Problem] = []
    size = values["arena_size"]
    if size is not None:
        if not (_finite_vector(size) and all(v > 0 for v in size)):
            problems.append(
                Problem("arena_size", f"must be unset or 3 numbers in (0, {MAX_MAGNITUDE:g}] (got {size!r})")
            )
        elif values["arena_shape"] not in ("box", "periodic", "wrap"):
            problems.append(
                Problem(
                    "arena_size", f"applies to box, periodic and wrap arenas (got {values['arena_shape']!r})"
                )
            )
    _choice(problems, "update", values["update"], UPDATES)
    _choice(problems, "combine", values["combine"], COMBINES)
    _choice(problems, "alignment_form", values["alignment_form"], ALIGNMENT_FORMS)
    _choice(problems, "empty_mean", values["empty_mean"], EMPTY_MEANS)
    _choice(problems, "turn_limit", values["turn_limit"], TURN_LIMITS)
    order = values["rule_order"]
    if not (_is_sequence(order) and all(isinstance(name, str) and name.isidentifier() for name in order)):
        problems.append(Problem("rule_order", f"must be a list of stage names (got {short_repr(order)})"))
    elif len(set(order)) != len(order):
        problems.append(Problem("rule_order", f"names a stage twice (got {list(order)!r})"))
    elif order and values["combine"] != "chain":
        problems.append(Problem("rule_order", 'orders a chain: it needs combine = "chain"'))
    if values["update"] == "per_rule" and values["combine"] != "chain":
        problems.append(
            Problem("update", '"per_rule" applies the rules one after another: it needs combine = "chain"')
        )
    if values["model"] != "boids":
        for name, default in (("update", "synchronous"), ("combine", "sum"), ("turn_limit", "heading")):
            if values[name] != default:
                problems.append(
                    Problem(
                        name, f"must be {default!r} for the {values['model']} model (got {values[name]!r})"
                    )
                )
    return problems


def _neighbour_problems(values: dict[str, Any]) -> list[Problem]:
    """Topological neighbours and the adaptive radius: a whole k, and what the radius needs."""
    problems = []
    k = values["neighbours"]
    if k is not None and not (_whole(k) and 1 <= k <= MAX_BOIDS):
        problems.append(
            Problem(
                "neighbours", f"must be unset or a whole number from 1 to {MAX_BOIDS:,} (got {short_repr(k)})"
            )
        )
    adaptive = values["adaptive"]
    if not isinstance(adaptive, bool):
        problems.append(Problem("adaptive", f"must be true or false (got {adaptive!r})"))
    elif adaptive:
        if k is None:
            problems.append(Problem("adaptive", "needs neighbours = k: the radius holds the k nearest"))
        rv = values["view_distance"]
        if values["model"] != "couzin" and is_real_number(rv) and math.isinf(rv):
            problems.append(Problem("adaptive", "needs a finite view_distance: the largest radius"))
        if values["model"] == "couzin":
            problems.append(
                Problem("adaptive", "applies to the boids and vicsek models (got model 'couzin')")
            )
        if values["update"] == "per_rule":
            problems.append(Problem("adaptive", 'needs update = "synchronous" or "sequential"'))
    return problems


def _counted_by_species(species: Any) -> bool:
    """Whether ``species`` make the flock: then ``count`` is their total."""
    return (
        _is_sequence(species)
        and len(species) > 0
        and all(isinstance(s, Species) and _whole(s.count) for s in species)
    )


def _species_problems(values: dict[str, Any]) -> list[Problem]:
    """Each species: a unique name, a count, its own values valid as the flock's would be, and an
    interaction matrix naming known species (a rule acts only on species it sees); and no more
    boids in all than a flock may have."""
    species = values["species"]
    if len(species) > MAX_SPECIES:
        return [
            Problem(
                "species",
                f"may be at most {MAX_SPECIES} (got {len(species):,}): the compiled step holds each "
                "species' interactions, and its compile time and memory grow with their number",
            )
        ]
    problems: list[Problem] = []
    if _counted_by_species(species) and (total := sum(s.count for s in species)) > MAX_BOIDS:
        problems.append(
            Problem("species", f"hold {total:,} boids in all; a flock may have at most {MAX_BOIDS:,}")
        )
    names = [s.name for s in species if isinstance(s, Species)]
    for i, s in enumerate(species):
        where = f"[{i}]"
        if not isinstance(s, Species):
            problems.append(Problem("species", f"{where} must have a name and a count (got {short_repr(s)})"))
            continue
        if not (isinstance(s.name, str) and s.name.isidentifier()):
            problems.append(
                Problem("species", f"{where}.name must be a name of letters, digits and _ (got {s.name!r})")
            )
        elif names.count(s.name) > 1:
            problems.append(Problem("species", f"{where}.name {s.name!r} is used by another species"))
        if not (_whole(s.count) and 0 <= s.count <= MAX_BOIDS):
            problems.append(
                Problem(
                    "species",
                    f"{where}.count must be a whole number from 0 to {MAX_BOIDS:,} "
                    f"(got {short_repr(s.count)})",
                )
            )
        own = {name: getattr(s, name) for name in SPECIES_FIELDS if getattr(s, name) is not None}
        if own:  # what the species' own values break that the flock's did not
            base = set(_value_problems({**values, "species": (), "count": 0}))
            for p in _value_problems({**values, **own, "species": (), "count": 0}):
                if p not in base:
                    problems.append(Problem("species", f"{where}.{p.field} {p.message}"))
        for rule in SPECIES_RULES:
            listed = getattr(s, rule)
            if listed is None:
                continue
            if not (_is_sequence(listed) and all(isinstance(n, str) for n in listed)):
                problems.append(
                    Problem(
                        "species",
                        f"{where}.{rule} must be a list of species names (got {short_repr(listed)})",
                    )
                )
                continue
            for name in listed:
                if name not in names:
                    problems.append(
                        Problem("species", f"{where}.{rule} names {name!r}, which is no species here")
                    )
                elif rule != "sees" and s.sees is not None and name not in s.sees:
                    problems.append(
                        Problem("species", f"{where}.{rule} names {name!r}, which it does not see")
                    )
    return problems


#: The Couzin model's zone widths: r_a is their sum.
_ZONE_WIDTHS = ("zone_repulsion", "zone_orientation_width", "zone_attraction_width")
#: The fields that size a periodic arena's grid, and those that decide which stages a flock has:
#: while one of them is wrong, what they decide together is not judged.
_GRID_FIELDS = frozenset({
    "arena_shape", "arena_radius", "arena_size", "dimensions", "model", "view_distance", "species",
    "zone_repulsion", "zone_orientation_width", "zone_attraction_width",
})  # fmt: skip
_STAGE_FIELDS = frozenset({
    "model", "combine", "rule_order", "arena_shape", "containment", "attractors", "path", "obstacles",
    "predator_count", "wind", "wind_gradient",
})  # fmt: skip


def _whole_flock_problems(
    values: dict[str, Any], reported: set[str], rule_names: Sequence[str] | None
) -> list[Problem]:
    """What the flock as a whole breaks beyond its values one by one (and beyond a species' own
    values): the cells of a periodic arena's grid, sized by the longest sight of any species, and
    the stages ``rule_order`` names."""
    problems = []
    if values["arena_shape"] == "periodic" and not reported & _GRID_FIELDS:
        problems += _grid_problems(values)
    if values["rule_order"] and not reported & _STAGE_FIELDS:
        problems += rule_order_problems(values, rule_names)
    return problems


def _grid_problems(values: dict[str, Any]) -> list[Problem]:
    """A periodic arena must be at most MAX_CELLS_PER_SIDE reaches wide (valid values)."""
    sides = values["arena_size"] or (2.0 * values["arena_radius"],) * 3
    side = max(sides[: 2 if values["dimensions"] == 2 else 3])
    least = side / MAX_CELLS_PER_SIDE
    where = (
        f"in a periodic arena whose longest side is {side:g}: its grid's cells are {{}} wide, "
        f"at most {MAX_CELLS_PER_SIDE:,} along a side"
    )
    if values["model"] == "couzin":
        r_a = sum(values[name] for name in _ZONE_WIDTHS)
        if r_a >= least:
            return []
        return [
            Problem(
                "zone_attraction_width",
                "must keep r_a (= zone_repulsion + zone_orientation_width + zone_attraction_width) at "
                f"least {least:g} {where.format('r_a')} (got r_a = {r_a:g}); widen the zones or make the "
                "arena smaller",
            )
        ]
    own = [s.view_distance for s in values["species"] if s.view_distance is not None]
    reach = max([values["view_distance"], *own])
    if reach >= least:
        return []
    got = f"the longest of the species' is {reach:g}" if own else f"got {reach:g}"
    return [
        Problem(
            "view_distance",
            f"must be at least {least:g} {where.format('a view distance')} ({got}); raise it "
            "or make the arena smaller",
        )
    ]


def used_stages(params: Params | Mapping[str, Any]) -> list[str]:
    """The built-in stages (:data:`STAGES`) a boids flock with these parameters has, in their
    default order: the one place that says which terms a flock has, for the assembly of its step
    and for the check of ``rule_order``.

    Args:
        params: a ``Params``, or a mapping of valid field values (missing ones take their defaults).
    """
    v = _field_values(params)
    walled = v["arena_shape"] in ("sphere", "box")
    used = {
        "confinement": walled,
        "containment": walled and v["containment"] > 0.0,
        "attractors": bool(v["attractors"]),
        "path": v["path"] is not None,
        "obstacles": bool(v["obstacles"]),
        "flee": v["predator_count"] > 0,
        "wind": any(v["wind"]) or any(any(row) for row in v["wind_gradient"]),
        "speed": v["combine"] == "chain",
    }
    return [stage for stage in STAGES if used.get(stage, True)]


#: What each built-in stage that a flock may lack needs, in words a message ends with.
_STAGE_NEEDS = {
    "confinement": "it needs arena_shape 'sphere' or 'box'",
    "containment": "it needs containment > 0 and arena_shape 'sphere' or 'box'",
    "attractors": "it needs attractors",
    "path": "it needs a path",
    "obstacles": "it needs obstacles",
    "flee": "it needs predator_count > 0",
    "wind": "it needs a wind or wind_gradient other than zero",
    "speed": "it needs combine = 'chain'",
}


def rule_order_problems(
    params: Params | Mapping[str, Any], rule_names: Sequence[str] | None = None
) -> list[Problem]:
    """The names in ``rule_order`` that name no stage of the flock.

    Args:
        params: a ``Params``, or a mapping of field values valid but for ``rule_order``'s names.
        rule_names: the names of your rules and forces the flock runs with; None when they are
            not known yet: then a name that is no built-in stage may be one of them, and passes.
    """
    v = _field_values(params)
    used = used_stages(v)
    yours = list(rule_names or ())
    stages = ", ".join(repr(name) for name in used + yours)
    problems = []
    for name in v["rule_order"]:
        if name in yours or name in used:
            continue
        if name in STAGES:
            why = f"which this flock does not use: {_STAGE_NEEDS[name]} (its stages: {stages})"
        elif yours:
            why = f"which is neither a stage of this flock nor one of your rules (its stages: {stages})"
        elif rule_names is not None:
            why = f"which is no stage of this flock, and no rules of yours are given (its stages: {stages})"
        else:
            continue
        problems.append(Problem("rule_order", f"names {name!r}, {why}"))
    return problems


def _periodic_reach_problems(values: dict[str, Any], ok: dict[str, bool]) -> list[Problem]:
    """A periodic arena must be wider than the longest sight, so that the nearest image is the one seen."""
    radius = values["arena_radius"]
    why = f"arena_radius {radius!r} in a periodic arena, so that the nearest image is the one seen"
    if values["arena_size"] is not None:
        axes = 2 if values["dimensions"] == 2 else 3
        radius = 0.5 * min(values["arena_size"][:axes])
        why = f"half the arena's shortest side ({radius:g}), so that the nearest image is the one seen"
    if values["model"] == "couzin":
        if not all(ok.get(name) for name in _ZONE_WIDTHS):
            return []
        r_a = sum(values[name] for name in _ZONE_WIDTHS)
        if r_a >= radius:
            return [
                Problem(
                    "zone_attraction_width",
                    "must keep r_a (= zone_repulsion + zone_orientation_width + zone_attraction_width) "
                    f"< {why} (got r_a = {r_a!r})",
                )
            ]
    elif ok.get("view_distance") and values["view_distance"] >= radius:
        return [Problem("view_distance", f"must be < {why} (got {values['view_distance']!r})")]
    return []


#: The world features of the boids model, and their empty values.
_WORLD_FEATURES = {
    "attractors": (),
    "path": None,
    "obstacles": (),
    "predator_count": 0,
    "wind": _ZERO3,
    "wind_gradient": (_ZERO3, _ZERO3, _ZERO3),
    "objects": (),
}


def _model_world_problems(values: dict[str, Any], reported: set[str]) -> list[Problem]:
    """The Couzin and Vicsek models have no attractors, path, obstacles, predators, wind or
    species: say so, not ignore them."""
    model = values["model"]
    problems = []
    if _is_sequence(values["species"]) and values["species"]:
        problems.append(Problem("species", f"belong to the boids model; the {model} model has none"))
    for name, empty in _WORLD_FEATURES.items():
        if name in reported:
            continue
        value = values[name]
        if _is_sequence(value) and _is_sequence(empty):
            is_empty = _flatten(value) == _flatten(empty)
        else:
            is_empty = value == empty
        if not is_empty:
            problems.append(
                Problem(
                    name,
                    f"is a feature of the boids model; the {model} model has none (got {short_repr(value)})",
                )
            )
    return problems


def _flatten(value: Any) -> list:
    return [x for item in value for x in (_flatten(item) if _is_sequence(item) else [item])]


def _item_problems(name: str, items: Any, check) -> list[Problem]:
    if not _is_sequence(items):
        return [Problem(name, f"must be a list (got {items!r})")]
    return [Problem(name, f"[{i}]{p}") for i, item in enumerate(items) for p in check(item)]


def _attractor_problems(a: Any) -> list[str]:
    if not isinstance(a, Attractor):
        return [f" must have a position, a weight and optionally a radius (got {a!r})"]
    out = []
    if not _finite_vector(a.position):
        out.append(f".position must be 3 finite numbers (got {a.position!r})")
    if p := _check_number(a.weight, 0.0, math.inf, False, True, False):
        out.append(f".weight {p}")
    if p := _check_number(a.radius, 0.0, math.inf, True, True, True):
        out.append(f".radius {p}")
    return out


def _obstacle_problems(o: Any) -> list[str]:
    if not isinstance(o, Obstacle):
        return [f" must have a center and a radius (got {o!r})"]
    out = []
    if not _finite_vector(o.center):
        out.append(f".center must be 3 finite numbers (got {o.center!r})")
    if p := _check_number(o.radius, 0.0, math.inf, True, True, False):
        out.append(f".radius {p}")
    return out


def _objects_problems(values: dict[str, Any], found: list[Problem]) -> list[Problem]:
    """The objects' own problems; then, when the values they depend on are valid, whether they
    leave room to place the boids (judged here for the objects that need no file)."""
    if values["objects"] == ():
        return []
    from flock3d.core.objects import covered_start_problems, objects_problems

    problems = [Problem(*p) for p in objects_problems(values)]
    depends = {"objects", "arena_center", "init_radius", "arena_radius", "avoidance_margin", "dimensions"}
    if not problems and not any(p.field in depends for p in found):
        problems = [Problem(*p) for p in covered_start_problems(values)]
    return problems


def _covered_start_problems(values: dict[str, Any]) -> list[Problem]:
    """Boids start outside obstacles and their margins: one must not cover the whole initial ball."""
    init = values["init_radius"]
    r0 = 0.5 * values["arena_radius"] if init is None else init
    margin = values["avoidance_margin"] if is_real_number(values["avoidance_margin"]) else 0.0
    return [
        Problem(
            "obstacles",
            f"[{i}] with its margin covers the whole initial ball of radius {r0:g} around the arena "
            "centre, leaving no room to place the boids (move it, or set a larger init_radius)",
        )
        for i, o in enumerate(values["obstacles"])
        if math.dist(o.center, values["arena_center"]) + r0 <= o.radius + margin
    ]


def _path_problems(path: Any) -> list[str]:
    if not isinstance(path, WaypointPath):
        return [f"must have points, a weight and a reach (got {path!r})"]
    out = []
    points = path.points
    if not (_is_sequence(points) and len(points) >= 2 and all(_finite_vector(p) for p in points)):
        out.append(f".points must be a list of at least 2 points of 3 finite numbers (got {points!r})")
    if p := _check_number(path.weight, 0.0, math.inf, False, True, False):
        out.append(f".weight {p}")
    if p := _check_number(path.reach, 0.0, math.inf, True, True, False):
        out.append(f".reach {p}")
    elif not out:  # within reach of a waypoint must not mean within reach of the next one
        shortest = min(math.dist(a, b) for a, b in zip(points, (*points[1:], points[0]), strict=True))
        if not path.reach < shortest / 2:
            out.append(
                f".reach must be < half the shortest segment of the closed path, {shortest / 2:g} "
                f"(got {short_repr(path.reach)})"
            )
    return out
