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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from flock3d.core.fields import (
    MAX_DT,
    MAX_MAGNITUDE,
    Part,
    Problem,
    Spec,
    declare,
    finite_vector,
    is_real_number,
    is_sequence,
    is_whole_number,
    number_problem,
    record,
    short_repr,
    spec_of,
    vector,
)
from flock3d.core.models import MODEL_FIELDS, MODELS_BY_NAME, model_of
from flock3d.core.models import MODELS as MODEL_REGISTRY
from flock3d.core.models.couzin import DEFAULTS as COUZIN_DEFAULTS
from flock3d.core.models.ism import DEFAULTS as ISM_DEFAULTS
from flock3d.core.models.vicsek import DEFAULTS as VICSEK_DEFAULTS
from flock3d.core.models.vicsek import POSITION_UPDATES
from flock3d.core.objects import Object, normalise_object
from flock3d.core.terms import PairTerm
from flock3d.core.terms import alignment as alignment_term
from flock3d.core.terms import attractors as attractors_term
from flock3d.core.terms import cohesion as cohesion_term
from flock3d.core.terms import confinement as confinement_term
from flock3d.core.terms import containment as containment_term
from flock3d.core.terms import flee as flee_term
from flock3d.core.terms import flight as flight_term
from flock3d.core.terms import objects as objects_term
from flock3d.core.terms import obstacles as obstacles_term
from flock3d.core.terms import path as path_term
from flock3d.core.terms import perching as perching_term
from flock3d.core.terms import separation as separation_term
from flock3d.core.terms import speed as speed_term
from flock3d.core.terms import wander as wander_term
from flock3d.core.terms import wind as wind_term
from flock3d.core.terms.attractors import Attractor
from flock3d.core.terms.obstacles import Obstacle
from flock3d.core.terms.path import WaypointPath

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
    "POSITION_UPDATES",
    "TERMS",
    "STAGES",
    "used_stages",
    "stage_names",
    "rule_order_problems",
    "MAX_MAGNITUDE",
    "COUZIN_DEFAULTS",
    "VICSEK_DEFAULTS",
    "ISM_DEFAULTS",
    "MODEL_DEFAULTS",
    "SPEC_FIELDS",
    "is_real_number",
    "short_repr",
]

#: The built-in terms of the boids model, in the order they act: summed in this order, or
#: chained in it unless ``rule_order`` says otherwise (your pair rules follow the pair terms,
#: your forces the other terms, before ``speed``). The one list of them: the fast step, the
#: reference engine, validation and the scene schema all read it. A new term is its module,
#: its fields' lines in :class:`Params` and its place here.
TERMS = (
    separation_term.TERM,
    alignment_term.TERM,
    cohesion_term.TERM,
    confinement_term.TERM,
    containment_term.TERM,
    attractors_term.TERM,
    path_term.TERM,
    obstacles_term.TERM,
    flee_term.TERM,
    wind_term.TERM,
    wander_term.TERM,
    flight_term.TERM,
    perching_term.TERM,
    objects_term.TERM,
    speed_term.TERM,
)
STAGES = tuple(term.name for term in TERMS)
"""The built-in stages of a chained update, in their default order."""
TERMS_BY_NAME = {term.name: term for term in TERMS}

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
EMPTY_MEANS = ("skip", "zero")
"""What alignment and cohesion do for a boid that sees no one: ``skip`` (nothing: the
model's) or ``zero`` (take the neighbours' mean velocity and mean position as zero
vectors, the coordinate origin, as code that averages into a zeroed sum does)."""
TURN_LIMITS = ("heading", "mesh")
"""``heading``: the turn limit steers the motion (the model's; v = |v| forward(q)); ``mesh``:
the velocity turns freely and only the drawn orientation follows it, turning towards the
look rotation of the velocity by at most the limit (a Unity ``RotateTowards`` on the
transform); boids then see along their velocity."""
FALLOFFS = separation_term.FALLOFFS
MODELS = tuple(model.name for model in MODEL_REGISTRY)
"""The models' names, in the registry's order (:mod:`flock3d.core.models`: a module each)."""
ALIGNMENT_FORMS = alignment_term.FORMS


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

_CHOICE = dict(kind="choice", checked=False)


def _either(words: list[str]) -> str:
    """``a, b or c``."""
    return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else "".join(words)


#: The models whose individuals move at the constant ``speed``.
_CONSTANT_SPEED = [model.name for model in MODEL_REGISTRY if model.constant_speed]


@dataclass(frozen=True)
class Params:
    """Parameters of the flocking model.

    Lengths are in world units, times in seconds, angles in degrees. Each field is declared
    with its :class:`~flock3d.core.fields.Spec` (its scene key, meaning, unit and range;
    ``flock3d scenes --template`` lists them all, and ``docs/model.md`` tabulates them): the
    model's own here, a term's in its module (:mod:`flock3d.core.terms`).

    The defaults were tuned so that a few hundred boids in an arena of radius 30
    form polarized flocks that keep their spacing: from a random start (P ~ 0.05),
    500 boids reach polarization 0.9 within about 30 s and merge into one flock,
    while the mean number of boids within view distance levels off near 50 and
    the mean nearest-neighbour distance stays near the separation distance (2).
    Weaker separation (10) let the flock contract without bound (over 140
    neighbours within view after 2 minutes).
    """

    # -- the model's sixteen (docs/model.md) --------------------------------------------
    arena_radius: float = declare(
        30.0,
        Spec(
            "arena.radius",
            "radius of the arena sphere (half the side of a box)",
            unit="units",
            symbol="R",
            low_open=True,
        ),
    )
    arena_center: tuple[float, float, float] = declare(
        _ZERO3,
        Spec(
            "arena.center",
            "centre of the arena",
            kind="vector3",
            unit="units",
            symbol="c",
            allowed="3 finite numbers",
        ),
    )
    confinement_start: float = declare(0.8, confinement_term.START)
    confinement: float = declare(12.0, confinement_term.WEIGHT)
    view_distance: float = declare(
        5.0,
        Spec(
            "perception.view_distance",
            "how far a boid sees (inf: the whole flock)",
            unit="units",
            symbol="r_v",
            low_open=True,
            allow_inf=True,
        ),
    )
    fov: float = declare(
        270.0,
        Spec(
            "perception.fov",
            "full angle of the field-of-view cone (360: no blind spot)",
            unit="degrees",
            symbol="α",
            low_open=True,
            high=360.0,
        ),
    )
    separation_distance: float = declare(2.0, separation_term.DISTANCE)
    separation: float = declare(30.0, separation_term.WEIGHT)
    alignment: float = declare(5.0, alignment_term.WEIGHT)
    cohesion: float = declare(1.0, cohesion_term.WEIGHT)
    min_speed: float = declare(
        3.0, Spec("flock.min_speed", "lowest speed", unit="units/s", symbol="s_min", allowed=">= 0, <= s_max")
    )
    max_speed: float = declare(
        6.0, Spec("flock.max_speed", "highest speed", unit="units/s", symbol="s_max", low_open=True)
    )
    max_turn_rate: float = declare(
        180.0,
        Spec(
            "flock.max_turn_rate",
            "largest change of heading (inf: no limit)",
            unit="degrees/s",
            symbol="ω",
            low_open=True,
            allow_inf=True,
        ),
    )
    dt: float = declare(
        1.0 / 60.0, Spec("sim.dt", "time step", unit="s", symbol="dt", low_open=True, high=MAX_DT)
    )
    count: int = declare(
        500,
        Spec(
            "flock.count",
            "number of boids",
            kind="integer",
            symbol="N",
            checked=False,
            allowed="0 to 100,000,000",
        ),
    )
    init_radius: float | None = declare(
        None,
        Spec(
            "flock.init_radius",
            "radius of the ball the flock starts in",
            unit="units",
            symbol="r_0",
            checked=False,
            allowed="> 0",
            unset="half the arena radius",
            example=15.0,
        ),
    )

    # -- variants of the classic model (the defaults are the model) ----------------------
    arena_shape: str = declare(
        "sphere",
        Spec(
            "arena.shape",
            "sphere (soft radial push), box (a push per axis), periodic (wrap-around box), "
            "wrap (positions wrap, sight does not) or none (open space)",
            choices=ARENA_SHAPES,
            **_CHOICE,
        ),
    )
    dimensions: int = declare(
        3,
        Spec(
            "sim.dimensions",
            "3, or 2 for a flock in the plane z = arena.center z",
            kind="integer",
            checked=False,
            allowed="2, 3",
        ),
    )
    separation_falloff: str = declare("inverse", separation_term.FALLOFF)
    separation_average: bool = declare(True, separation_term.AVERAGE)
    alignment_distance: float | None = declare(None, alignment_term.DISTANCE)
    cohesion_distance: float | None = declare(None, cohesion_term.DISTANCE)
    separation_fov: float | None = declare(None, separation_term.FOV)
    alignment_fov: float | None = declare(None, alignment_term.FOV)
    cohesion_fov: float | None = declare(None, cohesion_term.FOV)

    # -- world features (the defaults: none) --------------------------------------------
    attractors: tuple[Attractor, ...] = declare((), attractors_term.ATTRACTORS)
    path: WaypointPath | None = declare(None, path_term.PATH)
    obstacles: tuple[Obstacle, ...] = declare((), obstacles_term.OBSTACLES)
    avoidance: float = declare(60.0, obstacles_term.WEIGHT)
    avoidance_lookahead: float = declare(1.0, obstacles_term.LOOKAHEAD)
    avoidance_margin: float = declare(1.0, obstacles_term.MARGIN)
    predator_count: int = declare(0, flee_term.COUNT)
    predator_speed: float = declare(7.0, flee_term.SPEED)
    predator_turn_rate: float = declare(120.0, flee_term.TURN_RATE)
    flee_distance: float = declare(10.0, flee_term.DISTANCE)
    flee: float = declare(40.0, flee_term.WEIGHT)
    wind: tuple[float, float, float] = declare(_ZERO3, wind_term.ACCELERATION)
    wind_gradient: tuple[tuple[float, float, float], ...] = declare(
        (_ZERO3, _ZERO3, _ZERO3), wind_term.GRADIENT
    )

    # -- the model, and the speed of those at a constant speed ---------------------------
    model: str = declare(
        "boids",
        Spec(
            "model",
            _either([f"{model.name} ({model.words})" for model in MODEL_REGISTRY]),
            choices=MODELS,
            **_CHOICE,
        ),
    )
    speed: float = declare(
        3.0,
        Spec(
            "flock.speed",
            f"constant speed of the {_either(_CONSTANT_SPEED).replace(' or ', ' and ')} models",
            unit="units/s",
            symbol="s",
            low_open=True,
            model=", ".join(_CONSTANT_SPEED),
            label="Speed s",
            slider=(0.1, 20.0),
        ),
    )

    # -- arena extras and how a step is carried out (the defaults: the model's) ---------
    arena_size: tuple[float, float, float] | None = declare(
        None,
        Spec(
            "arena.size",
            "side lengths [x, y, z] of a box, periodic or wrap arena",
            kind="vector3",
            unit="units",
            checked=False,
            allowed=f"3 numbers in (0, {MAX_MAGNITUDE:g}]",
            unset="2R each",
            example=[60.0, 60.0, 60.0],
        ),
    )
    containment: float = declare(0.0, containment_term.WEIGHT)
    update: str = declare(
        "synchronous",
        Spec(
            "sim.update",
            "synchronous (all from the start-of-step state), sequential (boid after boid, in "
            "place) or per_rule (rule after rule, in place)",
            choices=UPDATES,
            **_CHOICE,
        ),
    )
    combine: str = declare(
        "sum",
        Spec(
            "rules.combine",
            "sum (u = v + dt * sum of the terms) or chain (each term in turn changes the "
            "velocity, the speed limit a stage)",
            choices=COMBINES,
            **_CHOICE,
        ),
    )
    rule_order: tuple[str, ...] = declare(
        (),
        Spec(
            "rules.order",
            "the chain's order: stage names (those of the built-in terms, or your rules' "
            "names); those not named follow in their default order",
            kind="names",
            checked=False,
            unset="the default order",
            example=["separation", "alignment", "cohesion", "confinement", "speed"],
        ),
    )
    alignment_form: str = declare("difference", alignment_term.FORM)
    empty_mean: str = declare(
        "skip",
        Spec(
            "rules.empty_mean",
            "seeing no one: skip alignment and cohesion, or zero (their means taken as "
            "zero: slow down, pull to the origin)",
            choices=EMPTY_MEANS,
            **_CHOICE,
        ),
    )
    turn_limit: str = declare(
        "heading",
        Spec(
            "flock.turn_limit",
            "heading (the limit steers the motion) or mesh (the velocity turns freely; the "
            "drawn orientation follows at the limit)",
            choices=TURN_LIMITS,
            **_CHOICE,
        ),
    )

    # -- whom a boid interacts with (the defaults: everyone it sees, one species) --------
    neighbours: int | None = declare(
        None,
        Spec(
            "perception.neighbours",
            "topological interaction: only the k nearest of the boids seen (ties to the lower index)",
            kind="integer",
            symbol="k",
            checked=False,
            allowed="1 to 100,000,000",
            unset="all seen (metric)",
            example=7,
        ),
    )
    adaptive: bool = declare(
        False,
        Spec(
            "perception.adaptive",
            "StarDisplay's adaptive radius: each boid's radius (at most the view "
            "distance) follows the distance of its k-th nearest (needs neighbours)",
            kind="boolean",
            checked=False,
        ),
    )
    adaptation: float = declare(
        0.1,
        Spec(
            "perception.adaptation",
            "fraction of the gap to that distance an adaptive radius closes each step",
            low_open=True,
            high=1.0,
        ),
    )
    species: tuple[Species, ...] = declare(
        (),
        Spec(
            "species",
            "[[species]] tables: the species of a mixed flock, each with its boids, own "
            "parameters, look and interaction matrix",
            kind="items",
            parts=(
                Part("name", "string", required=True),
                Part("count", "integer", required=True),
                *(Part(name, "number") for name in SPECIES_FIELDS),
                *(Part(rule, "names") for rule in SPECIES_RULES),
            ),
        ),
    )

    # -- terms added since ---------------------------------------------------------------
    wander: float = declare(0.0, wander_term.WEIGHT)

    objects: tuple[Object, ...] = declare((), objects_term.OBJECTS)
    perching_height: float = declare(0.0, perching_term.HEIGHT)
    perching_duration: float = declare(5.0, perching_term.DURATION)
    perching_cooldown: float = declare(10.0, perching_term.COOLDOWN)

    # -- aerodynamic flight (Hildenbrandt et al. 2010) and the roost -----------------------
    flight: str = declare("kinematic", flight_term.MODE)
    flight_cruise_speed: float = declare(5.0, flight_term.CRUISE)
    flight_gravity: float = declare(9.81, flight_term.GRAVITY)
    flight_lift_drag: float = declare(3.3, flight_term.LIFT_DRAG)
    flight_speed_time: float = declare(1.0, flight_term.SPEED_TIME)
    flight_max_bank: float = declare(60.0, flight_term.MAX_BANK)
    flight_roll_rate: float = declare(180.0, flight_term.ROLL_RATE)
    roost: tuple[float, float, float] = declare(_ZERO3, flight_term.POSITION)
    roost_radius: float = declare(0.0, flight_term.RADIUS)
    roost_weight: float = declare(0.0, flight_term.WEIGHT)
    roost_altitude: float = declare(0.0, flight_term.ALTITUDE)

    # -- each model's own fields, declared in its module (flock3d.core.models) -----------
    for _name, (_default, _spec) in MODEL_FIELDS.items():
        __annotations__[_name] = "Any" if _default is None else type(_default).__name__
        locals()[_name] = declare(_default, _spec)
    del _name, _default, _spec

    def __post_init__(self) -> None:
        # Accept sequences and numpy numbers from TOML or numpy, but store plain tuples,
        # floats and ints so that Params stays hashable and compares by value.
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        for field in dataclasses.fields(Params):
            value, kind = getattr(self, field.name), spec_of(field).kind
            if kind == "vector3" and vector(value) is not None:
                set_(field.name, vector(value))
            elif kind == "matrix3" and is_sequence(value) and len(value) == 3 and all(map(vector, value)):
                set_(field.name, tuple(vector(row) for row in value))
            elif kind == "integer" and is_whole_number(value):
                set_(field.name, int(value))
            elif kind == "names" and is_sequence(value):
                set_(field.name, tuple(value))
        for name, normalise in _NORMALISE.items():
            value = getattr(self, name)
            if spec_of(_FIELDS[name]).kind == "table":
                set_(name, normalise(value))
            elif is_sequence(value):
                set_(name, tuple(normalise(item) for item in value))
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
        """How far a boid sees: the view distance (the longest of its species'), or what its
        model perceives (r_a, the attraction zone's rim, for the Couzin model). Neighbour
        lists, focus cones and groups all use it."""
        return model_of(self).reach(self)

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
        """A copy with some fields changed (validated like a new ``Params``). A change of model
        brings the new model's defaults to the fields that hold the old one's."""
        old, new = MODELS_BY_NAME.get(self.model), MODELS_BY_NAME.get(changes.get("model", self.model))
        if old is not new and old is not None and new is not None:
            was, now = _defaults_of(old), _defaults_of(new)
            for name in set(old.defaults) | set(new.defaults):
                if name not in changes and getattr(self, name) == was[name]:
                    changes[name] = now[name]
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
        model = MODELS_BY_NAME.get(kwargs.get("model")) if isinstance(kwargs.get("model"), str) else None
        if model is not None and not args:  # the model's defaults, where the caller sets none
            kwargs = {**model.defaults, **kwargs}
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

MODEL_DEFAULTS: dict[str, dict[str, Any]] = {
    model.name: model.scene_defaults for model in MODEL_REGISTRY if model.defaults or model.setup
}
"""What a scene with ``model = NAME`` starts from, for each model with values of its own: the model's
defaults, which apply however Params is built, and its paper's set-up
(:attr:`flock3d.core.models.Model.defaults`, :attr:`~flock3d.core.models.Model.setup`)."""


def _defaults_of(model: Any) -> dict[str, Any]:
    """Every field's value in a flock of ``model`` the caller sets nothing of."""
    return {**{f.name: f.default for f in dataclasses.fields(Params)}, **model.defaults}


# -- normalisation of structured values -------------------------------------------------


def _names(value: Any) -> Any:
    if is_sequence(value) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return value


def _species(value: Any) -> Any:
    def normalise(s: Species) -> Species:
        changes = {rule: _names(getattr(s, rule)) for rule in SPECIES_RULES if getattr(s, rule) is not None}
        if is_whole_number(s.count):
            changes["count"] = int(s.count)
        return s._replace(**changes)

    return record(value, Species, normalise)


_FIELDS = {f.name: f for f in dataclasses.fields(Params)}

#: How each structured field's items become records (NamedTuples) when given as dicts or tuples.
_NORMALISE: dict[str, Callable[[Any], Any]] = {
    "attractors": attractors_term.normalise,
    "obstacles": obstacles_term.normalise,
    "path": path_term.normalise,
    "species": _species,
    "objects": normalise_object,
}


# -- validation ------------------------------------------------------------------------


#: Upper bounds that keep a typo from asking for terabytes.
MAX_BOIDS = 100_000_000
#: Species a flock may have: the compiled step unrolls the interaction matrix's entries (which
#: keeps its pair loop vectorised), so its compile time and memory grow with their number; this
#: many keep a first compile within a minute on two cores.
MAX_SPECIES = 16
MAX_PREDATORS = 10_000
#: The most cells along a side of a periodic arena's grid, whose cells are at least one reach
#: wide (the longest view distance; r_a in the Couzin model). The step counts the cells in
#: int64 (at most 1e18 in 3D) and coarsens them to its cap of cells per boid a slice a pass,
#: milliseconds a step at this bound. Real scenes have tens to thousands of cells a side.
MAX_CELLS_PER_SIDE = 1_000_000


def _declared_problem(spec: Spec, value: Any) -> str | None:
    """What a field's declaration alone says is wrong with ``value``, or None. Fields whose check
    needs more than the declaration (``checked=False``) are judged by code below."""
    if spec.kind == "choice" and value not in spec.choices:
        return f"must be one of {', '.join(map(repr, spec.choices))} (got {value!r})"
    if not spec.checked:
        return None
    if spec.kind == "number":
        return number_problem(value, spec.low, spec.high, spec.low_open, spec.high_open, spec.allow_inf)
    if spec.kind == "boolean" and not isinstance(value, bool):
        return f"must be true or false (got {value!r})"
    if spec.kind == "vector3" and not finite_vector(value):
        return f"must be 3 finite numbers of at most {MAX_MAGNITUDE:g} (got {value!r})"
    if spec.kind == "matrix3" and not (
        is_sequence(value) and len(value) == 3 and all(map(finite_vector, value))
    ):
        return f"must be a 3 x 3 matrix of finite numbers (got {value!r})"
    return None


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
    model = values.get("model")
    own = MODELS_BY_NAME[model].defaults if isinstance(model, str) and model in MODELS_BY_NAME else {}
    return {**{f.name: f.default for f in dataclasses.fields(Params)}, **own, **values}


def _value_problems(values: dict[str, Any]) -> list[Problem]:
    """The problems of each value, and of values that must agree (a species' own values are
    checked by the same, in place of the flock's)."""
    problems: list[Problem] = []
    ok: dict[str, bool] = {}
    for field in dataclasses.fields(Params):
        problem = _declared_problem(spec_of(field), values[field.name])
        if problem:
            problems.append(Problem(field.name, problem))
        else:
            ok[field.name] = True
    reported = {p.field for p in problems}
    for term in TERMS:
        problems += term.problems(values, reported)

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
        if not is_whole_number(count) or not 0 <= count <= top:
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

    model = MODELS_BY_NAME.get(values["model"])
    if model is not None and values["arena_shape"] not in model.arenas:
        shapes = [repr(shape) + (" (open space)" if shape == "none" else "") for shape in model.arenas]
        problems.append(
            Problem(
                "arena_shape",
                f"must be {_either(shapes)} for the {model.name} model (got {values['arena_shape']!r})",
            )
        )
    for other in MODEL_REGISTRY:
        problems += other.problems(values, ok) if other is model else other.foreign_problems(values)
    problems += _neighbour_problems(values)
    if values["dimensions"] not in (2, 3) or isinstance(values["dimensions"], bool):
        problems.append(Problem("dimensions", f"must be 2 or 3 (got {values['dimensions']!r})"))
    problems += _mode_problems(values)
    if (
        values["arena_shape"] == "periodic"
        and ok.get("arena_radius")
        and not any(p.field == "arena_size" for p in problems)
    ):
        problems += _periodic_reach_problems(values, ok)

    if model is not None and model.update_kind != "terms":
        problems += _model_world_problems(values, {p.field for p in problems})
    elif is_sequence(values["species"]) and values["species"]:
        problems += _species_problems(values)
    return problems


def _mode_problems(values: dict[str, Any]) -> list[Problem]:
    """The arena's size, and how a step is carried out: known choices that work together."""
    problems: list[Problem] = []
    size = values["arena_size"]
    if size is not None:
        if not (finite_vector(size) and all(v > 0 for v in size)):
            problems.append(
                Problem("arena_size", f"must be unset or 3 numbers in (0, {MAX_MAGNITUDE:g}] (got {size!r})")
            )
        elif values["arena_shape"] not in ("box", "periodic", "wrap"):
            problems.append(
                Problem(
                    "arena_size", f"applies to box, periodic and wrap arenas (got {values['arena_shape']!r})"
                )
            )
    order = values["rule_order"]
    if not (is_sequence(order) and all(isinstance(name, str) and name.isidentifier() for name in order)):
        problems.append(Problem("rule_order", f"must be a list of stage names (got {short_repr(order)})"))
    elif len(set(order)) != len(order):
        problems.append(Problem("rule_order", f"names a stage twice (got {list(order)!r})"))
    elif order and values["combine"] != "chain":
        problems.append(Problem("rule_order", 'orders a chain: it needs combine = "chain"'))
    if values["update"] == "per_rule" and values["combine"] != "chain":
        problems.append(
            Problem("update", '"per_rule" applies the rules one after another: it needs combine = "chain"')
        )
    if model_of(_Values(values)).update_kind != "terms":
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
    if k is not None and not (is_whole_number(k) and 1 <= k <= MAX_BOIDS):
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
        rv, model = values["view_distance"], model_of(_Values(values))
        if model.adaptive and is_real_number(rv) and math.isinf(rv):
            problems.append(Problem("adaptive", "needs a finite view_distance: the largest radius"))
        if not model.adaptive:
            adapting = [m.name for m in MODEL_REGISTRY if m.adaptive]
            problems.append(
                Problem(
                    "adaptive",
                    f"applies to the {_either(adapting).replace(' or ', ' and ')} models (got model "
                    f"{values['model']!r})",
                )
            )
        if values["update"] == "per_rule":
            problems.append(Problem("adaptive", 'needs update = "synchronous" or "sequential"'))
    return problems


def _counted_by_species(species: Any) -> bool:
    """Whether ``species`` make the flock: then ``count`` is their total."""
    return (
        is_sequence(species)
        and len(species) > 0
        and all(isinstance(s, Species) and is_whole_number(s.count) for s in species)
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
        if not (is_whole_number(s.count) and 0 <= s.count <= MAX_BOIDS):
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
            if not (is_sequence(listed) and all(isinstance(n, str) for n in listed)):
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


#: The fields that size a periodic arena's grid, and those that decide which stages a flock has:
#: while one of them is wrong, what they decide together is not judged.
_GRID_FIELDS = frozenset({
    "arena_shape", "arena_radius", "arena_size", "dimensions", "model", "view_distance", "species",
}).union(*(model.reach_fields for model in MODEL_REGISTRY))  # fmt: skip
_STAGE_FIELDS = frozenset({"model", "combine", "rule_order", "arena_shape"}).union(
    *(term.switches if term.decided_by is None else term.decided_by for term in TERMS)
)


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
    own = model_of(_Values(values)).grid_problem(values, least, where)
    if own is not None:
        return own
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
    default order: the one place that says which terms a flock has, for the assembly of its step,
    the reference engine and the check of ``rule_order``.

    Args:
        params: a ``Params``, or a mapping of valid field values (missing ones take their defaults).
    """
    if not isinstance(params, Params):
        params = _Values(_field_values(params))
    return [term.name for term in TERMS if term.present(params)]


class _Values:
    """Field values read as attributes, as a term's :meth:`~flock3d.core.terms.Term.present` reads
    a Params (values not yet made into one)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)


def stage_names(params: Params, rule_names: Sequence[str] = (), force_names: Sequence[str] = ()) -> list[str]:
    """The stages a flock runs, in the order they act: ``rule_order`` first, then the rest in
    the registry's order, your pair rules (``rule0``...) after the pair terms and your forces
    (``force0``...) after the other terms, before the speed limit.

    Raises:
        ValueError: ``rule_order`` names a stage the flock does not have.
    """
    used = [TERMS_BY_NAME[name] for name in used_stages(params)]
    present = [t.name for t in used if isinstance(t, PairTerm)] + [f"rule{k}" for k in range(len(rule_names))]
    present += [t.name for t in used if not isinstance(t, PairTerm) and not t.clamps]
    present += [f"force{k}" for k in range(len(force_names))] + [t.name for t in used if t.clamps]
    names = {name: f"rule{k}" for k, name in enumerate(rule_names)}
    names.update({name: f"force{k}" for k, name in enumerate(force_names)})
    problems = rule_order_problems(params, list(names))
    if problems:
        raise ValueError(str(problems[0]))
    ordered = [names.get(name, name) for name in params.rule_order]
    return ordered + [s for s in present if s not in ordered]


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
            why = f"which this flock does not use: {TERMS_BY_NAME[name].needs} (its stages: {stages})"
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
    own = model_of(_Values(values)).periodic_problem(values, ok, radius, why)
    if own is not None:
        return own
    if ok.get("view_distance") and values["view_distance"] >= radius:
        return [Problem("view_distance", f"must be < {why} (got {values['view_distance']!r})")]
    return []


def _model_world_problems(values: dict[str, Any], reported: set[str]) -> list[Problem]:
    """The models other than boids have none of the boids model's world features (the fields that
    switch a term on) or species: say so, not ignore them."""
    model = values["model"]
    problems = []
    if is_sequence(values["species"]) and values["species"]:
        problems.append(Problem("species", f"belong to the boids model; the {model} model has none"))
    defaults = {f.name: f.default for f in dataclasses.fields(Params)}
    for name in (name for term in TERMS for name in term.switches):
        if name in reported:
            continue
        value, empty = values[name], defaults[name]
        if is_sequence(value) and is_sequence(empty):
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
    return [x for item in value for x in (_flatten(item) if is_sequence(item) else [item])]
