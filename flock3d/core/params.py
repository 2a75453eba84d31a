"""Model parameters (the model's own, then its variants: see ``docs/model.md``).

``Params`` is a frozen dataclass: a flock is re-tuned by building a new one
(``params.replace(fov=180)``) and assigning it to ``flock.params``. Every value
is checked once, when it is made, by :func:`~flock3d.core.validation.params_problems`;
the scene loader reuses the same checks so that a scene file and a Python caller see
the same rules, and the numerical core then trusts its parameters.

The first sixteen fields are the model's own (``docs/model.md``). The rest select
variants of the classic model, add world features, choose how a step is carried out
(to reproduce published algorithms literally) and parametrise the Couzin model; their
defaults reproduce the model exactly.

Each field is declared once: a term's in its module (:mod:`flock3d.core.terms`), a model's
in its own (:mod:`flock3d.core.models`), the rest in :mod:`flock3d.core.declarations`. The
checks are :mod:`flock3d.core.validation`, the species :mod:`flock3d.core.species` and the
order of the terms :mod:`flock3d.core.stages`; their public names are importable from here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from flock3d.core import declarations as own
from flock3d.core.declarations import (
    ALIGNMENT_FORMS,
    ARENA_SHAPES,
    COMBINES,
    EMPTY_MEANS,
    FALLOFFS,
    MODELS,
    PRECISIONS,
    TURN_LIMITS,
    UPDATES,
)
from flock3d.core.fields import (
    MAX_MAGNITUDE,
    Problem,
    declare,
    is_real_number,
    is_sequence,
    is_whole_number,
    short_repr,
    spec_of,
    vector,
)
from flock3d.core.models import MODEL_FIELDS, MODELS_BY_NAME, model_of
from flock3d.core.models import MODELS as MODEL_REGISTRY
from flock3d.core.objects import Object, normalise_object
from flock3d.core.species import (
    SPECIES_FIELDS,
    SPECIES_RULES,
    Species,
    counted_by_species,
    interaction_matrix,
    species_params,
)
from flock3d.core.species import normalise as normalise_species
from flock3d.core.stages import STAGES, TERMS, rule_order_problems, stage_names, used_stages
from flock3d.core.stages import TERMS_BY_NAME as TERMS_BY_NAME
from flock3d.core.terms import alignment as alignment_term
from flock3d.core.terms import attractors as attractors_term
from flock3d.core.terms import cohesion as cohesion_term
from flock3d.core.terms import confinement as confinement_term
from flock3d.core.terms import containment as containment_term
from flock3d.core.terms import escape as escape_term
from flock3d.core.terms import flee as flee_term
from flock3d.core.terms import flight as flight_term
from flock3d.core.terms import objects as objects_term
from flock3d.core.terms import obstacles as obstacles_term
from flock3d.core.terms import path as path_term
from flock3d.core.terms import perching as perching_term
from flock3d.core.terms import separation as separation_term
from flock3d.core.terms import wander as wander_term
from flock3d.core.terms import wind as wind_term
from flock3d.core.terms.attractors import Attractor
from flock3d.core.terms.obstacles import Obstacle
from flock3d.core.terms.path import WaypointPath
from flock3d.core.validation import MAX_BOIDS as MAX_BOIDS
from flock3d.core.validation import MAX_CELLS_PER_SIDE as MAX_CELLS_PER_SIDE
from flock3d.core.validation import MAX_PREDATORS as MAX_PREDATORS
from flock3d.core.validation import MAX_SPECIES as MAX_SPECIES
from flock3d.core.validation import params_problems

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
    "PRECISIONS",
    "COMBINES",
    "ALIGNMENT_FORMS",
    "EMPTY_MEANS",
    "TURN_LIMITS",
    "TERMS",
    "STAGES",
    "used_stages",
    "stage_names",
    "rule_order_problems",
    "MAX_MAGNITUDE",
    "MODEL_DEFAULTS",
    "SPEC_FIELDS",
    "is_real_number",
    "short_repr",
]


_ZERO3 = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Params:
    """Parameters of the flocking model.

    Lengths are in world units, times in seconds, angles in degrees. Each field is declared
    with its :class:`~flock3d.core.fields.Spec` (its scene key, meaning, unit and range;
    ``flock3d scenes --template`` lists them all, and ``docs/model.md`` tabulates them): the
    model's own in :mod:`flock3d.core.declarations`, a term's in its module
    (:mod:`flock3d.core.terms`).

    The defaults were tuned so that a few hundred boids in an arena of radius 30
    form polarized flocks that keep their spacing: from a random start (P ~ 0.05),
    500 boids reach polarization 0.9 within about 30 s and merge into one flock,
    while the mean number of boids within view distance levels off near 50 and
    the mean nearest-neighbour distance stays near the separation distance (2).
    Weaker separation (10) let the flock contract without bound (over 140
    neighbours within view after 2 minutes).
    """

    # -- the model's sixteen (docs/model.md) --------------------------------------------
    arena_radius: float = declare(30.0, own.ARENA_RADIUS)
    arena_center: tuple[float, float, float] = declare(_ZERO3, own.ARENA_CENTER)
    confinement_start: float = declare(0.8, confinement_term.START)
    confinement: float = declare(12.0, confinement_term.WEIGHT)
    view_distance: float = declare(5.0, own.VIEW_DISTANCE)
    fov: float = declare(270.0, own.FOV)
    separation_distance: float = declare(2.0, separation_term.DISTANCE)
    separation: float = declare(30.0, separation_term.WEIGHT)
    alignment: float = declare(5.0, alignment_term.WEIGHT)
    cohesion: float = declare(1.0, cohesion_term.WEIGHT)
    min_speed: float = declare(3.0, own.MIN_SPEED)
    max_speed: float = declare(6.0, own.MAX_SPEED)
    max_turn_rate: float = declare(180.0, own.MAX_TURN_RATE)
    dt: float = declare(1.0 / 60.0, own.DT)
    count: int = declare(500, own.COUNT)
    init_radius: float | None = declare(None, own.INIT_RADIUS)

    # -- variants of the classic model (the defaults are the model) ----------------------
    arena_shape: str = declare("sphere", own.ARENA_SHAPE)
    dimensions: int = declare(3, own.DIMENSIONS)
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
    escape_distance: float = declare(0.0, escape_term.DISTANCE)
    escape_bank: float = declare(60.0, escape_term.BANK)
    escape_duration: float = declare(0.5, escape_term.DURATION)
    escape_reaction: float = declare(0.1, escape_term.REACTION)
    escape_copy: float = declare(1.0, escape_term.COPY)
    escape_bank_decay: float = declare(1.0, escape_term.BANK_DECAY)
    escape_copy_decay: float = declare(1.0, escape_term.COPY_DECAY)
    escape_looks: int = declare(1, escape_term.LOOKS)
    wind: tuple[float, float, float] = declare(_ZERO3, wind_term.ACCELERATION)
    wind_gradient: tuple[tuple[float, float, float], ...] = declare(
        (_ZERO3, _ZERO3, _ZERO3), wind_term.GRADIENT
    )

    # -- the model, and the speed of those at a constant speed ---------------------------
    model: str = declare("boids", own.MODEL)
    speed: float = declare(3.0, own.SPEED)

    # -- arena extras and how a step is carried out (the defaults: the model's) ---------
    arena_size: tuple[float, float, float] | None = declare(None, own.ARENA_SIZE)
    containment: float = declare(0.0, containment_term.WEIGHT)
    update: str = declare("synchronous", own.UPDATE)
    precision: str = declare("float64", own.PRECISION)
    combine: str = declare("sum", own.COMBINE)
    rule_order: tuple[str, ...] = declare((), own.RULE_ORDER)
    alignment_form: str = declare("difference", alignment_term.FORM)
    empty_mean: str = declare("skip", own.EMPTY_MEAN)
    turn_limit: str = declare("heading", own.TURN_LIMIT)

    # -- whom a boid interacts with (the defaults: everyone it sees, one species) --------
    neighbours: int | None = declare(None, own.NEIGHBOURS)
    adaptive: bool = declare(False, own.ADAPTIVE)
    adaptation: float = declare(0.1, own.ADAPTATION)
    species: tuple[Species, ...] = declare((), own.SPECIES)

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
        if counted_by_species(self.species):
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
        return species_params(self, k)

    def interacts(self, a: int, b: int) -> tuple[bool, bool, bool, bool]:
        """Whether a boid of species a sees, separates from, aligns with and coheres with one of
        species b (all True without species)."""
        if not self.species:
            return (True, True, True, True)
        return interaction_matrix(self)[a][b]

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


_FIELDS = {f.name: f for f in dataclasses.fields(Params)}

#: How each structured field's items become records (NamedTuples) when given as dicts or tuples.
_NORMALISE: dict[str, Callable[[Any], Any]] = {
    "attractors": attractors_term.normalise,
    "obstacles": obstacles_term.normalise,
    "path": path_term.normalise,
    "species": normalise_species,
    "objects": normalise_object,
}
