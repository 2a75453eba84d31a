"""What a scene file may contain: every key, where its value goes, and its type.

A scene file is TOML with top-level ``name``, ``description`` and ``seed``; the
sections ``[arena]``, ``[perception]``, ``[rules]``, ``[flock]``, ``[sim]`` (the
model, described in ``docs/model.md``, and its variants), ``[avoidance]``,
``[predators]`` and ``[wind]`` (world features) and ``[view]`` (hints for the
viewer and the renderer); and the structured ``[[attractors]]``,
``[[obstacles]]`` and ``[path]``; ``[[species]]`` tables make a mixed flock; ``model = "couzin"``
with ``[zones]`` and ``[noise]`` selects the Couzin et al. (2002) zone model, ``model =
"vicsek"`` the Vicsek et al. (1995) model. Every key is optional; a missing key takes its
default (for the Couzin and Vicsek models, the paper's values).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from flock3d.core.objects import ROLES, Object, is_color, normalise_object
from flock3d.core.params import (
    ALIGNMENT_FORMS,
    ARENA_SHAPES,
    COMBINES,
    EMPTY_MEANS,
    FALLOFFS,
    MODELS,
    SPECIES_FIELDS,
    SPECIES_RULES,
    TURN_LIMITS,
    UPDATES,
    Attractor,
    Obstacle,
    Species,
    WaypointPath,
    is_real_number,
    short_repr,
)

__all__ = [
    "Key",
    "Part",
    "KEYS",
    "KEYS_BY_NAME",
    "SECTIONS",
    "STRUCTURED",
    "TOP_LEVEL_PARAMS",
    "ViewHints",
    "SpeciesLook",
    "PARAM_KEY_OF_FIELD",
    "check_kind",
    "convert_structured",
    "species_looks",
    "look_parts",
    "structured_to_toml",
]

Kind = Literal[
    "number",
    "integer",
    "string",
    "boolean",
    "vector3",
    "matrix3",
    "points",
    "choice",
    "items",
    "table",
    "names",
    "color",
    "numbers",
    "scale",
    "motion",
]


@dataclass(frozen=True)
class Part:
    """A key inside a structured value (an attractor's ``weight``, a path's ``points``)."""

    name: str
    kind: Kind
    required: bool = False
    choices: tuple[str, ...] = ()
    """For ``choice``: the values it may take."""


@dataclass(frozen=True)
class Key:
    """One scene key: its dotted name, where it goes, and what it holds."""

    name: str
    """Dotted key, e.g. ``perception.fov``; top-level keys have no dot."""
    target: Literal["params", "view", "scene"]
    """``params``: a :class:`flock3d.Params` field; ``view``: a :class:`ViewHints` field;
    ``scene``: an attribute of the scene itself (name, description, seed)."""
    field: str
    kind: Kind
    doc: str
    choices: tuple[str, ...] = ()
    parts: tuple[Part, ...] = ()
    """For ``items`` (an array of tables) and ``table``: the keys of each table."""


class SpeciesLook(NamedTuple):
    """How one species is drawn: its ``color`` (``"#rrggbb"``) with ``view.color_mode =
    "species"``, None taking the palette's colour of its place in the list; and its ``mesh``
    (one of :data:`MESHES`), None taking the scene's ``view.mesh``."""

    name: str
    color: str | None = None
    mesh: str | None = None


@dataclass(frozen=True)
class ViewHints:
    """How the viewer and ``flock3d render`` show a scene (section ``[view]``)."""

    camera: str = "orbit"
    """Camera: ``orbit`` (turntable), ``arcball``, ``fly``, ``follow`` (tracks the flock) or ``fixed``."""
    camera_distance: float | None = None
    """Distance of the camera from the arena centre; unset frames the whole arena."""
    camera_azimuth: float = 30.0
    """Degrees around the vertical axis."""
    camera_elevation: float = 20.0
    """Degrees above the horizon."""
    mesh: str = "dart"
    """Boid shape: ``dart`` (6 triangles), ``cone`` (16) or ``bird`` (with wings)."""
    boid_size: float = 1.0
    """Boid length, world units."""
    color_mode: str = "heading"
    """Colour boids by ``heading``, ``speed``, ``neighbours`` or a ``uniform`` colour."""
    show_arena: bool = True
    """Draw the arena sphere as a faint wireframe."""
    show_axes: bool = False
    """Draw x (red), y (green), z (blue) axes at the arena centre."""
    trails: float = 0.0
    """Seconds of each boid's path drawn behind it as a fading trail; 0 draws none."""
    show_vectors: bool = False
    """Draw each boid's velocity and its last step's steering (v_new - v_old) / dt as lines."""
    species: tuple[SpeciesLook, ...] = ()
    """The look of each species, in the order of ``Params.species`` (from the ``color`` and
    ``mesh`` of the ``[[species]]`` tables)."""


CAMERAS = ("orbit", "arcball", "fly", "follow", "fixed")
MESHES = ("dart", "cone", "bird")
COLOR_MODES = ("heading", "speed", "neighbours", "uniform", "species")

KEYS: list[Key] = [
    Key("name", "scene", "name", "string", "Short name shown in the viewer's title."),
    Key("description", "scene", "description", "string", "One line saying what the scene shows."),
    Key("seed", "scene", "seed", "integer", "Seed of the random initial state (>= 0)."),
    Key("arena.radius", "params", "arena_radius", "number", "Arena sphere radius R, > 0."),
    Key("arena.center", "params", "arena_center", "vector3", "Arena centre [x, y, z]."),
    Key("arena.confinement_start", "params", "confinement_start", "number", "Fraction of R where confinement starts, in (0, 1]."),
    Key("arena.confinement", "params", "confinement", "number", "Confinement acceleration, units/s^2, >= 0."),
    Key("perception.view_distance", "params", "view_distance", "number", "How far a boid sees, > 0 (inf allowed)."),
    Key("perception.fov", "params", "fov", "number", "Full field-of-view cone in degrees, in (0, 360]."),
    Key("rules.separation_distance", "params", "separation_distance", "number", "Neighbours closer than this repel, in (0, view_distance]."),
    Key("rules.separation", "params", "separation", "number", "Separation weight, >= 0."),
    Key("rules.alignment", "params", "alignment", "number", "Velocity-matching weight, 1/s, >= 0."),
    Key("rules.cohesion", "params", "cohesion", "number", "Centering weight, 1/s^2, >= 0."),
    Key("flock.count", "params", "count", "integer", "Number of boids, >= 0."),
    Key("flock.min_speed", "params", "min_speed", "number", "Lowest speed, >= 0."),
    Key("flock.max_speed", "params", "max_speed", "number", "Highest speed, > 0 and >= min_speed."),
    Key("flock.max_turn_rate", "params", "max_turn_rate", "number", "Largest heading change, degrees/s, > 0 (inf allowed)."),
    Key("flock.init_radius", "params", "init_radius", "number", "Radius of the initial ball; unset: half the arena radius."),
    Key("sim.dt", "params", "dt", "number", "Fixed time step, seconds, > 0."),
    Key("arena.shape", "params", "arena_shape", "choice", "sphere (soft radial push), box (a push per axis), periodic (wrap-around box) or none.", ARENA_SHAPES),
    Key("sim.dimensions", "params", "dimensions", "integer", "3, or 2 for a flock in the plane z = arena.center z."),
    Key("rules.separation_falloff", "params", "separation_falloff", "choice", "inverse (1/d, the default), linear (d), linear_gap (r_s - d) or quadratic ((r_s - d)^2).", FALLOFFS),
    Key("rules.separation_average", "params", "separation_average", "boolean", "Average the separation over the close neighbours (true, the default) or sum it."),
    Key("rules.alignment_distance", "params", "alignment_distance", "number", "Radius of the alignment rule; unset: view_distance."),
    Key("rules.cohesion_distance", "params", "cohesion_distance", "number", "Radius of the cohesion rule; unset: view_distance."),
    Key("rules.separation_fov", "params", "separation_fov", "number", "Cone of the separation rule, degrees; unset: perception.fov."),
    Key("rules.alignment_fov", "params", "alignment_fov", "number", "Cone of the alignment rule, degrees; unset: perception.fov."),
    Key("rules.cohesion_fov", "params", "cohesion_fov", "number", "Cone of the cohesion rule, degrees; unset: perception.fov."),
    Key("avoidance.weight", "params", "avoidance", "number", "Obstacle avoidance acceleration, >= 0."),
    Key("avoidance.lookahead", "params", "avoidance_lookahead", "number", "Look-ahead, seconds at max_speed, > 0."),
    Key("avoidance.margin", "params", "avoidance_margin", "number", "Clearance kept from obstacles, >= 0."),
    Key("predators.count", "params", "predator_count", "integer", "Predators chasing the nearest boid, >= 0."),
    Key("predators.speed", "params", "predator_speed", "number", "Their constant speed, > 0."),
    Key("predators.max_turn_rate", "params", "predator_turn_rate", "number", "Their largest heading change, degrees/s, > 0."),
    Key("predators.flee_distance", "params", "flee_distance", "number", "Boids that see a predator closer than this flee, > 0."),
    Key("predators.flee", "params", "flee", "number", "Flee acceleration, >= 0."),
    Key("wind.acceleration", "params", "wind", "vector3", "Uniform wind acceleration [x, y, z]."),
    Key("wind.gradient", "params", "wind_gradient", "matrix3", "3 x 3 matrix G: wind at p = acceleration + G (p - arena.center)."),
    Key("arena.size", "params", "arena_size", "vector3", "Side lengths [x, y, z] of a box, periodic or wrap arena; unset: 2 * radius each."),
    Key("arena.containment", "params", "containment", "number", "Wall avoidance, units/s^2, >= 0 (0: off): steer sideways when one turn radius ahead lies beyond confinement_start."),
    Key("sim.update", "params", "update", "choice", "synchronous (all from the start-of-step state), sequential (boid after boid, in place) or per_rule (rule after rule, in place).", UPDATES),
    Key("rules.combine", "params", "combine", "choice", "sum (u = v + dt * sum of the terms) or chain (each term in turn changes the velocity, the speed limit a stage).", COMBINES),
    Key("rules.order", "params", "rule_order", "names", "The chain's order: stage names (separation, alignment, cohesion, confinement, containment, attractors, path, obstacles, flee, wind, speed, or your rules' names)."),
    Key("rules.alignment_form", "params", "alignment_form", "choice", "difference (k_a (mean v_j - v_i)) or mean (k_a mean v_j).", ALIGNMENT_FORMS),
    Key("rules.empty_mean", "params", "empty_mean", "choice", "skip (a boid that sees no one gets no alignment or cohesion) or zero (their means taken as zero: slow down, pull to the origin).", EMPTY_MEANS),
    Key("flock.turn_limit", "params", "turn_limit", "choice", "heading (the limit steers the motion) or mesh (the velocity turns freely; the drawn orientation follows at the limit).", TURN_LIMITS),
    Key("model", "params", "model", "choice", "boids (the classic model and its variants), couzin (the 2002 zone model) or vicsek (the 1995 self-propelled particles).", MODELS),
    Key("zones.repulsion", "params", "zone_repulsion", "number", "Couzin: radius r_r of the zone of repulsion, > 0."),
    Key("zones.orientation_width", "params", "zone_orientation_width", "number", "Couzin: width Delta r_o of the zone of orientation, >= 0."),
    Key("zones.attraction_width", "params", "zone_attraction_width", "number", "Couzin: width Delta r_a of the zone of attraction, >= 0."),
    Key("flock.speed", "params", "speed", "number", "Couzin: constant speed s, > 0."),
    Key("noise.sigma", "params", "noise_sigma", "number", "Couzin: angular noise, standard deviation in radians, >= 0."),
    Key("noise.eta", "params", "noise_eta", "number", "Vicsek: angular noise amplitude eta, radians, in [0, 2 pi]: uniform in [-eta/2, eta/2] (on the cap within eta/2 in 3D)."),
    Key("perception.neighbours", "params", "neighbours", "integer", "Topological interaction: the k nearest of the boids seen, >= 1; unset: all seen (metric)."),
    Key("perception.adaptive", "params", "adaptive", "boolean", "StarDisplay's adaptive radius: each boid's radius (at most view_distance) follows the distance of its k-th nearest (needs neighbours)."),
    Key("perception.adaptation", "params", "adaptation", "number", "Fraction of the gap to that distance an adaptive radius closes each step, in (0, 1]."),
    Key("attractors", "params", "attractors", "items", "[[attractors]] tables: points boids seek.",
        parts=(Part("position", "vector3", required=True), Part("weight", "number"), Part("radius", "number"))),
    Key("obstacles", "params", "obstacles", "items", "[[obstacles]] tables: spheres boids steer around.",
        parts=(Part("center", "vector3", required=True), Part("radius", "number", required=True))),
    Key("path", "params", "path", "table", "[path] table: a closed list of waypoints boids follow.",
        parts=(Part("points", "points", required=True), Part("weight", "number"), Part("reach", "number"))),
    Key("objects", "params", "objects", "items", "[[objects]] tables: primitives, ground and meshes that boids stay out of (role obstacle) or in (role arena).",
        parts=(Part("shape", "string", required=True), Part("size", "numbers"), Part("radius", "number"),
               Part("height", "number"), Part("tube", "number"), Part("image", "string"), Part("seed", "integer"),
               Part("file", "string"), Part("position", "vector3"), Part("rotation", "vector3"),
               Part("scale", "scale"), Part("role", "choice", choices=ROLES), Part("color", "color"),
               Part("motion", "motion"))),
    Key("species", "params", "species", "items", "[[species]] tables: the species of a mixed flock, each with its boids, own parameters, look and interaction matrix.",
        parts=(Part("name", "string", required=True), Part("count", "integer", required=True),
               *(Part(name, "number") for name in SPECIES_FIELDS), *(Part(rule, "names") for rule in SPECIES_RULES),
               Part("color", "color"), Part("mesh", "choice", choices=MESHES))),
    Key("view.camera", "view", "camera", "choice", "Camera kind.", CAMERAS),
    Key("view.camera_distance", "view", "camera_distance", "number", "Camera distance from the arena centre; unset: frame the arena."),
    Key("view.camera_azimuth", "view", "camera_azimuth", "number", "Camera azimuth, degrees."),
    Key("view.camera_elevation", "view", "camera_elevation", "number", "Camera elevation, degrees, in [-90, 90]."),
    Key("view.mesh", "view", "mesh", "choice", "Boid shape.", MESHES),
    Key("view.boid_size", "view", "boid_size", "number", "Boid length in world units, > 0."),
    Key("view.color_mode", "view", "color_mode", "choice", "What boid colours show.", COLOR_MODES),
    Key("view.show_arena", "view", "show_arena", "boolean", "Draw the arena sphere."),
    Key("view.show_axes", "view", "show_axes", "boolean", "Draw coordinate axes."),
    Key("view.trails", "view", "trails", "number", "Seconds of path drawn behind each boid as a fading trail, in [0, 10]; 0: none."),
    Key("view.show_vectors", "view", "show_vectors", "boolean", "Draw each boid's velocity and steering as lines."),
]  # fmt: skip

KEYS_BY_NAME: dict[str, Key] = {k.name: k for k in KEYS}
STRUCTURED: tuple[str, ...] = tuple(k.name for k in KEYS if k.kind in ("items", "table"))
TOP_LEVEL_PARAMS: tuple[str, ...] = tuple(
    k.name for k in KEYS if "." not in k.name and k.target == "params" and k.name not in STRUCTURED
)
SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(k.name.split(".")[0] for k in KEYS if "." in k.name))
PARAM_KEY_OF_FIELD: dict[str, str] = {k.field: k.name for k in KEYS if k.target == "params"}

_VIEW_FIELDS = {f.name for f in dataclasses.fields(ViewHints)}
# ViewHints.species comes from the [[species]] tables, whose other keys are parameters.
assert {k.field for k in KEYS if k.target == "view"} == _VIEW_FIELDS - {"species"}, (
    "every ViewHints field needs a key"
)
#: The keys of a [[species]] table that are view hints, not parameters: SpeciesLook's fields.
_LOOK_PARTS = ("color", "mesh")
assert _LOOK_PARTS == SpeciesLook._fields[1:], "every part of a species' look needs a key"


def check_kind(key: Key, value: Any) -> str | None:
    """The problem with ``value``'s type for ``key``, or None when it has the right kind.

    Ranges of model parameters are checked later, by :func:`flock3d.core.params.params_problems`;
    here only view hints and scene attributes get their ranges checked too.
    """
    if key.kind == "number":
        if not is_real_number(value):
            return f"must be a number (got {short_repr(value)})"
    elif key.kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            return f"must be a whole number (got {short_repr(value)})"
    elif key.kind == "string":
        if not isinstance(value, str):
            return f"must be a string (got {value!r})"
    elif key.kind == "boolean":
        if not isinstance(value, bool):
            return f"must be true or false (got {value!r})"
    elif key.kind == "vector3":
        if not _is_vector(value):
            return f"must be an array of 3 numbers like [0, 0, 0] (got {short_repr(value)})"
    elif key.kind == "matrix3":
        if not (isinstance(value, list) and len(value) == 3 and all(_is_vector(row) for row in value)):
            return f"must be 3 rows of 3 numbers like [[0, 0, 0], [0, 0, 0], [0, 0, 0]] (got {short_repr(value)})"
    elif key.kind == "names":
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            return f'must be an array of names like ["separation", "speed"] (got {short_repr(value)})'
    elif key.kind == "choice":
        if value not in key.choices:
            return f"must be {_one_of(key.choices)} (got {value!r})"

    # Ranges of the keys that Params does not validate.
    if key.name == "seed" and not 0 <= value < 2**63:
        return f"must be from 0 to 2**63 - 1 (got {short_repr(value)})"
    if key.name in ("view.camera_distance", "view.boid_size") and not (math.isfinite(value) and value > 0):
        return f"must be a finite number > 0 (got {value!r})"
    if key.name == "view.camera_azimuth" and not math.isfinite(value):
        return f"must be finite (got {value!r})"
    if key.name == "view.camera_elevation" and not -90 <= value <= 90:
        return f"must be in [-90, 90] (got {value!r})"
    if key.name == "view.trails" and not 0 <= value <= 10:
        return f"must be from 0 to 10 seconds (got {value!r})"
    return None


def _one_of(choices: tuple[str, ...]) -> str:
    """``one of 'dart', 'cone', 'bird'``: the words naming a choice's values."""
    return "one of " + ", ".join(repr(c) for c in choices)


def _is_vector(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 3 and all(is_real_number(v) for v in value)


_PART_KIND_TEXT = {
    "vector3": "an array of 3 numbers like [0, 0, 0]",
    "number": "a number",
    "points": "an array of points like [[0, 0, 0], [10, 0, 0]]",
    "string": "a string",
    "integer": "a whole number",
    "names": 'an array of names like ["starlings"]',
    "color": 'a colour like "#3080ff"',
    "numbers": "an array of numbers like [1, 2, 3]",
    "scale": "a number or an array of 3 numbers like [1, 2, 1]",
    "boolean": "true or false",
}


#: The keys of an object's ``motion`` table.
MOTION_PARTS = (Part("points", "points", required=True), Part("times", "numbers", required=True),
                Part("loop", "boolean"), Part("rotations", "points"))  # fmt: skip


def _table_problems(where: str, table: Any, parts: tuple[Part, ...]) -> list[str]:
    import difflib

    if not isinstance(table, dict):
        return [f"{where} must be a table of {', '.join(p.name for p in parts)} (got {short_repr(table)})"]
    problems = []
    names = [p.name for p in parts]
    for name in table:
        if name not in names:
            close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
            hint = f"; did you mean {where}.{close[0]}?" if close else f"; keys are {', '.join(names)}"
            problems.append(f"{where}.{name}: unknown key{hint}")
    for part in parts:
        if part.name not in table:
            if part.required:
                problems.append(f"{where}.{part.name} is required")
            continue
        value = table[part.name]
        if part.kind == "motion":
            problems += _table_problems(f"{where}.motion", value, MOTION_PARTS)
            continue
        ok = {
            "vector3": _is_vector,
            "number": is_real_number,
            "points": lambda v: isinstance(v, list) and all(_is_vector(p) for p in v),
            "string": lambda v: isinstance(v, str),
            "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "names": lambda v: isinstance(v, list) and all(isinstance(n, str) for n in v),
            "color": is_color,
            "numbers": lambda v: isinstance(v, list) and all(is_real_number(x) for x in v),
            "scale": lambda v: is_real_number(v) or _is_vector(v),
            "boolean": lambda v: isinstance(v, bool),
            "choice": lambda v, choices=part.choices: v in choices,
        }[part.kind](value)
        if not ok:
            wanted = _one_of(part.choices) if part.kind == "choice" else _PART_KIND_TEXT[part.kind]
            problems.append(f"{where}.{part.name} must be {wanted} (got {short_repr(value)})")
    return problems


def convert_structured(key: Key, value: Any) -> tuple[Any, list[str]]:
    """A structured key's TOML value as a Params value, or the problems found in it.

    Ranges (a negative weight) are left to Params' own checks, which name the item.
    """
    types = {"attractors": Attractor, "obstacles": Obstacle, "path": WaypointPath, "species": Species,
             "objects": lambda **t: normalise_object(Object(**t))}  # fmt: skip
    make = types[key.name]
    if key.kind == "items":
        if not isinstance(value, list):
            return None, [
                f"{key.name} must be an array of tables: [[{key.name}]] sections (got {short_repr(value)})"
            ]
        problems = [p for i, t in enumerate(value) for p in _table_problems(f"{key.name}[{i}]", t, key.parts)]
        if problems:
            return None, problems
        # A species' look is a view hint (see species_looks), not a parameter.
        return tuple(make(**{k: v for k, v in t.items() if k not in _LOOK_PARTS}) for t in value), []
    problems = _table_problems(key.name, value, key.parts)
    if problems:
        return None, problems
    return make(**{**value, "points": tuple(tuple(p) for p in value["points"])}), []


def species_looks(tables: list[dict]) -> tuple[SpeciesLook, ...]:
    """The view part (the colour and the mesh) of valid ``[[species]]`` tables."""
    return tuple(SpeciesLook(t["name"], *(t.get(part) for part in _LOOK_PARTS)) for t in tables)


def look_parts(look: SpeciesLook) -> dict[str, str]:
    """The parts of a species' look that are set (``color``, ``mesh``), as its table's keys."""
    return {part: getattr(look, part) for part in _LOOK_PARTS if getattr(look, part) is not None}


def structured_to_toml(key: Key, value: Any, write_value, looks: tuple[SpeciesLook, ...] = ()) -> list[str]:
    """Lines of TOML for a structured value (``write_value`` formats one plain value); unset
    fields are left out. ``looks``: the species' view hints, written into their tables."""
    if key.kind == "items":
        lines = []
        for k, item in enumerate(value):
            lines += ["", f"[[{key.name}]]"]
            fields = {name: getattr(item, name) for name in item._fields}
            if k < len(looks):
                fields.update(look_parts(looks[k]))
            lines += [f"{name} = {write_value(v)}" for name, v in fields.items() if v is not None]
        return lines
    if value is None:
        return []
    return ["", f"[{key.name}]"] + [f"{name} = {write_value(getattr(value, name))}" for name in value._fields]
