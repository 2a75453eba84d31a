"""The world's objects as the reference engine measures them: each shape's signed distance
written from its definition, in numpy and plain Python, with frames by pyquaternion.

Nothing here calls the compiled code of :mod:`flock3d.core.geometry` or
:mod:`flock3d.core.objects.distance`: the two engines measure the same objects independently,
so fast == reference checks the geometry as well as the plumbing. The definitions, the medial
choices included (which normal a point with no single nearest surface gets), are those stated in
:mod:`flock3d.core.geometry`'s notes; each object is read from its record (``Params.objects``)
and the fields its files became, not from the packed array the fast engine reads.

A :class:`Body` is one object: its frame at a time, its signed distance (d < 0 inside the
shape) with the outward normal, its clearance (the distance measured into the free side) and
its room (a lower bound of the distance to its solid part). :func:`bodies` builds them.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from pyquaternion import Quaternion

from flock3d.core.objects.packing import Terrain, grid_bound, grid_skin, object_field, terrain
from flock3d.core.objects.records import Motion, Object, SDFGrid, scales
from flock3d.core.objects.shapes import shape_of

__all__ = ["Body", "bodies", "euler", "slerp", "motion_frame", "local_distance", "grid_distance",
           "ground_height", "SDFS"]  # fmt: skip

X, Y = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])


# -- frames ---------------------------------------------------------------------------------------


def euler(yaw: float, pitch: float, roll: float) -> Quaternion:
    """The rotation ``[yaw, pitch, roll]`` [degrees]: R_y(yaw) R_x(pitch) R_z(roll), roll first."""
    return (
        Quaternion(axis=Y, degrees=yaw)
        * Quaternion(axis=X, degrees=pitch)
        * Quaternion(axis=[0.0, 0.0, 1.0], degrees=roll)
    )


def slerp(a: Quaternion, b: Quaternion, u: float) -> Quaternion:
    """The rotation a fraction u [0, 1] of the way from a to b along the shorter arc. Where the
    two are nearly equal the chord stands for the arc (they differ by under 1e-13 there)."""
    a, b = a.q, b.q
    dot = float(a @ b)
    if dot < 0.0:  # q and -q are one rotation: take the nearer
        b, dot = -b, -dot
    if dot > 0.9999995:
        wa, wb = 1.0 - u, u
    else:
        half = math.acos(dot)
        wa, wb = math.sin((1.0 - u) * half) / math.sin(half), math.sin(u * half) / math.sin(half)
    q = wa * a + wb * b
    return Quaternion(q / np.linalg.norm(q))


def motion_frame(m: Motion, t: float) -> tuple[np.ndarray, Quaternion | None]:
    """Where a keyframed motion has its origin at time t [s], and its rotation (None without
    rotation keyframes): linear and spherical between keyframes; a looping one repeats with the
    period ``times[-1] - times[0]``, one that does not holds its ends."""
    times = np.asarray(m.times, dtype=np.float64)
    if m.loop:
        t = times[0] + (t - times[0]) % (times[-1] - times[0])
    t = min(max(t, times[0]), times[-1])
    lo = min(int(np.searchsorted(times, t, side="right")) - 1, len(times) - 2)
    u = (t - times[lo]) / (times[lo + 1] - times[lo])
    a, b = np.asarray(m.points[lo], dtype=np.float64), np.asarray(m.points[lo + 1], dtype=np.float64)
    if m.rotations is None:
        return a + u * (b - a), None
    return a + u * (b - a), slerp(euler(*m.rotations[lo]), euler(*m.rotations[lo + 1]), u)


# -- closed forms, in the shape's frame: (d, unit outward normal) ------------------------------


def _sign(v: float) -> float:
    return 1.0 if v >= 0.0 else -1.0


def _radial(p: np.ndarray) -> tuple[float, np.ndarray]:
    """The distance from the Y axis and the unit direction away from it (+X on the axis)."""
    rho = math.hypot(p[0], p[2])
    return rho, (np.array([p[0] / rho, 0.0, p[2] / rho]) if rho > 0.0 else X)


def _box(p: np.ndarray, sizes: Sequence[float]) -> tuple[float, np.ndarray]:
    """Half sides (hx, hy, hz). Inside: the nearest face's normal (ties: x, then y; a coordinate
    of 0 takes the positive face)."""
    q = np.abs(p) - np.asarray(sizes[:3])
    signs = np.where(p >= 0.0, 1.0, -1.0)
    if np.any(q > 0.0):
        out = np.maximum(q, 0.0)
        d = float(np.linalg.norm(out))
        return d, signs * out / d
    face = int(np.argmax(q))  # the first of the largest
    n = np.zeros(3)
    n[face] = signs[face]
    return float(q[face]), n


def _sphere(p: np.ndarray, sizes: Sequence[float]) -> tuple[float, np.ndarray]:
    """Radius r. At the centre the normal is +Y."""
    n = float(np.linalg.norm(p))
    return (n - sizes[0], p / n) if n > 0.0 else (-sizes[0], Y)


def _cylinder(p: np.ndarray, sizes: Sequence[float]) -> tuple[float, np.ndarray]:
    """Radius r around Y, from y = -hh to hh. Inside: the nearer of side and cap (ties: side)."""
    r, hh = sizes[0], sizes[1]
    rho, radial = _radial(p)
    side, cap = rho - r, abs(p[1]) - hh
    up = _sign(p[1]) * Y
    if side > 0.0 or cap > 0.0:
        a, b = max(side, 0.0), max(cap, 0.0)
        d = math.hypot(a, b)
        return d, (a * radial + b * up) / d
    return (side, radial) if side >= cap else (cap, up)


def _capsule(p: np.ndarray, sizes: Sequence[float]) -> tuple[float, np.ndarray]:
    """The points within r of the segment (0, -hh, 0)-(0, hh, 0). On the segment: +X."""
    r, hh = sizes[0], sizes[1]
    v = p - np.array([0.0, min(max(p[1], -hh), hh), 0.0])
    n = float(np.linalg.norm(v))
    return (n - r, v / n) if n > 0.0 else (-r, X)


def _torus(p: np.ndarray, sizes: Sequence[float]) -> tuple[float, np.ndarray]:
    """The points within ``tube`` of the circle of radius ``ring`` in the XZ plane. On that
    circle: radial, outwards (+X on the axis)."""
    ring, tube = sizes[0], sizes[1]
    _, radial = _radial(p)
    v = p - ring * radial  # from the circle's nearest point
    n = float(np.linalg.norm(v))
    return (n - tube, v / n) if n > 0.0 else (-tube, radial)


def _plane(p: np.ndarray, sizes: Sequence[float]) -> tuple[float, np.ndarray]:
    """The half-space y < 0 is solid."""
    return float(p[1]), Y


#: Each primitive's signed distance in its frame, by shape: f(p (3,), sizes) -> (d, n (3,)).
SDFS = {"box": _box, "sphere": _sphere, "cylinder": _cylinder, "capsule": _capsule, "torus": _torus,
        "plane": _plane}  # fmt: skip


# -- sampled fields -------------------------------------------------------------------------------


def grid_distance(grid: SDFGrid, p: np.ndarray) -> tuple[float, np.ndarray]:
    """A grid's distance at p (its frame) and its gradient: the trilinear interpolant of the 8
    nodes around p and its exact derivative inside the grid's box; beyond it, the value at the
    box's nearest point c plus |p - c|, whose gradient is the unit offset along the axes where p
    is beyond the box.

    Args:
        grid: distances [world units] at the nodes ``origin + (i, j, k) cell`` (each side >= 2).
        p: (3,) a point of the grid's frame [world units].

    Returns:
        (d, gradient (3,)): the distance [world units] and its gradient [1].
    """
    values, h = grid.values, grid.cell
    cells = np.array(values.shape) - 1
    at = np.clip((p - np.asarray(grid.origin)) / h, 0.0, cells)  # in cells, within the box
    corner = np.minimum(at.astype(np.int64), cells - 1)
    f = at - corner
    i, j, k = corner
    nodes = values[i : i + 2, j : j + 2, k : k + 2]
    w = np.stack([1.0 - f, f], axis=1)  # (3, 2): each axis's weights of its lower and upper node
    dw = np.array([-1.0, 1.0]) / h  # their derivatives along the axis [1 / world unit]
    d = np.einsum("ijk,i,j,k", nodes, w[0], w[1], w[2])
    gradient = np.array([np.einsum("ijk,i,j,k", nodes, dw, w[1], w[2]),
                         np.einsum("ijk,i,j,k", nodes, w[0], dw, w[2]),
                         np.einsum("ijk,i,j,k", nodes, w[0], w[1], dw)])  # fmt: skip
    e = p - (np.asarray(grid.origin) + at * h)
    beyond = (p - np.asarray(grid.origin)) / h != at
    e[~beyond] = 0.0
    length = float(np.linalg.norm(e))
    if length > 0.0:
        d += length
        gradient[beyond] = e[beyond] / length
    return float(d), gradient


def ground_height(ground: Terrain, x: float, z: float) -> tuple[float, float, float]:
    """A heightfield's height at (x, z) (its frame) and its slopes (dh/dx, dh/dz): bilinear over
    the nodes; beyond an edge the edge's height continues (slope 0 across it).

    Args:
        ground: the heights [world units] over the nodes (x0 + i dx, z0 + k dz).
        x, z: a point of the heightfield's frame [world units].
    """
    heights = ground.heights
    cells = np.array(heights.shape) - 1
    u = np.array([(x - ground.x0) / ground.dx, (z - ground.z0) / ground.dz])
    inside = (u >= 0.0) & (u <= cells)
    u = np.clip(u, 0.0, cells)
    i, k = np.minimum(u.astype(np.int64), cells - 1)
    fx, fz = u - (i, k)
    nodes = heights[i : i + 2, k : k + 2]
    wx, wz = np.array([1.0 - fx, fx]), np.array([1.0 - fz, fz])
    height = float(wx @ nodes @ wz)
    sx = float(np.array([-1.0, 1.0]) @ nodes @ wz) / ground.dx if inside[0] else 0.0
    sz = float(wx @ nodes @ np.array([-1.0, 1.0])) / ground.dz if inside[1] else 0.0
    return height, sx, sz


def _ground(ground: Terrain, p: np.ndarray) -> tuple[float, np.ndarray]:
    """The height above the ground over the slope factor sqrt(1 + |grad h|^2), and the ground's
    unit normal."""
    height, sx, sz = ground_height(ground, p[0], p[2])
    up = np.array([-sx, 1.0, -sz])
    norm = float(np.linalg.norm(up))
    return (p[1] - height) / norm, up / norm


# -- objects --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Body:
    """One object of the world as the reference engine measures it."""

    shape: str
    side: float
    """+1 an obstacle (free outside), -1 an arena (free inside)."""
    position: np.ndarray
    """(3,) its frame's origin when still [world units]."""
    rotation: Quaternion
    """Its frame's rotation when still."""
    sizes: tuple[float, ...]
    """Its sizes as the shape's closed form takes them, scaled (:meth:`Shape.packed`)."""
    bound: float
    """B: its clearance at x is at least |x - origin| - B (inf: unbounded)."""
    convex: bool
    motion: Motion | None = None
    grid: SDFGrid | None = None
    """A mesh's distance grid, in its scaled frame."""
    ground: Terrain | None = None
    """A heightfield's ground."""
    _placed: dict = field(default_factory=dict, init=False, repr=False)
    """A moving body's :meth:`placed` frames at the last few times asked: every boid of a step
    asks for the same time, and the frame is slerped from Euler angles."""

    def frame(self, t: float) -> tuple[np.ndarray, Quaternion]:
        """Its origin (3,) and rotation at time t [s]."""
        if self.motion is None:
            return self.position, self.rotation
        position, rotation = motion_frame(self.motion, t)
        return position, self.rotation if rotation is None else rotation

    @cached_property
    def _still_matrix(self) -> np.ndarray:
        return self.rotation.rotation_matrix

    def placed(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Its frame at time t as its origin (3,) and rotation matrix R (3, 3): a point p of the
        world is R^T (p - origin) in the frame."""
        if self.motion is None:
            return self.position, self._still_matrix
        at = self._placed.get(t)
        if at is None:
            origin, rotation = self.frame(t)
            if len(self._placed) >= 4:
                self._placed.clear()
            at = self._placed[t] = (origin, rotation.rotation_matrix)
        return at

    def sdf(self, t: float, p: np.ndarray) -> tuple[float, np.ndarray]:
        """The signed distance of the world point p (3,) at time t, and the outward normal in the
        world (for a mesh, its grid's gradient)."""
        origin, rotation = self.placed(t)
        d, n = local_distance(self, rotation.T @ (p - origin))
        return d, rotation @ n

    @property
    def skin(self) -> float:
        """How far its surface may lie outside the shape's own: a mesh's grid's skin, else 0."""
        return grid_skin(self.grid.cell) if self.grid is not None else 0.0

    def clearance(self, t: float, p: np.ndarray) -> tuple[float, np.ndarray]:
        """The signed distance measured into the free side, less a mesh's skin, and the direction
        of more room: c < 0 in the solid part."""
        d, n = self.sdf(t, p)
        return self.side * d - self.skin, self.side * n

    def room(self, t: float, p: np.ndarray) -> float:
        """A lower bound of the distance from p to its solid part (negative inside it): a ball of
        this radius around p holds no solid. Its clearance, but for a mesh obstacle beyond its
        grid's box (the grid's value there adds the distance to the box, more than the distance
        off to the side: ``sqrt(e^2 + r_c^2)``, e the distance to the box's nearest point c and
        r_c the room at c) and a heightfield (the height above the ground over sqrt(1 + s^2), s
        its steepest slope: no point of the ground is nearer)."""
        if not (self.shape == "heightfield" or (self.grid is not None and self.side > 0.0)):
            return self.clearance(t, p)[0]
        origin, rotation = self.placed(t)
        local = rotation.T @ (p - origin)
        if self.ground is not None:
            height = ground_height(self.ground, local[0], local[2])[0]
            return (local[1] - height) / math.sqrt(1.0 + self.ground.steepest**2)
        low = np.asarray(self.grid.origin)
        c = np.clip(local, low, low + (np.array(self.grid.values.shape) - 1) * self.grid.cell)
        e = float(np.linalg.norm(local - c))
        inner = grid_distance(self.grid, c)[0] - self.skin
        if e == 0.0 or inner <= 0.0:
            return inner + e
        return math.hypot(e, inner)


def local_distance(body: Body, p: np.ndarray) -> tuple[float, np.ndarray]:
    """A body's signed distance and outward normal at p (3,) in its own frame."""
    if body.grid is not None:
        return grid_distance(body.grid, p)
    if body.ground is not None:
        return _ground(body.ground, p)
    return SDFS[body.shape](p, body.sizes)


def _body(k: int, o: Object, fields: Mapping[int, Any]) -> Body:
    shape = shape_of(o)
    sx, sy, sz = scales(o)
    sizes, bound = shape.packed(o, sx, sy, sz)
    grid = ground = None
    if shape.field == "grid":
        grid = object_field(k, o, fields)
        bound = grid_bound(grid)
    elif shape.field == "heights":
        ground = terrain(o, object_field(k, o, fields), sx, sy, sz)
    return Body(
        shape=o.shape,
        side=-1.0 if o.role == "arena" else 1.0,
        position=np.array(o.position or (0.0, 0.0, 0.0), dtype=np.float64),
        rotation=euler(*(o.rotation or (0.0, 0.0, 0.0))),
        sizes=tuple(sizes),
        bound=bound,
        convex=shape.convex,
        motion=o.motion,
        grid=grid,
        ground=ground,
    )


def bodies(objects: Sequence[Object], fields: Mapping[int, Any] | None = None) -> tuple[Body, ...]:
    """The :class:`Body` of each valid object, with the fields its files became (a mesh's
    :class:`SDFGrid`, a heightfield's heights in [0, 1], by the object's index), kept for the last
    few (objects, fields) as :func:`flock3d.core.objects.packed` keeps its arrays.

    Raises:
        ValueError: when an object read from a file has no field given.
    """
    key = (tuple(objects), id(fields))
    with _kept_lock:
        kept = _kept.get(key)
    if kept is not None and kept[0] is fields:
        return kept[1]
    out = tuple(_body(k, o, fields or {}) for k, o in enumerate(objects))
    with _kept_lock:
        if len(_kept) >= 4:
            _kept.pop(next(iter(_kept)))
        _kept[key] = (fields, out)
    return out


_kept: dict[tuple, tuple[Any, tuple[Body, ...]]] = {}
_kept_lock = threading.Lock()
