"""The declarations of Params' own fields, and any set of parameter values read field by field.

A term's fields are declared in its module (:mod:`flock3d.core.terms`) and a model's in its own
(:mod:`flock3d.core.models`); the rest are declared here: the model's sixteen (``docs/model.md``),
the variants of the classic model, the model's choice and how a step is carried out. Each is a
:class:`~flock3d.core.fields.Spec` that :class:`~flock3d.core.params.Params` gives its field,
with the choices it takes.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from flock3d.core.fields import MAX_DT, MAX_MAGNITUDE, Part, Spec
from flock3d.core.models import MODELS as MODEL_REGISTRY
from flock3d.core.models import MODELS_BY_NAME
from flock3d.core.species import SPECIES_FIELDS, SPECIES_RULES
from flock3d.core.terms import alignment as alignment_term
from flock3d.core.terms import separation as separation_term

if TYPE_CHECKING:
    from flock3d.core.params import Params

__all__ = [
    "ARENA_SHAPES",
    "UPDATES",
    "PRECISIONS",
    "COMBINES",
    "EMPTY_MEANS",
    "TURN_LIMITS",
    "FALLOFFS",
    "MODELS",
    "ALIGNMENT_FORMS",
    "either",
    "params_fields",
    "field_values",
    "Values",
    "as_attributes",
]

# -- the choices ------------------------------------------------------------------------

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
PRECISIONS = ("float64", "float32")
"""What the state is kept in between steps: ``float64`` on every engine, or ``float32`` on
the GPU engine (half the memory and the reads; each step rounded to float32)."""
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


def either(words: list[str]) -> str:
    """``a, b or c``."""
    return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else "".join(words)


_CHOICE = dict(kind="choice", checked=False)

#: The models whose individuals move at the constant ``speed``.
_CONSTANT_SPEED = [model.name for model in MODEL_REGISTRY if model.constant_speed]

# -- the model's sixteen (docs/model.md; the terms declare the rest of them) -------------

ARENA_RADIUS = Spec(
    "arena.radius",
    "radius of the arena sphere (half the side of a box)",
    unit="units",
    symbol="R",
    low_open=True,
)
ARENA_CENTER = Spec(
    "arena.center",
    "centre of the arena",
    kind="vector3",
    unit="units",
    symbol="c",
    allowed="3 finite numbers",
)
VIEW_DISTANCE = Spec(
    "perception.view_distance",
    "how far a boid sees (inf: the whole flock)",
    unit="units",
    symbol="r_v",
    low_open=True,
    allow_inf=True,
)
FOV = Spec(
    "perception.fov",
    "full angle of the field-of-view cone (360: no blind spot)",
    unit="degrees",
    symbol="α",
    low_open=True,
    high=360.0,
)
MIN_SPEED = Spec("flock.min_speed", "lowest speed", unit="units/s", symbol="s_min", allowed=">= 0, <= s_max")
MAX_SPEED = Spec("flock.max_speed", "highest speed", unit="units/s", symbol="s_max", low_open=True)
MAX_TURN_RATE = Spec(
    "flock.max_turn_rate",
    "largest change of heading (inf: no limit)",
    unit="degrees/s",
    symbol="ω",
    low_open=True,
    allow_inf=True,
)
DT = Spec("sim.dt", "time step", unit="s", symbol="dt", low_open=True, high=MAX_DT)
COUNT = Spec(
    "flock.count",
    "number of boids",
    kind="integer",
    symbol="N",
    checked=False,
    allowed="0 to 100,000,000",
)
INIT_RADIUS = Spec(
    "flock.init_radius",
    "radius of the ball the flock starts in",
    unit="units",
    symbol="r_0",
    checked=False,
    allowed="> 0",
    unset="half the arena radius",
    example=15.0,
)

# -- variants of the classic model, and the model ---------------------------------------

ARENA_SHAPE = Spec(
    "arena.shape",
    "sphere (soft radial push), box (a push per axis), periodic (wrap-around box), "
    "wrap (positions wrap, sight does not) or none (open space)",
    choices=ARENA_SHAPES,
    **_CHOICE,
)
DIMENSIONS = Spec(
    "sim.dimensions",
    "3, or 2 for a flock in the plane z = arena.center z",
    kind="integer",
    checked=False,
    allowed="2, 3",
)
MODEL = Spec(
    "model",
    either([f"{model.name} ({model.words})" for model in MODEL_REGISTRY]),
    choices=MODELS,
    **_CHOICE,
)
SPEED = Spec(
    "flock.speed",
    f"constant speed of the {either(_CONSTANT_SPEED).replace(' or ', ' and ')} models",
    unit="units/s",
    symbol="s",
    low_open=True,
    model=", ".join(_CONSTANT_SPEED),
    label="Speed s",
    slider=(0.01, 20.0),  # down to the Vicsek model's v0 = 0.03
)

# -- arena extras and how a step is carried out (the defaults: the model's) --------------

ARENA_SIZE = Spec(
    "arena.size",
    "side lengths [x, y, z] of a box, periodic or wrap arena",
    kind="vector3",
    unit="units",
    checked=False,
    allowed=f"3 numbers in (0, {MAX_MAGNITUDE:g}]",
    unset="2R each",
    example=[60.0, 60.0, 60.0],
)
UPDATE = Spec(
    "sim.update",
    "synchronous (all from the start-of-step state), sequential (boid after boid, in "
    "place) or per_rule (rule after rule, in place)",
    choices=UPDATES,
    **_CHOICE,
)
PRECISION = Spec(
    "sim.precision",
    "float64, or float32 on the GPU engine (engine gpu): the state kept and read in float32, "
    "half the memory and faster, each step rounded to float32",
    choices=PRECISIONS,
    **_CHOICE,
)
COMBINE = Spec(
    "rules.combine",
    "sum (u = v + dt * sum of the terms) or chain (each term in turn changes the "
    "velocity, the speed limit a stage)",
    choices=COMBINES,
    **_CHOICE,
)
RULE_ORDER = Spec(
    "rules.order",
    "the chain's order: stage names (those of the built-in terms, or your rules' "
    "names); those not named follow in their default order",
    kind="names",
    checked=False,
    unset="the default order",
    example=["separation", "alignment", "cohesion", "confinement", "speed"],
)
EMPTY_MEAN = Spec(
    "rules.empty_mean",
    "seeing no one: skip alignment and cohesion, or zero (their means taken as "
    "zero: slow down, pull to the origin)",
    choices=EMPTY_MEANS,
    **_CHOICE,
)
TURN_LIMIT = Spec(
    "flock.turn_limit",
    "heading (the limit steers the motion) or mesh (the velocity turns freely; the "
    "drawn orientation follows at the limit)",
    choices=TURN_LIMITS,
    **_CHOICE,
)

# -- whom a boid interacts with (the defaults: everyone it sees, one species) -----------

NEIGHBOURS = Spec(
    "perception.neighbours",
    "topological interaction: only the k nearest of the boids seen (ties to the lower index)",
    kind="integer",
    symbol="k",
    checked=False,
    allowed="1 to 100,000,000",
    unset="all seen (metric)",
    example=7,
)
ADAPTIVE = Spec(
    "perception.adaptive",
    "StarDisplay's adaptive radius: each boid's radius (at most the view "
    "distance) follows the distance of its k-th nearest (needs neighbours)",
    kind="boolean",
    checked=False,
)
ADAPTATION = Spec(
    "perception.adaptation",
    "fraction of the gap to that distance an adaptive radius closes each step",
    low_open=True,
    high=1.0,
)
SPECIES = Spec(
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
)

# -- values read field by field ----------------------------------------------------------


@functools.cache
def _params_class() -> type[Params]:
    # Params checks itself, on creation, with the functions that read its fields through here:
    # it imports them, so they import it when first called, not when loaded.
    from flock3d.core.params import Params

    return Params


def params_fields() -> tuple[dataclasses.Field, ...]:
    """Params' fields, in their order (each with its default and its Spec)."""
    return dataclasses.fields(_params_class())


def field_values(values: Params | Mapping[str, Any]) -> dict[str, Any]:
    """Every field's value: a Params' own, or a mapping's with the defaults for those it lacks."""
    if isinstance(values, _params_class()):
        return {f.name: getattr(values, f.name) for f in params_fields()}
    model = values.get("model")
    own = MODELS_BY_NAME[model].defaults if isinstance(model, str) and model in MODELS_BY_NAME else {}
    return {**{f.name: f.default for f in params_fields()}, **own, **values}


class Values:
    """Field values read as attributes, as a term's :meth:`~flock3d.core.terms.Term.present` reads
    a Params (values not yet made into one)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)


def as_attributes(params: Params | Mapping[str, Any]) -> Params | Values:
    """A Params as it is, or a mapping of valid field values (missing ones take their defaults)
    read as attributes."""
    return params if isinstance(params, _params_class()) else Values(field_values(params))
