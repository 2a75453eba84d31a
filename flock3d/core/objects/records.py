"""The records of a world's objects: what a scene's ``[[objects]]`` tables hold, as plain, hashable
values (``Params.objects`` items), and the normalising that makes them so."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from flock3d.core.fields import is_real_number, is_whole_number
from flock3d.core.fields import is_sequence as _is_sequence
from flock3d.core.fields import vector as _vector

__all__ = [
    "Object",
    "Motion",
    "SDFGrid",
    "ROLES",
    "MAX_OBJECTS",
    "MAX_KEYFRAMES",
    "SCALE_RANGE",
    "HEIGHTFIELD_SAMPLES",
    "normalise_object",
    "normalise_motion",
    "scales",
]

ROLES = ("obstacle", "arena")
"""``obstacle``: boids stay outside it; ``arena``: boids stay inside it (a closed shape)."""

#: Objects a scene may hold: each adds a distance per boid and step.
MAX_OBJECTS = 1000
#: Keyframes a motion may hold.
MAX_KEYFRAMES = 100_000
#: A scale factor's bounds: 0 collapses a shape, and beyond these a typo is likelier than a unit.
SCALE_RANGE = (1e-6, 1e6)
#: Nodes along each side of a heightfield generated from a seed.
HEIGHTFIELD_SAMPLES = 129


class Motion(NamedTuple):
    """Keyframes of a moving object: at ``times[k]`` (seconds) its origin is at ``points[k]``
    (world units), linear between keyframes; with ``rotations`` ([yaw, pitch, roll] degrees a
    keyframe) it turns too, spherically between them. ``loop``: repeat with the period
    ``times[-1] - times[0]`` (a looping motion must end where it starts, so the object never
    jumps); otherwise it holds its first keyframe before ``times[0]`` and its last after."""

    points: tuple[tuple[float, float, float], ...]
    times: tuple[float, ...]
    loop: bool = False
    rotations: tuple[tuple[float, float, float], ...] | None = None


class Object(NamedTuple):
    """One object of the world (a ``[[objects]]`` table). Unset values are None.

    Sizes, by shape (world units, before scaling): box ``size`` [x, y, z]; sphere ``radius``;
    cylinder and capsule ``radius`` and ``height`` (along the local Y axis, a capsule's height
    including its caps); torus ``radius`` (of its ring, in the local XZ plane) and ``tube``;
    heightfield ``size`` [x, z] (its footprint along the local X and Z axes, centred on its
    origin), ``height`` (of its highest point above its origin) and ``image`` (a greyscale
    PNG: column i runs along +X, row k along +Z, black is 0 and white ``height``) or ``seed``
    (fractal terrain); mesh ``file`` (OBJ, STL, PLY, glTF/GLB); a plane has none (its solid
    side is local y < 0).
    """

    shape: str
    size: tuple[float, ...] | None = None
    radius: float | None = None
    height: float | None = None
    tube: float | None = None
    image: str | None = None
    seed: int | None = None
    file: str | None = None
    position: tuple[float, float, float] | None = None
    """The origin of its frame in the world; None: (0, 0, 0), or the motion's."""
    rotation: tuple[float, float, float] | None = None
    """[yaw, pitch, roll], degrees (:mod:`flock3d.core.geometry` defines the convention)."""
    scale: float | tuple[float, float, float] = 1.0
    """A factor, or one per local axis: a sphere or a torus takes one, a cylinder or a
    capsule equal x and z factors."""
    role: str = "obstacle"
    color: str | None = None
    """How it is drawn, ``"#rrggbb"``; None: the viewer's choice."""
    motion: Motion | None = None


class SDFGrid(NamedTuple):
    """Signed distances sampled on a cubic lattice, in an object's (scaled) local frame.

    ``values[i, j, k]`` is the distance at ``origin + (i, j, k) * cell``: (nx, ny, nz) float64,
    C-contiguous, each side at least 2 nodes. Interpolated by :func:`geometry.grid_sdf`.
    """

    origin: tuple[float, float, float]
    cell: float
    values: np.ndarray


# -- normalising (what Params stores) -----------------------------------------------------------


def normalise_object(value: Any) -> Any:
    """``value`` as an :class:`Object` of plain tuples and floats when it is one or a mapping of
    its keys; anything else is returned as it is, for the checks to report."""
    if isinstance(value, Mapping) and "shape" in value and set(value) <= set(Object._fields):
        value = Object(**value)
    if not isinstance(value, Object):
        return value
    changes: dict[str, Any] = {}
    if _is_sequence(value.size) and all(is_real_number(v) for v in value.size):
        changes["size"] = tuple(float(v) for v in value.size)
    for name in ("position", "rotation"):
        changes[name] = _vector(getattr(value, name)) or getattr(value, name)
    if _is_sequence(value.scale):
        changes["scale"] = _vector(value.scale) or value.scale
    for name in ("radius", "height", "tube"):
        if is_real_number(getattr(value, name)):
            changes[name] = float(getattr(value, name))
    if is_real_number(value.scale):
        changes["scale"] = float(value.scale)
    if is_whole_number(value.seed):
        changes["seed"] = int(value.seed)
    changes["motion"] = normalise_motion(value.motion)
    return value._replace(**changes)


def normalise_motion(value: Any) -> Any:
    """``value`` as a :class:`Motion` of plain tuples and floats when it is one or a mapping of its
    keys; anything else as it is, for the checks to report."""
    if isinstance(value, Mapping) and {"points", "times"} <= set(value) <= set(Motion._fields):
        value = Motion(**value)
    if not isinstance(value, Motion):
        return value
    changes: dict[str, Any] = {}
    for name in ("points", "rotations"):
        rows = getattr(value, name)
        if _is_sequence(rows):
            changes[name] = tuple(_vector(r) or r for r in rows)
    if _is_sequence(value.times) and all(is_real_number(t) for t in value.times):
        changes["times"] = tuple(float(t) for t in value.times)
    return value._replace(**changes)


def scales(o: Object) -> tuple[float, float, float]:
    """The object's scale per local axis (a valid object's)."""
    return (o.scale,) * 3 if is_real_number(o.scale) else tuple(o.scale)
