"""The checks of a world's objects: each object's, each motion's, and the world's as a whole (one
arena, room left to place the boids), as one-line messages."""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from flock3d.core import geometry as g
from flock3d.core.fields import MAX_MAGNITUDE, is_real_number, short_repr
from flock3d.core.fields import finite_vector as _finite_vector
from flock3d.core.fields import is_sequence as _is_sequence
from flock3d.core.fields import number_problem as _check_number
from flock3d.core.objects.oracle import bodies
from flock3d.core.objects.records import (
    MAX_KEYFRAMES,
    MAX_OBJECTS,
    ROLES,
    SCALE_RANGE,
    Motion,
    Object,
    scales,
)
from flock3d.core.objects.shapes import SHAPE_KEYS, SHAPES, shape_of

__all__ = [
    "is_color",
    "motion_problems",
    "object_problems",
    "objects_problems",
    "covered_start_problems",
    "start_samples",
    "needs_field",
]


def _positive(value: Any) -> str | None:
    return _check_number(value, 0.0, MAX_MAGNITUDE, True, False, False)


def object_problems(o: Any) -> list[str]:
    """The problems of one object, each reading after its index (``.radius must be > 0 ...``)."""
    if not isinstance(o, Object):
        return [f" must be a table with a shape (got {short_repr(o)})"]
    if o.shape not in SHAPES:
        close = difflib.get_close_matches(str(o.shape), list(SHAPES), n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return [f".shape must be one of {', '.join(map(repr, SHAPES))} (got {short_repr(o.shape)}){hint}"]
    out = _size_problems(o)
    out += _placement_problems(o)
    if o.role not in ROLES:
        out.append(f".role must be 'obstacle' or 'arena' (got {short_repr(o.role)})")
    elif o.role == "arena" and not SHAPES[o.shape].closed:
        out.append(
            f".role 'arena' needs a closed shape: a {o.shape} encloses nothing (use it as an obstacle)"
        )
    if o.color is not None and not is_color(o.color):
        out.append(f'.color must be a colour like "#3080ff" (got {short_repr(o.color)})')
    if o.motion is not None:
        out += _motion_problems(o)
    return out


def _size_problems(o: Object) -> list[str]:
    out = []
    shape = shape_of(o)
    for name in SHAPE_KEYS:
        if getattr(o, name) is not None and name not in shape.keys:
            takes = ", ".join(shape.keys) if shape.keys else "no size"
            # A scene's own seed written after its last [[objects]] table is TOML's that object's.
            stray = "; a key after a [[objects]] table belongs to it: the scene's seed goes above the tables"
            out.append(
                f".{name} does not apply to a {o.shape} (a {o.shape} takes {takes})"
                + (stray if name == "seed" else "")
            )
    for name in shape.size_keys:
        if getattr(o, name) is None:
            out.append(f".{name} is required for a {o.shape}: {shape.key_text(name)}")
    if out:
        return out
    if o.size is not None:
        n = shape.size_count
        if not (_is_sequence(o.size) and len(o.size) == n and all(_positive(v) is None for v in o.size)):
            like = "[20, 20]" if n == 2 else "[1, 2, 3]"
            out.append(
                f".size must be {n} numbers > 0 and at most {MAX_MAGNITUDE:g}, like {like} "
                f"(got {short_repr(o.size)})"
            )
    for name in ("radius", "height", "tube"):
        if getattr(o, name) is not None and (p := _positive(getattr(o, name))):
            out.append(f".{name} {p}")
    return out or shape.problems(o)


def _placement_problems(o: Object) -> list[str]:
    out = []
    for name in ("position", "rotation"):
        value = getattr(o, name)
        if value is not None and not _finite_vector(value):
            out.append(
                f".{name} must be 3 finite numbers of at most {MAX_MAGNITUDE:g} (got {short_repr(value)})"
            )
    low, high = SCALE_RANGE
    factors = [o.scale] if is_real_number(o.scale) else o.scale
    if not (
        _is_sequence(factors)
        and len(factors) in (1, 3)
        and all(is_real_number(f) and low <= f <= high for f in factors)
    ):
        out.append(
            f".scale must be a number or 3 numbers, each from {low:g} to {high:g} (got {short_repr(o.scale)})"
        )
        return out
    sx, sy, sz = scales(o)
    shape = shape_of(o)
    if shape.scaling == "one" and not sx == sy == sz:
        out.append(
            f".scale must be one number for a {o.shape}: another factor per axis would make it "
            f"no {o.shape} (got {short_repr(o.scale)})"
        )
    elif shape.scaling == "xz" and sx != sz:
        out.append(
            f".scale must be equal along x and z for a {o.shape} (its round section; got "
            f"{short_repr(o.scale)})"
        )
    elif not _size_problems(o) and max(shape.extents(o, sx, sy, sz), default=0.0) > MAX_MAGNITUDE:
        out.append(f".scale makes it larger than {MAX_MAGNITUDE:g} (got {short_repr(o.scale)})")
    return out


def _motion_problems(o: Object) -> list[str]:
    out = motion_problems(o.motion)
    if out:
        return out
    if o.position is not None:
        out.append(".position is given by .motion.points when the object moves; leave it out")
    if o.rotation is not None and o.motion.rotations is not None:
        out.append(".rotation is given by .motion.rotations; leave it out")
    return out


def motion_problems(m: Any) -> list[str]:
    """The problems of a motion (an object's, an attractor's), each reading after its owner."""
    if not isinstance(m, Motion):
        wanted = "a table of points, times, and optionally loop and rotations"
        return [f".motion must be {wanted} (got {short_repr(m)})"]
    out = []
    ok_points = _is_sequence(m.points) and all(_finite_vector(p) for p in m.points)
    if not (ok_points and 2 <= len(m.points) <= MAX_KEYFRAMES):
        out.append(
            f".motion.points must be from 2 to {MAX_KEYFRAMES:,} points of 3 finite numbers "
            f"(got {short_repr(m.points)})"
        )
    times = m.times
    if not (_is_sequence(times) and all(is_real_number(t) and math.isfinite(t) for t in times)):
        out.append(f".motion.times must be a list of finite numbers of seconds (got {short_repr(times)})")
    elif ok_points and len(times) != len(m.points):
        out.append(
            f".motion.times has {len(times)} values but .motion.points has {len(m.points)}; they go in pairs"
        )
    elif any(b <= a for a, b in zip(times, times[1:], strict=False)):
        k = next(i for i in range(1, len(times)) if times[i] <= times[i - 1])
        out.append(
            f".motion.times must increase from each keyframe to the next (got {times[k - 1]:g} "
            f"then {times[k]:g})"
        )
    rotations = m.rotations
    if rotations is not None:
        if not (_is_sequence(rotations) and all(_finite_vector(r) for r in rotations)):
            out.append(
                f".motion.rotations must be a list of [yaw, pitch, roll] (got {short_repr(rotations)})"
            )
        elif ok_points and len(rotations) != len(m.points):
            out.append(
                f".motion.rotations has {len(rotations)} values but .motion.points has "
                f"{len(m.points)}; they go in pairs"
            )
        else:  # spherical interpolation turns the shorter way: 0 to 360 would not turn, 0 to 270 -90
            for k, (a, b) in enumerate(zip(rotations, rotations[1:], strict=False)):
                turn = max(abs(y - x) for x, y in zip(a, b, strict=True))
                if turn >= 180.0:
                    out.append(
                        f".motion.rotations[{k}] to [{k + 1}] turns {turn:g} degrees; each keyframe turns "
                        "the shorter way from the last, so keep them less than 180 degrees apart (add "
                        "keyframes between, e.g. every 120 degrees)"
                    )
                    break
    if not isinstance(m.loop, bool):
        out.append(f".motion.loop must be true or false (got {short_repr(m.loop)})")
    if out:
        return out
    if m.loop and (
        m.points[0] != m.points[-1] or (rotations and not _same_rotation(rotations[0], rotations[-1]))
    ):
        out.append(
            ".motion loops, so it must end where it starts (the last point and rotation equal to the "
            "first), or it would jump"
        )
    return out


def _same_rotation(a, b) -> bool:
    qa, qb = g.euler_quaternion(*a), g.euler_quaternion(*b)
    return abs(abs(sum(x * y for x, y in zip(qa, qb, strict=True))) - 1.0) < 1e-12


def is_color(value: Any) -> bool:
    """A colour written ``"#rrggbb"``."""
    return (
        isinstance(value, str)
        and len(value) == 7
        and value[0] == "#"
        and all(c in "0123456789abcdefABCDEF" for c in value[1:])
    )


def objects_problems(values: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The problems of ``Params.objects`` given every field's value: each object's, then the
    world's (one arena, the arena shapes they go with, room left to place the boids), as
    (field, message) pairs."""
    objects = values["objects"]
    if not _is_sequence(objects):
        return [("objects", f"must be a list of objects (got {short_repr(objects)})")]
    if len(objects) > MAX_OBJECTS:
        return [("objects", f"may be at most {MAX_OBJECTS:,} (got {len(objects):,})")]
    out = [("objects", f"[{i}]{p}") for i, o in enumerate(objects) for p in object_problems(o)]
    if out or not objects:
        return out
    arenas = [i for i, o in enumerate(objects) if o.role == "arena"]
    if len(arenas) > 1:
        out.append(("objects", f"{arenas} all have role 'arena'; a world has at most one arena"))
    elif arenas and values["arena_shape"] != "none":
        out.append(
            (
                "objects",
                f"[{arenas[0]}] is the arena: it needs arena_shape 'none' "
                f"(got {values['arena_shape']!r}), or the world would have two",
            )
        )
    if values["arena_shape"] == "periodic":
        out.append(
            (
                "objects",
                "need an arena that is not periodic: an object would have to be in every image of the box",
            )
        )
    return out


def needs_field(o: Object) -> bool:
    """Whether the object's distances come from a file (a mesh, a heightfield's image)."""
    return shape_of(o).source(o) is not None


#: Points spread over the initial ball (a fixed draw) where room to start is looked for.
_START_SAMPLES = 4096


def covered_start_problems(
    values: Mapping[str, Any], fields: Mapping[int, Any] | None = None
) -> list[tuple[str, str]]:
    """Whether the objects leave room to place the boids: some of 4,096 points spread uniformly
    over the initial ball (disc), one fixed draw, must lie outside every obstacle and inside
    the arena object, by the avoidance margin, at time 0. Judged only when every object's distances are known
    (those read from files need ``fields``).

    Measured by the readable distances (:mod:`.oracle`), point by point until one has room, so
    that a scene is judged without compiling anything (the compiled distances take 3-4 s to
    compile on a fresh install): the first few points usually settle it; a scene with no room
    sweeps every point (about 0.3 s an object)."""
    objects = values["objects"]
    if not objects or any(
        needs_field(o) and (fields is None or i not in fields) for i, o in enumerate(objects)
    ):
        return []
    r0 = 0.5 * values["arena_radius"] if values["init_radius"] is None else values["init_radius"]
    points = start_samples(values["arena_center"], r0, values["dimensions"])
    margin = values["avoidance_margin"]
    measured = bodies(objects, fields)

    def room(body, p: np.ndarray) -> bool:
        return body.clearance(0.0, p)[0] >= margin

    for k, body in enumerate(measured):
        if not any(room(body, p) for p in points):  # object k alone
            # A mesh made in other units (millimetres) is the likely mistake: say its size.
            across = (
                f"; the mesh is {2.0 * body.bound:,.4g} units across (scale it to the world's units)"
                if objects[k].shape == "mesh" and math.isfinite(body.bound)
                else ""
            )
            return [
                (
                    "objects",
                    f"[{k}] with the avoidance_margin covers every spawn point: the initial "
                    f"ball of radius {r0:g} around the arena centre (move it, or set another "
                    f"init_radius){across}",
                )
            ]
    if not any(all(room(body, p) for body in measured) for p in points):
        return [
            (
                "objects",
                f"together with the avoidance_margin cover every spawn point: the initial ball of "
                f"radius {r0:g} around the arena centre (move them, or set another init_radius)",
            )
        ]
    return []


def start_samples(center, r0: float, dimensions: int) -> np.ndarray:
    """(4096, 3) points evenly spread over the ball (disc) of radius r0: a fixed draw. The start's
    check (:func:`covered_start_problems`) looks for room among them, and the spawn
    (:func:`flock3d.core.state.spawn_points`) places the boids it cannot draw at the free ones, so
    that a start the check accepts always starts."""
    rng = np.random.default_rng(0)
    v = rng.standard_normal((_START_SAMPLES, 3))
    if dimensions == 2:
        v[:, 2] = 0.0
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    radii = r0 * rng.random(_START_SAMPLES) ** (1.0 / dimensions)
    return np.asarray(center, dtype=np.float64) + v * radii[:, None]
