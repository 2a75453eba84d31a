"""The world's objects: what a scene's ``[[objects]]`` tables hold, their checks, and their
packed form for the engines.

An :class:`Object` is a plain, hashable record (a ``Params.objects`` item): a primitive
(``box``, ``sphere``, ``cylinder``, ``capsule``, ``torus``, ``plane``), a ``heightfield`` ground
or a ``mesh`` from a file, placed by a position, a rotation and a scale, optionally moving by
keyframes (:class:`Motion`). Its ``role`` says which side is free: an ``obstacle``'s outside
(the default) or an ``arena``'s inside.

What cannot live in ``Params`` (a mesh's sampled distance grid, a heightfield's image) is
built from it elsewhere (:mod:`flock3d.io.meshes`) and handed to :func:`pack_objects` as
``fields``. The packed form is one float64 array plus offsets (see :func:`pack_objects`),
which :func:`clearance` and :func:`object_sdf` read; the step reads the same numbers as one
flat world record, the offsets and the count after the data (:meth:`Objects.world`).
"""

from __future__ import annotations

import difflib
import math
import numbers
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, NamedTuple

import numba
import numpy as np

from flock3d.core import geometry as g
from flock3d.core.fields import MAX_MAGNITUDE, Part, Problem, Spec, is_real_number, short_repr
from flock3d.core.fields import finite_vector as _finite_vector
from flock3d.core.fields import is_sequence as _is_sequence
from flock3d.core.fields import number_problem as _check_number
from flock3d.core.fields import vector as _vector
from flock3d.core.kernel import P_X
from flock3d.core.packed import slots
from flock3d.core.quaternion import right_of
from flock3d.core.terms import Term, inlined

__all__ = [
    "Object",
    "Motion",
    "SDFGrid",
    "SHAPES",
    "ROLES",
    "SIZE_KEYS",
    "MAX_OBJECTS",
    "MAX_KEYFRAMES",
    "SCALE_RANGE",
    "HEIGHTFIELD_SAMPLES",
    "HEADER",
    "is_color",
    "normalise_object",
    "normalise_motion",
    "motion_block",
    "motion_problems",
    "object_problems",
    "objects_problems",
    "covered_start_problems",
    "start_samples",
    "needs_field",
    "scales",
    "pack_objects",
    "object_sdf",
    "object_clearance",
    "clearance",
    "clearances",
    "object_frame",
]

SHAPES = ("mesh", "box", "sphere", "cylinder", "capsule", "torus", "plane", "heightfield")
ROLES = ("obstacle", "arena")
"""``obstacle``: boids stay outside it; ``arena``: boids stay inside it (a closed shape)."""

#: The keys that size each shape (a heightfield also takes one of ``image`` and ``seed``).
SIZE_KEYS: dict[str, tuple[str, ...]] = {
    "box": ("size",),
    "sphere": ("radius",),
    "cylinder": ("radius", "height"),
    "capsule": ("radius", "height"),
    "torus": ("radius", "tube"),
    "plane": (),
    "heightfield": ("size", "height"),
    "mesh": ("file",),
}
_SHAPE_KEYS = ("size", "radius", "height", "tube", "image", "seed", "file")
_SIZE_TEXT = {
    "size": "its side lengths [x, y, z]",
    "radius": "a radius",
    "height": "a height",
    "tube": "the radius of its tube",
    "file": "the mesh file to read",
}

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
    if isinstance(value.seed, numbers.Integral) and not isinstance(value.seed, bool):
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


# -- checks ---------------------------------------------------------------------------------------


def scales(o: Object) -> tuple[float, float, float]:
    """The object's scale per local axis (a valid object's)."""
    return (o.scale,) * 3 if is_real_number(o.scale) else tuple(o.scale)


def _positive(value: Any) -> str | None:
    return _check_number(value, 0.0, MAX_MAGNITUDE, True, False, False)


def object_problems(o: Any) -> list[str]:
    """The problems of one object, each reading after its index (``.radius must be > 0 ...``)."""
    if not isinstance(o, Object):
        return [f" must be a table with a shape (got {short_repr(o)})"]
    if o.shape not in SHAPES:
        close = difflib.get_close_matches(str(o.shape), SHAPES, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return [f".shape must be one of {', '.join(map(repr, SHAPES))} (got {short_repr(o.shape)}){hint}"]
    out = _size_problems(o)
    out += _placement_problems(o)
    if o.role not in ROLES:
        out.append(f".role must be 'obstacle' or 'arena' (got {short_repr(o.role)})")
    elif o.role == "arena" and o.shape in ("plane", "heightfield"):
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
    wanted = SIZE_KEYS[o.shape] + (("image", "seed") if o.shape == "heightfield" else ())
    for name in _SHAPE_KEYS:
        if getattr(o, name) is not None and name not in wanted:
            takes = ", ".join(wanted) if wanted else "no size"
            out.append(f".{name} does not apply to a {o.shape} (a {o.shape} takes {takes})")
    for name in SIZE_KEYS[o.shape]:
        if getattr(o, name) is None:
            what = "its footprint [x, z]" if (o.shape, name) == ("heightfield", "size") else _SIZE_TEXT[name]
            out.append(f".{name} is required for a {o.shape}: {what}")
    if out:
        return out
    if o.size is not None:
        n = 2 if o.shape == "heightfield" else 3
        if not (_is_sequence(o.size) and len(o.size) == n and all(_positive(v) is None for v in o.size)):
            like = "[20, 20]" if n == 2 else "[1, 2, 3]"
            out.append(
                f".size must be {n} numbers > 0 and at most {MAX_MAGNITUDE:g}, like {like} "
                f"(got {short_repr(o.size)})"
            )
    for name in ("radius", "height", "tube"):
        if getattr(o, name) is not None and (p := _positive(getattr(o, name))):
            out.append(f".{name} {p}")
    if out:
        return out
    if o.shape == "torus" and not o.tube < o.radius:
        out.append(f".tube must be < its radius {o.radius:g}, or the ring closes up (got {o.tube:g})")
    if o.shape == "capsule" and o.height < 2.0 * o.radius:
        out.append(
            f".height must be at least twice its radius ({2 * o.radius:g}): it includes both caps "
            f"(got {o.height:g})"
        )
    if o.shape == "heightfield":
        if (o.image is None) == (o.seed is None):
            out.append(
                ".image or .seed is required for a heightfield, not both: a greyscale PNG or a seed "
                "for fractal terrain"
            )
        elif o.seed is not None and not (_whole(o.seed) and 0 <= o.seed < 2**63):
            out.append(f".seed must be a whole number from 0 to 2**63 - 1 (got {short_repr(o.seed)})")
        elif o.image is not None and not (isinstance(o.image, str) and o.image):
            out.append(f".image must be the name of a PNG file (got {short_repr(o.image)})")
    if o.shape == "mesh" and not (isinstance(o.file, str) and o.file):
        out.append(f".file must be the name of a mesh file (got {short_repr(o.file)})")
    return out


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
    if o.shape in ("sphere", "torus") and not sx == sy == sz:
        out.append(
            f".scale must be one number for a {o.shape}: another factor per axis would make it "
            f"no {o.shape} (got {short_repr(o.scale)})"
        )
    elif o.shape in ("cylinder", "capsule") and sx != sz:
        out.append(
            f".scale must be equal along x and z for a {o.shape} (its round section; got "
            f"{short_repr(o.scale)})"
        )
    elif not _size_problems(o) and max(_scaled_sizes(o), default=0.0) > MAX_MAGNITUDE:
        out.append(f".scale makes it larger than {MAX_MAGNITUDE:g} (got {short_repr(o.scale)})")
    return out


def _scaled_sizes(o: Object) -> list[float]:
    sx, sy, sz = scales(o)
    if o.shape == "box":
        return [o.size[0] * sx, o.size[1] * sy, o.size[2] * sz]
    if o.shape == "heightfield":
        return [o.size[0] * sx, o.height * sy, o.size[1] * sz]
    return [v * max(sx, sy, sz) for v in (o.radius, o.height, o.tube) if v is not None]


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


def _whole(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


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
    return o.shape == "mesh" or (o.shape == "heightfield" and o.image is not None)


#: Points spread over the initial ball (a fixed draw) where room to start is looked for.
_START_SAMPLES = 4096


def covered_start_problems(
    values: Mapping[str, Any], fields: Mapping[int, Any] | None = None
) -> list[tuple[str, str]]:
    """Whether the objects leave room to place the boids: some of 4,096 points spread uniformly
    over the initial ball (disc), one fixed draw, must lie outside every obstacle and inside
    the arena object, by the avoidance margin, at time 0. Judged only when every object's distances are known
    (those read from files need ``fields``)."""
    objects = values["objects"]
    if not objects or any(
        needs_field(o) and (fields is None or i not in fields) for i, o in enumerate(objects)
    ):
        return []
    r0 = 0.5 * values["arena_radius"] if values["init_radius"] is None else values["init_radius"]
    points = start_samples(values["arena_center"], r0, values["dimensions"])
    margin = values["avoidance_margin"]
    data, offsets = pack_objects(objects, fields)
    free = np.ones(len(points), dtype=bool)
    for k in range(len(objects)):
        alone = clearances(data, offsets[k : k + 2], points, 0.0) >= margin  # object k alone
        if not alone.any():
            return [
                (
                    "objects",
                    f"[{k}] with the avoidance_margin covers every spawn point: the initial "
                    f"ball of radius {r0:g} around the arena centre (move it, or set another "
                    "init_radius)",
                )
            ]
        free &= alone
    if not free.any():
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


# -- the packed form ------------------------------------------------------------------------------

#: Slots of an object's header in the packed array (see :func:`pack_objects`), and its length.
KIND, SIDE, POSITION, ROTATION, SIZES, MOTION, FIELD, BOUND, HEADER = slots(
    ("kind", 1),
    ("side", 1),
    ("position", 3),
    ("rotation", 4),
    ("sizes", 4),
    ("motion", 1),
    ("field", 1),
    ("bound", 1),
)


def pack_objects(
    objects: Sequence[Object], fields: Mapping[int, Any] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The objects as one float64 array and the offset of each object's record in it.

    Args:
        objects: valid objects (``Params.objects``).
        fields: for each object read from a file, by its index: a mesh's :class:`SDFGrid` (in its
            scaled local frame, as :func:`flock3d.io.meshes.object_fields` builds it), a
            heightfield's (nx, nz) heights in [0, 1] from its image.

    Returns:
        ``(data, offsets)``: (L,) float64 and (K + 1,) int64; object k's record is
        ``data[offsets[k]:offsets[k + 1]]``, a header of :data:`HEADER` slots

        ====  ==========================================================================
        0     kind (:data:`geometry.BOX` ... :data:`geometry.MESH`)
        1     side: +1 an obstacle (free outside), -1 an arena (free inside)
        2-4   position (x, y, z): the frame's origin when still
        5-8   rotation, a unit quaternion (w, x, y, z)
        9-12  sizes, scaled: box half sides (3); sphere r; cylinder r, half height;
              capsule r, half segment; torus ring, tube; heightfield, mesh: unused
        13    index in ``data`` of its motion block, or -1
        14    index in ``data`` of its field block (heightfield, mesh), or -1
        15    a bound B: the distance at x is at least |x - origin| - B (the radius of a
              ball around the local origin holding the shape; for a mesh, the least B
              its grid's nodes allow; inf: unbounded, a plane or a heightfield)
        ====  ==========================================================================

        then its blocks. A motion block: ``K, loop, has_rotations, times (K), points (3K),
        quaternions (4K if has_rotations)`` (:func:`geometry.keyframe_frame`). A mesh's
        block: ``nx, ny, nz, ox, oy, oz, h, values (nx ny nz, C order)``. A heightfield's:
        ``nx, nz, x0, z0, dx, dz, heights (nx nz, C order: x slowest)``, scaled. Meshes given
        the same grid (the same :class:`SDFGrid` values array) share one block: the first
        object's record holds it and the others' slot 14 points there.

    Raises:
        ValueError: when an object read from a file has no field given.
    """
    records = []
    offsets = [0]
    shared: dict[int, tuple[int, float]] = {}  # id of a grid's values -> (its block's index, bound)
    for k, o in enumerate(objects):
        record = _record(k, o, offsets[-1], fields or {}, shared)
        records.append(record)
        offsets.append(offsets[-1] + len(record))
    data = np.concatenate(records) if records else np.zeros(0)
    return np.ascontiguousarray(data, dtype=np.float64), np.asarray(offsets, dtype=np.int64)


def _record(
    k: int, o: Object, start: int, fields: Mapping[int, Any], shared: dict[int, tuple[int, float]]
) -> np.ndarray:
    sx, sy, sz = scales(o)
    header = np.zeros(HEADER)
    header[KIND] = g.KINDS.index(o.shape)
    header[SIDE] = -1.0 if o.role == "arena" else 1.0
    header[POSITION : POSITION + 3] = o.position or (0.0, 0.0, 0.0)
    header[ROTATION : ROTATION + 4] = g.euler_quaternion(*(o.rotation or (0.0, 0.0, 0.0)))
    sizes, bound = _packed_sizes(o, sx, sy, sz)
    header[SIZES : SIZES + len(sizes)] = sizes
    header[BOUND] = bound
    header[MOTION] = header[FIELD] = -1.0
    blocks = [header]
    at = start + HEADER
    if o.motion is not None:
        motion = motion_block(o.motion)
        header[MOTION] = at
        blocks.append(motion)
        at += len(motion)
    grid = fields.get(k) if o.shape == "mesh" else None
    if grid is not None and id(grid.values) in shared:  # fields holds the grid: its id is stable here
        header[FIELD], header[BOUND] = shared[id(grid.values)]
    elif o.shape in ("mesh", "heightfield"):
        field, header[BOUND] = _field_block(k, o, fields, sx, sy, sz)
        header[FIELD] = at
        blocks.append(field)
        if grid is not None:
            shared[id(grid.values)] = (at, header[BOUND])
    return np.concatenate(blocks)


def _packed_sizes(o: Object, sx: float, sy: float, sz: float) -> tuple[list[float], float]:
    if o.shape == "box":
        half = [0.5 * o.size[0] * sx, 0.5 * o.size[1] * sy, 0.5 * o.size[2] * sz]
        return half, math.hypot(*half)
    if o.shape == "sphere":
        return [o.radius * sx], o.radius * sx
    if o.shape in ("cylinder", "capsule"):
        r, hh = o.radius * sx, 0.5 * o.height * sy
        if o.shape == "capsule":
            hh -= r  # the segment between the caps' centres
            return [r, hh], hh + r
        return [r, hh], math.hypot(r, hh)
    if o.shape == "torus":
        return [o.radius * sx, o.tube * sx], (o.radius + o.tube) * sx
    return [], math.inf


def motion_block(m: Motion) -> np.ndarray:
    """A motion packed as :func:`geometry.keyframe_frame` reads it."""
    n = len(m.points)
    parts = [
        np.array([n, float(m.loop), float(m.rotations is not None)]),
        np.asarray(m.times, dtype=np.float64),
        np.asarray(m.points, dtype=np.float64).reshape(-1),
    ]
    if m.rotations is not None:
        parts.append(np.array([g.euler_quaternion(*r) for r in m.rotations]).reshape(-1))
    return np.concatenate(parts)


def _field_block(k: int, o: Object, fields: Mapping[int, Any], sx, sy, sz) -> tuple[np.ndarray, float]:
    if o.shape == "heightfield" and o.seed is not None:
        heights = g.fractal_heights(o.seed, HEIGHTFIELD_SAMPLES)
    elif k in fields:
        heights = fields[k]
    else:
        what = "its mesh's distance grid" if o.shape == "mesh" else "its image's heights"
        raise ValueError(
            f"objects[{k}] ({o.shape}) needs {what}: build the fields with "
            "flock3d.io.meshes.object_fields(params)"
        )
    if o.shape == "mesh":
        grid: SDFGrid = heights
        nx, ny, nz = grid.values.shape
        head = np.array([nx, ny, nz, *grid.origin, grid.cell], dtype=np.float64)
        # The least B with every node's value at least |node| - B: then the interpolant, a convex
        # combination of nodes, and its extension beyond the box are at least |x| - B too (|x| - B
        # is convex), so B bounds the grid's shape as a bounding ball does a primitive's. Nodes
        # hold exact distances or convex combinations of them, so B is about the mesh's own radius.
        axes = [grid.origin[a] + grid.cell * np.arange(n) for a, n in enumerate((nx, ny, nz))]
        x, y, z = axes[0][:, None, None], axes[1][None, :, None], axes[2][None, None, :]
        # The clearance is the interpolant less the grid's skin (:func:`object_clearance`).
        bound = float(np.max(np.sqrt(x * x + y * y + z * z) - grid.values)) + grid_skin(grid.cell)
        return np.concatenate([head, np.ascontiguousarray(grid.values, dtype=np.float64).reshape(-1)]), bound
    heights = np.asarray(heights, dtype=np.float64) * (o.height * sy)
    nx, nz = heights.shape
    width, depth = o.size[0] * sx, o.size[1] * sz
    dx, dz = width / (nx - 1), depth / (nz - 1)
    # The steepest slope of the bilinear ground (at most the steepest edge along x and along z,
    # together): y - h(x, z) changes by at most sqrt(1 + slope^2) per unit moved (:func:`object_room`).
    sx_max = float(np.max(np.abs(np.diff(heights, axis=0)))) / dx
    sz_max = float(np.max(np.abs(np.diff(heights, axis=1)))) / dz
    head = np.array([nx, nz, -0.5 * width, -0.5 * depth, dx, dz])
    return np.concatenate([head, heights.reshape(-1), [math.hypot(sx_max, sz_max)]]), math.inf


# -- distances of packed objects ----------------------------------------------------------------

_jit = numba.njit(cache=True, nogil=True, error_model="numpy")


@_jit
def object_frame(data, o, t):
    """Object o's frame at time t: (px, py, pz, qw, qx, qy, qz), its motion's or its still one."""
    px, py, pz = data[o + POSITION], data[o + POSITION + 1], data[o + POSITION + 2]
    qw, qx, qy, qz = (
        data[o + ROTATION],
        data[o + ROTATION + 1],
        data[o + ROTATION + 2],
        data[o + ROTATION + 3],
    )
    m = int(data[o + MOTION])
    if m >= 0:
        mx, my, mz, mw, mqx, mqy, mqz = g.keyframe_frame(data, m, t)
        px, py, pz = mx, my, mz
        if data[m + 2] != 0.0:
            qw, qx, qy, qz = mw, mqx, mqy, mqz
    return px, py, pz, qw, qx, qy, qz


@_jit
def _local_sdf(data, o, x, y, z):
    kind = int(data[o + KIND])
    a, b, c = data[o + SIZES], data[o + SIZES + 1], data[o + SIZES + 2]
    if kind == g.BOX:
        return g.sdf_box(x, y, z, a, b, c)
    if kind == g.SPHERE:
        return g.sdf_sphere(x, y, z, a)
    if kind == g.CYLINDER:
        return g.sdf_cylinder(x, y, z, a, b)
    if kind == g.CAPSULE:
        return g.sdf_capsule(x, y, z, a, b)
    if kind == g.TORUS:
        return g.sdf_torus(x, y, z, a, b)
    if kind == g.PLANE:
        return g.sdf_plane(x, y, z)
    f = int(data[o + FIELD])
    if kind == g.HEIGHTFIELD:
        return g.heightfield_sdf(
            data,
            f + 6,
            int(data[f]),
            int(data[f + 1]),
            data[f + 2],
            data[f + 3],
            data[f + 4],
            data[f + 5],
            x,
            y,
            z,
        )
    return g.grid_sdf_flat(
        data,
        f + 7,
        int(data[f]),
        int(data[f + 1]),
        int(data[f + 2]),
        data[f + 3],
        data[f + 4],
        data[f + 5],
        data[f + 6],
        x,
        y,
        z,
    )


@_jit
def _sdf_in_frame(data, o, px, py, pz, qw, qx, qy, qz, x, y, z):
    """:func:`object_sdf` with the object's frame at the time given."""
    lx, ly, lz = g.to_local(px, py, pz, qw, qx, qy, qz, x, y, z)
    d, gx, gy, gz = _local_sdf(data, o, lx, ly, lz)
    wx, wy, wz = g.rotate(qw, qx, qy, qz, gx, gy, gz)
    return d, wx, wy, wz


@_jit
def object_sdf(data, o, t, x, y, z):
    """The signed distance of the world point (x, y, z) to the object whose record starts at
    ``data[o]``, at time t, and its outward normal in the world: (d, gx, gy, gz), d < 0 inside
    the shape; the normal is a unit vector, or for a mesh the gradient of its grid's interpolant.
    Queried in the object's frame at t, so a moving object costs what a still one does."""
    px, py, pz, qw, qx, qy, qz = object_frame(data, o, t)
    return _sdf_in_frame(data, o, px, py, pz, qw, qx, qy, qz, x, y, z)


def grid_skin(cell: float) -> float:
    """How far a mesh's grid may put its surface outside the mesh's own: half a cell's diagonal.

    The mesh's signed distance is 1-Lipschitz and the nodes hold it exactly near the surface
    (:func:`flock3d.io.meshes.mesh_grid`), so the trilinear interpolant at x, a convex
    combination of nodes at most half a diagonal from x on average, exceeds the exact distance
    by at most ``sqrt(3) / 2 * cell``, however thin the mesh's parts: a point whose interpolant
    is at least this is outside the mesh (inside, for an arena mesh)."""
    return 0.5 * math.sqrt(3.0) * cell


@_jit
def object_clearance(data, o, t, x, y, z):
    """The room a point has from one object: the signed distance measured into the free side
    (outside an obstacle, inside an arena), and the unit direction of more room: (c, nx, ny,
    nz), c < 0 in the solid part. A mesh's is its grid's, less the grid's skin
    (:func:`grid_skin`): a point with c >= 0 is outside the mesh itself, thin parts included."""
    d, gx, gy, gz = object_sdf(data, o, t, x, y, z)
    s = data[o + SIDE]
    c = s * d
    if int(data[o + KIND]) == g.MESH:
        c -= 0.5 * math.sqrt(3.0) * data[int(data[o + FIELD]) + 6]
    return c, s * gx, s * gy, s * gz


@_jit
def object_room(data, o, t, x, y, z):
    """A lower bound of the distance from a point to the object's solid part, negative inside it
    (where its clearance is): the clearance itself for a primitive (an exact distance) and a mesh
    within its grid's box (its clearance is at most the mesh's distance); beyond a mesh obstacle's
    box, whose grid adds the distance to the box to the value at the nearest point c of it (more
    than the distance, for a point off to the side), ``sqrt(e^2 + r_c^2)``, e = |p - c| and r_c
    the room at c (the mesh lies in the box, so c is between the point and any of it); for a
    heightfield, whose clearance is exact only on flat ground, the height above the ground over
    sqrt(1 + s^2), s its steepest slope (no point of the ground is nearer). A ball of this
    radius around the point holds no solid."""
    kind = int(data[o + KIND])
    if kind != g.HEIGHTFIELD and not (kind == g.MESH and data[o + SIDE] > 0.0):
        return object_clearance(data, o, t, x, y, z)[0]
    px, py, pz, qw, qx, qy, qz = object_frame(data, o, t)
    lx, ly, lz = g.to_local(px, py, pz, qw, qx, qy, qz, x, y, z)
    f = int(data[o + FIELD])
    if kind == g.MESH:
        nx, ny, nz = int(data[f]), int(data[f + 1]), int(data[f + 2])
        ox, oy, oz, h = data[f + 3], data[f + 4], data[f + 5], data[f + 6]
        cx = min(max(lx, ox), ox + (nx - 1) * h)
        cy = min(max(ly, oy), oy + (ny - 1) * h)
        cz = min(max(lz, oz), oz + (nz - 1) * h)
        e = math.sqrt((lx - cx) ** 2 + (ly - cy) ** 2 + (lz - cz) ** 2)
        inner = (
            g.grid_sdf_flat(data, f + 7, nx, ny, nz, ox, oy, oz, h, cx, cy, cz)[0] - 0.5 * math.sqrt(3.0) * h
        )
        if e == 0.0 or inner <= 0.0:  # in the box; or (never, with the grid's margin) touching it at c
            return inner + e
        return math.sqrt(e * e + inner * inner)
    nx, nz = int(data[f]), int(data[f + 1])
    x0, z0, dx, dz = data[f + 2], data[f + 3], data[f + 4], data[f + 5]
    height = g.heightfield_height(data, f + 6, nx, nz, x0, z0, dx, dz, lx, lz)[0]
    steepest = data[f + 6 + nx * nz]
    return (ly - height) / math.sqrt(1.0 + steepest * steepest)


@_jit
def ground_clearance(data, offsets, t, x, y, z):
    """The least height of a point above the grounds (the planes and heightfields) of the objects
    packed in ``data`` with ``offsets``, at time t; inf without a ground."""
    best = math.inf
    for k in range(offsets.shape[0] - 1):
        kind = int(data[offsets[k] + KIND])
        if kind == g.PLANE or kind == g.HEIGHTFIELD:
            best = min(best, object_clearance(data, offsets[k], t, x, y, z)[0])
    return best


@_jit
def clearance(data, offsets, t, x, y, z):
    """The least clearance of a point over every object, its direction, and the object's index:
    (c, nx, ny, nz, k); (inf, 0, 0, 0, -1) without objects."""
    best, bx, by, bz, which = math.inf, 0.0, 0.0, 0.0, -1
    for k in range(offsets.shape[0] - 1):
        c, nx, ny, nz = object_clearance(data, offsets[k], t, x, y, z)
        if c < best:
            best, bx, by, bz, which = c, nx, ny, nz, k
    return best, bx, by, bz, which


@_jit
def clearances(data, offsets, points, t):
    """(n,) the least clearance of each of the (n, 3) points over every object at time t (over
    object k alone with ``offsets[k:k + 2]``)."""
    out = np.empty(points.shape[0])
    for i in range(points.shape[0]):
        out[i] = clearance(data, offsets, t, points[i, 0], points[i, 1], points[i, 2])[0]
    return out


# -- the term: avoidance in the step, and the hard constraint after the move ----------------------

#: Projections out of the objects a covered point gets at most (one is exact for a primitive).
MAX_PUSHES = 8
#: The clearance (world units) a projection aims at, and the least room the march along a move
#: keeps: a hair beyond the surface, so that the time the check reads (the state's clock) and the
#: step's own (now + dt), an ulp apart, agree on the side.
SKIN = 1e-6
#: The march along a move steps at least this fraction of the move: a solid at least 1/MARCH of a
#: move long along it is never crossed, and the march costs at most MARCH distance queries.
MARCH = 64
#: A normal shorter than this is not followed (a grid's gradient vanishes on a thin part's middle).
TRUSTED_NORMAL = 0.25
#: Rings of the escape search, each twice as far as the last: from the depth, up to 2^23 times it.
ESCAPE_RINGS = 24


def packed(objects: Sequence[Object], fields: Mapping[int, Any] | None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pack_objects`, kept for the last few (objects, fields): the engines read them every
    step, and a mesh's grid is megabytes."""
    key = (tuple(objects), id(fields))
    with _packed_lock:
        kept = _packed.get(key)
    if kept is not None and kept[0] is fields:
        return kept[1]
    out = pack_objects(objects, fields)
    with _packed_lock:
        if len(_packed) >= 4:
            _packed.pop(next(iter(_packed)))
        _packed[key] = (fields, out)
    return out


_packed: dict[tuple, tuple[Any, tuple[np.ndarray, np.ndarray]]] = {}
_packed_lock = threading.Lock()


@inlined
def _listed(world):
    """How many objects a world record holds, and where their offsets start: the record is the
    packed data, then the K + 1 offsets (as floats), then K."""
    count = int(world[world.shape[0] - 1])
    return count, world.shape[0] - count - 2


@inlined
def _origin(world, o, t):
    """Where object o's frame is at time t (its still position, read from its header, or its
    motion's)."""
    if world[o + MOTION] < 0.0:
        return world[o + POSITION], world[o + POSITION + 1], world[o + POSITION + 2]
    px, py, pz, _, _, _, _ = object_frame(world, o, t)
    return px, py, pz


@inlined
def _within(ox, oy, oz, bound, x, y, z):
    """Whether (x, y, z) lies within ``bound`` of the origin (ox, oy, oz); any point does of an
    unbounded object (a plane, a heightfield: bound inf)."""
    dx, dy, dz = x - ox, y - oy, z - oz
    return dx * dx + dy * dy + dz * dz <= bound * bound


@inlined
def _reach(world, o, reach):
    """How far from its origin object o may be measured to tell whether a point's clearance is below
    ``reach``: its bound (header slot BOUND: its clearance at x is at least |x - origin| - bound)
    plus reach for an obstacle, and everywhere (inf) for an arena, which bounds nothing outside."""
    return world[o + BOUND] + reach if world[o + SIDE] > 0.0 else math.inf


@inlined
def away(nx, ny, nz, fx, fy, fz, qw, qx, qy, qz):
    """The steer away from a surface of normal n (towards more room), for heading f: the part of
    unit(n) across f, whole (a unit vector; the boid's right when it heads straight in) while the
    boid heads into less room, and as it is (shrinking to 0 as it heads straight out) once it
    heads into more."""
    n = math.sqrt(nx * nx + ny * ny + nz * nz)
    if n == 0.0:
        return 0.0, 0.0, 0.0
    nx, ny, nz = nx / n, ny / n, nz / n
    along = nx * fx + ny * fy + nz * fz
    lx, ly, lz = nx - along * fx, ny - along * fy, nz - along * fz
    if along >= 0.0:
        return lx, ly, lz
    l2 = lx * lx + ly * ly + lz * lz
    if l2 < 1e-12:
        lx, ly, lz = right_of(qw, qx, qy, qz)
        l2 = lx * lx + ly * ly + lz * lz
    inv = 1.0 / math.sqrt(l2)
    return lx * inv, ly * inv, lz * inv


@inlined
def avoidance(px, py, pz, vx, vy, vz, fx, fy, fz, qw, qx, qy, qz, now, world, k, margin, omega):
    """The objects' steer at time ``now``: for each object, the lesser clearance of the boid and of
    the point one turn radius (|v| / omega) ahead; below the margin, k times the urgency
    ``min(1, (margin - c) / margin)`` along :func:`away` from that point's normal."""
    count, at = _listed(world)
    look = math.sqrt(vx * vx + vy * vy + vz * vz) / omega
    hx, hy, hz = px + look * fx, py + look * fy, pz + look * fz
    ax = ay = az = 0.0
    for j in range(count):
        o = int(world[at + j])
        ox, oy, oz = _origin(world, o, now)
        bound = _reach(world, o, margin)  # an object farther than this is more than the margin away
        if not _within(ox, oy, oz, bound + look, px, py, pz):  # from the boid nor from the probe
            continue
        c, nx, ny, nz = math.inf, 0.0, 0.0, 0.0
        if _within(ox, oy, oz, bound, px, py, pz):
            c, nx, ny, nz = object_clearance(world, o, now, px, py, pz)
        if _within(ox, oy, oz, bound, hx, hy, hz):
            ch, hnx, hny, hnz = object_clearance(world, o, now, hx, hy, hz)
            if ch < c:
                c, nx, ny, nz = ch, hnx, hny, hnz
        if c < margin:
            w = k if c <= 0.0 else k * (margin - c) / margin
            sx, sy, sz = away(nx, ny, nz, fx, fy, fz, qw, qx, qy, qz)
            ax += w * sx
            ay += w * sy
            az += w * sz
    return ax, ay, az


@inlined
def _deepest(world, count, at, t, x, y, z):
    """:func:`clearance` over the objects of a world record, sparing those surely clear (reach 0):
    (c, nx, ny, nz, k), k the object's place in the record (-1 when every one is clear)."""
    c, gx, gy, gz, k = math.inf, 0.0, 0.0, 0.0, -1
    for j in range(count):
        o = int(world[at + j])
        ox, oy, oz = _origin(world, o, t)
        if _within(ox, oy, oz, _reach(world, o, 0.0), x, y, z):
            cj, jx, jy, jz = object_clearance(world, o, t, x, y, z)
            if cj < c:
                c, gx, gy, gz, k = cj, jx, jy, jz, j
    return c, gx, gy, gz, k


@inlined
def _least_room(world, count, at, t, x, y, z, sx, sy, sz, reach, inside_convex):
    """The least :func:`object_room` of (x, y, z), a point within ``reach`` of (sx, sy, sz), over the
    objects that may come that near (s, x) at all: one farther from s than its bound plus reach has
    room at every such point. inf when none may. With ``inside_convex``, the arena objects of a
    convex shape (box, sphere, cylinder, capsule) are left out: a segment between two points
    inside one stays inside it."""
    least = math.inf
    for j in range(count):
        o = int(world[at + j])
        if inside_convex and world[o + SIDE] < 0.0 and int(world[o + KIND]) <= g.CAPSULE:
            continue
        ox, oy, oz = _origin(world, o, t)
        if _within(ox, oy, oz, _reach(world, o, reach), sx, sy, sz):
            least = min(least, object_room(world, o, t, x, y, z))
    return least


@_jit
def march(world, count, at, t, ax, ay, az, bx, by, bz, room, free_b):
    """How far along the segment a -> b a point free at a (with ``room`` there) gets at time t: b
    when no solid lies between, else the last point the march reached before the first one.
    ``free_b``: b is known to be free (then no convex arena object needs looking at).

    The march steps by the room it has (a ball that holds no solid), less :data:`SKIN`, or by
    1/:data:`MARCH` of the segment where that is less: only a solid shorter than that along the
    segment can lie unseen between two of its points, and the point it stops at has room."""
    dx, dy, dz = bx - ax, by - ay, bz - az
    length = math.sqrt(dx * dx + dy * dy + dz * dz)
    least_step = length / MARCH
    s, px, py, pz = 0.0, ax, ay, az
    while True:
        step = max(room - SKIN, least_step)
        if s + step >= length:
            end = _least_room(world, count, at, t, bx, by, bz, ax, ay, az, length, free_b)
            return (bx, by, bz) if end > 0.0 else (px, py, pz)
        s += step
        u = s / length
        qx, qy, qz = ax + u * dx, ay + u * dy, az + u * dz
        room = _least_room(world, count, at, t, qx, qy, qz, ax, ay, az, length, free_b)
        if not room > 0.0:
            return px, py, pz
        px, py, pz = qx, qy, qz


@_jit
def push(c, gx, gy, gz, last_c, lx, ly, lz, crease):
    """The displacement of one projection: the Newton step along g to clearance :data:`SKIN`; or,
    in a ``crease`` (the point left the object of normal l, at clearance ``last_c``, into the one
    of normal g), the least step that reaches SKIN from both at once (to first order), when the
    two normals are at least 6 degrees apart."""
    g2 = gx * gx + gy * gy + gz * gz
    if crease:
        l2 = lx * lx + ly * ly + lz * lz
        lg = lx * gx + ly * gy + lz * gz
        det = l2 * g2 - lg * lg
        if det > 0.01 * l2 * g2:
            r0, r1 = SKIN - last_c, SKIN - c
            a, b = (r0 * g2 - r1 * lg) / det, (r1 * l2 - r0 * lg) / det
            return a * lx + b * gx, a * ly + b * gy, a * lz + b * gz
    s = (SKIN - c) / g2
    return s * gx, s * gy, s * gz


@_jit
def _followed(x, y, z, planar):
    """The normal (x, y, z) as a projection follows it (its part in the plane for a planar flock),
    and whether it is at least :data:`TRUSTED_NORMAL` long: a Newton step along a shorter one
    would go more than 1/TRUSTED_NORMAL times the depth."""
    if planar:
        z = 0.0
    return x, y, z, x * x + y * y + z * z >= TRUSTED_NORMAL * TRUSTED_NORMAL


@_jit
def project(world, count, at, t, x, y, z, planar):
    """A point in a solid projected out of the deepest object (:func:`push`), at most
    :data:`MAX_PUSHES` times: (x, y, z, freed). It gives up where a normal is too short to follow
    (:data:`TRUSTED_NORMAL`: a grid's gradient on a thin part's middle; a face nearly across a
    planar flock's plane), so no push goes more than 1/TRUSTED_NORMAL times the depth."""
    c, gx, gy, gz, k = _deepest(world, count, at, t, x, y, z)
    last, pushes = -1, 0
    while c <= 0.0 and pushes < MAX_PUSHES:
        gx, gy, gz, trusted = _followed(gx, gy, gz, planar)
        if not trusted:
            break
        crease = last >= 0 and last != k
        last_c, lx, ly, lz = 0.0, 0.0, 0.0, 0.0
        if crease:
            last_c, lx, ly, lz = object_clearance(world, int(world[at + last]), t, x, y, z)
            lx, ly, lz, crease = _followed(lx, ly, lz, planar)
        dx, dy, dz = push(c, gx, gy, gz, last_c, lx, ly, lz, crease)
        x, y, z = x + dx, y + dy, z + dz
        last, pushes = k, pushes + 1
        c, gx, gy, gz, k = _deepest(world, count, at, t, x, y, z)
    return x, y, z, c > 0.0 and _least_room(world, count, at, t, x, y, z, x, y, z, 0.0, False) > 0.0


@_jit
def escape(world, count, at, t, x, y, z, planar, radius):
    """The roomiest free point of the nearest ring around (x, y, z) that has one: 26 directions (the
    8 of its plane for a planar flock) at ``radius``, then twice as far, :data:`ESCAPE_RINGS`
    times: (x, y, z, found)."""
    for _ in range(ESCAPE_RINGS):
        best, bx, by, bz = 0.0, x, y, z
        for i in range(-1, 2):
            for j in range(-1, 2):
                for k in range(-1, 2):
                    if (i == 0 and j == 0 and k == 0) or (planar and k != 0):
                        continue
                    u = radius / math.sqrt(i * i + j * j + k * k)
                    qx, qy, qz = x + u * i, y + u * j, z + u * k
                    room = _least_room(world, count, at, t, qx, qy, qz, qx, qy, qz, 0.0, False)
                    if room > best:
                        best, bx, by, bz = room, qx, qy, qz
        if best > 0.0:
            return bx, by, bz, True
        radius *= 2.0
    return x, y, z, False


@_jit
def _move(world, count, at, t, ox, oy, oz, x, y, z, length, room, room_p, planar):
    """:func:`keep_out` for a boid free at o (``room`` there, ``room_p`` at p: each over the
    objects that may come within the move's ``length`` of it)."""
    if room_p > 0.0:
        if room + room_p >= length:  # the balls of room around o and p cover the move
            return x, y, z
        return march(world, count, at, t, ox, oy, oz, x, y, z, room, True)
    qx, qy, qz, freed = project(world, count, at, t, x, y, z, planar)
    ex, ey, ez = qx - x, qy - y, qz - z
    if freed and ex * ex + ey * ey + ez * ez <= length * length:
        mx, my, mz = march(world, count, at, t, ox, oy, oz, qx, qy, qz, room, True)
        if mx == qx and my == qy and mz == qz:
            return qx, qy, qz
    return march(world, count, at, t, ox, oy, oz, x, y, z, room, False)


@_jit
def keep_out(x, y, z, ox, oy, oz, world, t, planar):
    """Where a boid that moved from o = (ox, oy, oz) to p = (x, y, z) may be at time t: out of
    every object (with room > 0, :func:`object_room`).

    - Free at o: the move is a segment, checked against every object (:func:`march`). p when
      nothing solid lies between; where p landed in a solid, its projection out (sliding along
      the surface) if that lies no farther from p than the move is long and the segment from o
      to it is as clear; else the last point before the first solid along the move. So no move
      goes through a solid at least 1/:data:`MARCH` of its length thick (along it), and a boid
      ends at most twice its move's length from where it was.
    - Covered at o (an object moved, turned or was edited onto it): o is first projected out of
      the objects (:func:`project`), or where that gives up, moved to the nearest free point of
      the escape search (:func:`escape`); then the boid moves on from there as a free one would,
      by the same move. So a boid an object sweeps over leaves it on the side it was on."""
    count, at = _listed(world)
    dx, dy, dz = x - ox, y - oy, z - oz
    length = math.sqrt(dx * dx + dy * dy + dz * dz)
    room_p = _least_room(world, count, at, t, x, y, z, x, y, z, length, False)
    if room_p > length:  # the ball of room around p holds the whole move: most boids, most steps
        return x, y, z
    room = _least_room(world, count, at, t, ox, oy, oz, ox, oy, oz, length, False)
    if room > 0.0:
        return _move(world, count, at, t, ox, oy, oz, x, y, z, length, room, room_p, planar)
    qx, qy, qz, freed = project(world, count, at, t, ox, oy, oz, planar)
    if not freed:
        depth = -_least_room(world, count, at, t, ox, oy, oz, ox, oy, oz, 0.0, False)
        qx, qy, qz, freed = escape(world, count, at, t, ox, oy, oz, planar, max(depth, SKIN))
    if not freed:  # nowhere free within 2^23 times its depth: the world leaves it no room
        return x, y, z
    x, y, z = qx + dx, qy + dy, qz + dz
    room = _least_room(world, count, at, t, qx, qy, qz, qx, qy, qz, length, False)
    room_p = _least_room(world, count, at, t, x, y, z, x, y, z, length, False)
    return _move(world, count, at, t, qx, qy, qz, x, y, z, length, room, room_p, planar)


def keep_out_reference(position, start, data: np.ndarray, offsets: np.ndarray, t: float, planar: bool):
    """:func:`keep_out`, readably: the same segment, projections and search, measured object by
    object with :func:`object_clearance` and :func:`object_room`."""
    objects = offsets[:-1]

    def norm(v):  # as the compiled code rounds it
        return math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])

    def convex_arena(o):
        return data[o + SIDE] < 0.0 and g.KINDS[int(data[o + KIND])] in (
            "box",
            "sphere",
            "cylinder",
            "capsule",
        )

    def room_at(p, near=None, reach=0.0, inside_convex=False):  # over the objects that may come within reach
        near = p if near is None else near
        rooms = [
            object_room(data, o, t, *p)
            for o in objects
            if not (inside_convex and convex_arena(o))
            and (
                data[o + SIDE] < 0.0
                or norm(near - np.array(object_frame(data, o, t)[:3])) <= data[o + BOUND] + reach
            )
        ]
        return min(rooms, default=math.inf)

    def deepest(p):
        c, n, k = math.inf, np.zeros(3), -1
        for j, o in enumerate(objects):
            cj, *nj = object_clearance(data, o, t, *p)
            if cj < c:
                c, n, k = cj, np.array(nj), j
        return c, n, k

    def followed(n):
        n = np.array(n, dtype=np.float64)
        if planar:
            n[2] = 0.0
        return n, np.dot(n, n) >= TRUSTED_NORMAL * TRUSTED_NORMAL

    def along(a, b, room, free_b):  # march
        length = norm(b - a)
        s, p = 0.0, a
        while True:
            step = max(room - SKIN, length / MARCH)
            if s + step >= length:
                return b if room_at(b, a, length, free_b) > 0.0 else p
            s += step
            q = a + s / length * (b - a)
            room = room_at(q, a, length, free_b)
            if not room > 0.0:
                return p
            p = q

    def projected(p):
        c, n, k = deepest(p)
        last, pushes = -1, 0
        while c <= 0.0 and pushes < MAX_PUSHES:
            n, trusted = followed(n)
            if not trusted:
                break
            crease, last_c, previous = last >= 0 and last != k, 0.0, np.zeros(3)
            if crease:
                last_c, *previous = object_clearance(data, objects[last], t, *p)
                previous, crease = followed(previous)
            p = p + np.array(push(c, *n, last_c, *previous, crease))
            last, pushes = k, pushes + 1
            c, n, k = deepest(p)
        return p, c > 0.0 and room_at(p) > 0.0

    def searched(p, radius):  # escape
        steps = [np.array(d, dtype=np.float64) for d in np.ndindex(3, 3, 3) if d != (1, 1, 1)]
        steps = [d - 1.0 for d in steps if not (planar and d[2] != 1)]
        for _ in range(ESCAPE_RINGS):
            rooms = [(room_at(p + radius / norm(d) * d), i) for i, d in enumerate(steps)]
            best, i = max(rooms, key=lambda r: (r[0], -r[1]))
            if best > 0.0:
                return p + radius / norm(steps[i]) * steps[i]
            radius *= 2.0
        return p

    def moved(o, p, length, room, room_p):  # from a free o
        if room_p > 0.0:
            return p if room + room_p >= length else along(o, p, room, True)
        q, freed = projected(p)
        near = np.dot(q - p, q - p) <= length * length
        if freed and near and np.array_equal(along(o, q, room, True), q):
            return q
        return along(o, p, room, False)

    p, o = np.array(position, dtype=np.float64), np.array(start, dtype=np.float64)
    move = p - o
    length = norm(move)
    room_p = room_at(p, p, length)
    if room_p > length:
        return p
    room = room_at(o, o, length)
    if room > 0.0:
        return moved(o, p, length, room, room_p)
    q, freed = projected(o)
    if not freed:
        q = searched(o, max(-room_at(o), SKIN))
        if not room_at(q) > 0.0:
            return p
    return moved(q, q + move, length, room_at(q, q, length), room_at(q + move, q + move, length))


OBJECTS = Spec(
    "objects", "[[objects]] tables: primitives, ground and meshes that boids stay out of (role obstacle) "
    "or in (role arena)", kind="items", checked=False,
    parts=(Part("shape", "string", required=True), Part("size", "numbers"), Part("radius", "number"),
           Part("height", "number"), Part("tube", "number"), Part("image", "string"), Part("seed", "integer"),
           Part("file", "string"), Part("position", "vector3"),
           Part("rotation", "vector3"), Part("scale", "scale"), Part("role", "choice", choices=ROLES),
           Part("color", "color"), Part("motion", "motion")),
)  # fmt: skip


class Objects(Term):
    """The world's objects: boids steer away from them looking one turn radius ahead (as the
    arena's containment does), and after each move a boid that entered one is put back on its
    surface (:func:`keep_out`): no boid is ever inside an obstacle or outside the arena object.
    The constraint moves the position only: the velocity and orientation keep the turn and speed
    limits, and the steer turns the boid away at the next step. Both engines measure with the
    same compiled functions (:func:`object_clearance`), on the same grids."""

    name = "objects"
    module = __name__
    fields = ("objects",)
    switches = ("objects",)
    needs = "it needs objects"
    world_width = 1  # one record: the packed objects, their offsets, their count
    constrains = True
    species_values: ClassVar[frozenset[str]] = frozenset({"omega"})
    label = "5 objects (primitives)"

    def present(self, params):
        return bool(params.objects)

    def values(self, params):
        return {"avoidance": params.avoidance, "margin": params.avoidance_margin,
                "omega": math.radians(params.max_turn_rate)}  # fmt: skip

    def world(self, params, fields=None):
        data, offsets = packed(params.objects, fields)
        return np.concatenate([data, offsets.astype(np.float64), [len(offsets) - 1.0]]).reshape(-1, 1)

    def line(self, g):
        v = g.v
        return [f"tx, ty, tz = {g.term(self)}.avoidance(px, py, pz, vx, vy, vz, fx, fy, fz, qw, qx, qy, qz, "
                f"now, {g.world(self)}, {v('avoidance')}, {v('margin')}, {v('omega')})"]  # fmt: skip

    def example(self, base):
        from flock3d.core.terms.attractors import ring

        shapes = [
            Object("sphere", radius=3.0),
            Object("box", size=(5.0, 5.0, 5.0), rotation=(30.0, 20.0, 0.0)),
            Object("cylinder", radius=2.0, height=8.0),
            Object("capsule", radius=2.0, height=8.0),
            Object("torus", radius=3.0, tube=1.0, rotation=(0.0, 0.0, 90.0)),
        ]
        places = zip(shapes, ring(base)[:5], strict=True)
        return base.replace(objects=[o._replace(position=p) for o, p in places])

    def constraint(self, g):
        start = ", ".join(f"staged[{P_X + a}, slot]" for a in range(3))
        return [f"mx, my, mz = {g.term(self)}.keep_out(mx, my, mz, {start}, {g.world(self)}, later, planar)"]

    def reference(self, boid, world, velocity, params):
        data, offsets = packed(params.objects, world.fields)
        f = boid.heading(params)
        ahead = boid.position + np.linalg.norm(velocity) / math.radians(params.max_turn_rate) * f
        margin, total = params.avoidance_margin, np.zeros(3)
        for k in range(len(offsets) - 1):
            c, *n = object_clearance(data, offsets[k], world.time, *boid.position)
            c_ahead, *n_ahead = object_clearance(data, offsets[k], world.time, *ahead)
            if c_ahead < c:
                c, n = c_ahead, n_ahead
            if c < margin:
                urgency = 1.0 if c <= 0.0 else (margin - c) / margin
                total += params.avoidance * urgency * _away_reference(np.array(n), f, boid)
        return total

    def constrained(self, boid, before, world, params):
        data, offsets = packed(params.objects, world.fields)
        later = world.time + params.dt
        position = keep_out_reference(
            boid.position, before.position, data, offsets, later, params.dimensions == 2
        )
        return replace(boid, position=position)

    def problems(self, values, reported):
        if values["objects"] == ():
            return []
        problems = [Problem(*p) for p in objects_problems(values)]
        depends = {"objects", "arena_center", "init_radius", "arena_radius", "avoidance_margin", "dimensions"}
        if not problems and not reported & depends:
            problems = [Problem(*p) for p in covered_start_problems(values)]
        return problems


def _away_reference(n: np.ndarray, f: np.ndarray, boid) -> np.ndarray:
    """:func:`away`, readably."""
    if not np.any(n):
        return np.zeros(3)
    n = n / np.linalg.norm(n)
    across = n - np.dot(n, f) * f
    if np.dot(n, f) >= 0.0:
        return across
    if np.dot(across, across) < 1e-12:
        across = np.asarray(boid.orientation.rotate(np.array([1.0, 0.0, 0.0])))
    return across / np.linalg.norm(across)


TERM = Objects()
