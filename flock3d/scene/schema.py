"""What a scene file may contain: every key, where its value goes, and its type.

A scene file is TOML with top-level ``name``, ``description`` and ``seed`` and
the sections ``[arena]``, ``[perception]``, ``[rules]``, ``[flock]``, ``[sim]``
(the model, ``shared/spec/model.md``) and ``[view]`` (hints for the viewer and
the renderer). Every key is optional; a missing key takes its default.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Key", "KEYS", "KEYS_BY_NAME", "SECTIONS", "ViewHints", "PARAM_KEY_OF_FIELD", "check_kind"]

Kind = Literal["number", "integer", "string", "boolean", "vector3", "choice"]


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


CAMERAS = ("orbit", "arcball", "fly", "follow", "fixed")
MESHES = ("dart", "cone", "bird")
COLOR_MODES = ("heading", "speed", "neighbours", "uniform")

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
    Key("view.camera", "view", "camera", "choice", "Camera kind.", CAMERAS),
    Key("view.camera_distance", "view", "camera_distance", "number", "Camera distance from the arena centre; unset: frame the arena."),
    Key("view.camera_azimuth", "view", "camera_azimuth", "number", "Camera azimuth, degrees."),
    Key("view.camera_elevation", "view", "camera_elevation", "number", "Camera elevation, degrees, in [-90, 90]."),
    Key("view.mesh", "view", "mesh", "choice", "Boid shape.", MESHES),
    Key("view.boid_size", "view", "boid_size", "number", "Boid length in world units, > 0."),
    Key("view.color_mode", "view", "color_mode", "choice", "What boid colours show.", COLOR_MODES),
    Key("view.show_arena", "view", "show_arena", "boolean", "Draw the arena sphere."),
    Key("view.show_axes", "view", "show_axes", "boolean", "Draw coordinate axes."),
]  # fmt: skip

KEYS_BY_NAME: dict[str, Key] = {k.name: k for k in KEYS}
SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(k.name.split(".")[0] for k in KEYS if "." in k.name))
PARAM_KEY_OF_FIELD: dict[str, str] = {k.field: k.name for k in KEYS if k.target == "params"}

_VIEW_FIELDS = {f.name for f in dataclasses.fields(ViewHints)}
assert {k.field for k in KEYS if k.target == "view"} == _VIEW_FIELDS, "every ViewHints field needs a key"


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_kind(key: Key, value: Any) -> str | None:
    """The problem with ``value``'s type for ``key``, or None when it has the right kind.

    Ranges of model parameters are checked later, by :func:`flock3d.core.params.params_problems`;
    here only view hints and scene attributes get their ranges checked too.
    """
    if key.kind == "number":
        if not _is_number(value):
            return f"must be a number (got {value!r})"
    elif key.kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            return f"must be a whole number (got {value!r})"
    elif key.kind == "string":
        if not isinstance(value, str):
            return f"must be a string (got {value!r})"
    elif key.kind == "boolean":
        if not isinstance(value, bool):
            return f"must be true or false (got {value!r})"
    elif key.kind == "vector3":
        if not (isinstance(value, list) and len(value) == 3 and all(_is_number(v) for v in value)):
            return f"must be an array of 3 numbers like [0, 0, 0] (got {value!r})"
    elif key.kind == "choice":
        if value not in key.choices:
            options = ", ".join(repr(c) for c in key.choices)
            return f"must be one of {options} (got {value!r})"

    # Ranges of the keys that Params does not validate.
    if key.name == "seed" and value < 0:
        return f"must be >= 0 (got {value!r})"
    if key.name in ("view.camera_distance", "view.boid_size") and not (math.isfinite(value) and value > 0):
        return f"must be a finite number > 0 (got {value!r})"
    if key.name == "view.camera_azimuth" and not math.isfinite(value):
        return f"must be finite (got {value!r})"
    if key.name == "view.camera_elevation" and not -90 <= value <= 90:
        return f"must be in [-90, 90] (got {value!r})"
    return None
