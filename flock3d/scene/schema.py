"""What a scene file may contain: every key, where its value goes, and its type.

A scene file is TOML with top-level ``name``, ``description`` and ``seed``; the model's
parameters, each under the key its declaration names (``arena.radius``,
``perception.fov``...: see :mod:`flock3d.core.fields`), so that sections group them
(``[arena]``, ``[perception]``, ``[rules]``, ``[flock]``, ``[sim]``, a world feature's
section, ``[zones]`` and ``[noise]`` of the Couzin and Vicsek models); structured values
as tables (``[[attractors]]``, ``[path]``, ``[[species]]``...); and ``[view]``, hints for
the viewer and the renderer. Every key is optional; a missing key takes its default (for
the Couzin and Vicsek models, the paper's values). ``flock3d scenes --template`` prints
them all with their defaults and meanings.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from flock3d.core.fields import Kind, Part, spec_of
from flock3d.core.objects import Object, is_color, normalise_object
from flock3d.core.params import (
    Attractor,
    Obstacle,
    Params,
    Species,
    WaypointPath,
    is_real_number,
    short_repr,
)
from flock3d.core.terms.attractors import normalise as normalise_attractor

#: The engines a scene may ask for (sim.engine; Flock's ``engine``).
ENGINES = ("fast", "reference", "gpu")

__all__ = [
    "ENGINES",
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


#: Simulated seconds in where a still of a scene is taken when its view sets no start: the spawn
#: ball of the first frame is the least typical moment of a flock.
STILL_START = 5.0


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
    start: float | None = None
    """Simulated seconds in where ``flock3d render`` of the scene begins, its still or its video;
    unset: a still shows the flock :data:`STILL_START` seconds in (not its spawn), a video starts
    at 0."""
    sky: str = "dusk"
    """The sky and its sun: ``day``, ``dusk`` or ``night`` (the light, the sky's colours, the sun's place)."""
    ground_grid: float = 0.2
    """Opacity of the grid drawn on the ground (planes and heightfields), 0 (none) to 1."""
    show_guides: bool = True
    """Draw the path's waypoints and the attractors as markers and lines."""
    species: tuple[SpeciesLook, ...] = ()
    """The look of each species, in the order of ``Params.species`` (from the ``color`` and
    ``mesh`` of the ``[[species]]`` tables)."""


CAMERAS = ("orbit", "arcball", "fly", "follow", "fixed", "axis")
MESHES = ("dart", "cone", "bird")
COLOR_MODES = ("heading", "speed", "neighbours", "uniform", "species")
SKIES = ("day", "dusk", "night")


def _key_of(field: dataclasses.Field) -> Key:
    """The scene key of a Params field, from its declaration (:class:`~flock3d.core.fields.Spec`)."""
    spec = spec_of(field)
    # A choice's words begin with one of its values, which a scene writes in lower case.
    words = spec.doc if spec.kind == "choice" else spec.doc[0].upper() + spec.doc[1:]
    if spec.unit:
        words += f", {spec.unit}"
    if spec.allowed_text() and spec.kind != "choice":  # a choice's words name its values
        words += f", {spec.allowed_text()}"
    if spec.unset:
        words += f"; unset: {spec.unset}"
    if spec.model:
        names = [f'"{name}"' for name in spec.model.split(", ")]
        which = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
        words = f"model = {which} only: {words[0].lower()}{words[1:]}"
    parts = spec.parts
    if field.name == "species":  # a species' look (a view hint) is written in its table too
        parts += (Part("color", "color"), Part("mesh", "choice", choices=MESHES))
    return Key(spec.key, "params", field.name, spec.kind, words + ".", spec.choices, parts)


KEYS: list[Key] = [
    Key("name", "scene", "name", "string", "Short name shown in the viewer's title."),
    Key("description", "scene", "description", "string", "One line saying what the scene shows."),
    Key("seed", "scene", "seed", "integer", "Seed of the random initial state (>= 0)."),
    *(_key_of(field) for field in dataclasses.fields(Params)),
    Key("sim.engine", "scene", "engine", "choice", "What steps the flock: fast (the CPU's cores), reference (readable and slow) or gpu (an NVIDIA GPU); a command's --engine overrides it.", ENGINES),
    Key("view.camera", "view", "camera", "choice",
        "Camera kind: the viewer's orbit, arcball, fly or follow; fixed and axis are render's (the "
        "viewer orbits).", CAMERAS),  # fmt: skip
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
    Key("view.sky", "view", "sky", "choice", "The sky and its sun (the light and the shadows follow it).", SKIES),
    Key("view.ground_grid", "view", "ground_grid", "number", "Opacity of the ground's grid, in [0, 1]; 0: none."),
    Key("view.show_guides", "view", "show_guides", "boolean", "Draw the path's waypoints and the attractors."),
    Key("view.start", "view", "start", "number", "Simulated seconds in where a render of the scene begins (its still, its video), >= 0; unset: a still 5 s in, a video at 0."),
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
    if key.name == "view.start" and not (math.isfinite(value) and value >= 0):
        return f"must be a finite number of seconds >= 0 (got {value!r})"
    if key.name == "view.ground_grid" and not 0 <= value <= 1:
        return f"must be in [0, 1] (got {value!r})"
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
    types = {"attractors": lambda **t: normalise_attractor(Attractor(**t)), "obstacles": Obstacle,
             "path": WaypointPath, "species": Species, "objects": lambda **t: normalise_object(Object(**t))}  # fmt: skip
    make = types[key.name]
    if key.kind == "items":
        if not isinstance(value, list):
            return None, [
                f"{key.name} must be an array of tables: [[{key.name}]] sections (got {short_repr(value)})"
            ]
        problems = [p for i, t in enumerate(value) for p in _table_problems(f"{key.name}[{i}]", t, key.parts)]
        if problems:
            return None, problems
        # A species' look is a view hint (see species_looks), not a parameter; an object's colour
        # is its own (Object.color).
        look = _LOOK_PARTS if key.name == "species" else ()
        return tuple(make(**{k: v for k, v in t.items() if k not in look}) for t in value), []
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
