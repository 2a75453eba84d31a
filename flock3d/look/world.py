"""The world's objects as the viewer draws them: triangles, frames and the ground (numpy only).

Each object of ``Params.objects`` becomes a triangle mesh in its own scaled local frame
(:func:`object_mesh`): primitives tessellated here (a box's faces flat, round shapes smooth),
a mesh file's triangles as read (:func:`flock3d.io.meshes.read_mesh`), a heightfield's nodes
as a grid. :class:`Frames` places each object at a simulated time exactly as the engines do
(:func:`flock3d.core.objects.object_frame`). Planes and heightfields are the ground:
:func:`ground_under` finds where the vertical through a point meets it (the flock's shadows),
and :func:`ray_distances` finds where a ray meets triangles (an object picked with the mouse).

Every mesh is wound counter-clockwise seen from the side its normals point to (outside a
closed shape, above the ground), so that an arena object can be drawn with the faces turned
to the camera culled: its far inner wall as a backdrop behind the flock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from flock3d.core import geometry
from flock3d.core.objects import HEIGHTFIELD_SAMPLES, Object, object_frame, pack_objects, scales, shape_of
from flock3d.core.quaternion import to_matrices
from flock3d.look.colors import hex_color

__all__ = [
    "ObjectMesh",
    "Frames",
    "Ground",
    "object_mesh",
    "object_heights",
    "grounds_of",
    "ground_of",
    "shape_key",
    "ground_under",
    "ground_along",
    "cast_shadow",
    "pull_inside",
    "ray_distances",
    "is_ground",
    "object_color",
    "ground_colors",
    "OBSTACLE_FILL",
    "ARENA_FILL",
    "GROUND_FILL",
]

OBSTACLE_FILL = (0.63, 0.59, 0.55)
"""An obstacle without a ``color`` of its own: warm stone, lighter than any sky colour."""
ARENA_FILL = (0.36, 0.43, 0.56)
"""An arena object without a ``color``: a slate blue wall behind the flock."""
GROUND_FILL = (0.27, 0.33, 0.29)
"""A plane or heightfield without a ``color``: dark moss, darker than the boids."""
SEGMENTS = 32
"""Segments around a round shape (sphere, cylinder, capsule, torus): smooth normals keep 32 round
to the eye, and a forest of spheres costs software OpenGL (llvmpipe) less than half of 48's."""
MAX_DRAWN_SIDE = 257
"""A heightfield is drawn with at most this many nodes a side (every k-th node of a larger image)."""
PLANE_CELLS = 16
"""Cells a side of a plane's square (so that per-vertex work varies across it)."""


class ObjectMesh(NamedTuple):
    """Triangles of one object in its scaled local frame.

    ``vertices`` and ``normals`` (V, 3) float32 (unit normals); ``faces`` (F, 3) uint32, each
    counter-clockwise seen from where its normals point; ``ground``: a plane or heightfield;
    ``closed``: the faces close around a volume with their normals outward (a primitive's, made
    here; a mesh file's winding is its own), so that from outside only the faces turned to the
    camera can be seen.
    """

    vertices: np.ndarray
    normals: np.ndarray
    faces: np.ndarray
    ground: bool = False
    closed: bool = False


def shape_key(o: Object) -> Object:
    """What an object's triangles (and a mesh's grid) depend on: all but where it is, how it
    moves and how it looks."""
    return o._replace(position=None, rotation=None, motion=None, color=None)


def is_ground(o: Object) -> bool:
    """Whether the object is ground the flock flies over (a plane or a heightfield)."""
    return shape_of(o).ground


def object_color(o: Object) -> tuple[float, float, float]:
    """The object's fill, sRGB in [0, 1]: its ``color``, else a default by its role."""
    if o.color:
        return hex_color(o.color)
    if is_ground(o):
        return GROUND_FILL
    return ARENA_FILL if o.role == "arena" else OBSTACLE_FILL


ROCK = (0.46, 0.43, 0.40)
GRASS = (0.30, 0.43, 0.20)
SNOW = (0.90, 0.92, 0.95)
"""The ground's colours where its scene gives it none: grass low and flat, rock on steep slopes,
snow on the highest flat ground."""


def ground_colors(mesh: ObjectMesh, base) -> np.ndarray:
    """(V, 3) colours of a ground mesh's vertices, sRGB in [0, 1], by height and slope.

    Flat ground takes ``base`` (the object's colour), a little darker low down and lighter high
    up; steep slopes (past about 35 degrees, all rock past about 60) a rock colour: ``base``
    greyed and darkened, banded in strata by height. A ground with no colour of its own
    (``base`` is :data:`GROUND_FILL`) is grass, rock and, on its highest flat ground, snow.
    """
    v, n = mesh.vertices.astype(np.float64), mesh.normals.astype(np.float64)
    base = np.asarray(base, np.float64)
    own = not np.allclose(base, GROUND_FILL)
    low, high = float(v[:, 1].min()), float(v[:, 1].max())
    t = (v[:, 1] - low) / (high - low) if high - low > 1e-9 else np.full(len(v), 0.5)  # a plane: mid
    steep = np.clip((1.0 - n[:, 1] - 0.18) / (0.5 - 0.18), 0.0, 1.0)
    steep = steep * steep * (3.0 - 2.0 * steep)  # smoothstep
    flat = base if own else np.asarray(GRASS)
    flat = flat[None, :] * (0.85 + 0.3 * t)[:, None]
    grey = (base @ (0.2126, 0.7152, 0.0722)) * np.ones(3)
    rock = 0.9 * (0.55 * base + 0.45 * grey) if own else np.asarray(ROCK)
    strata = 0.92 + 0.08 * np.sin(2.0 * np.pi * 6.0 * t)
    color = flat + steep[:, None] * (rock[None, :] * strata[:, None] - flat)
    if not own:
        snow = np.clip((t - 0.8) / 0.1, 0.0, 1.0) * (1.0 - steep)
        color += snow[:, None] * (np.asarray(SNOW) - color)
    return np.clip(color, 0.0, 1.0)


# -- tessellation ---------------------------------------------------------------------------


def _revolve(profile: np.ndarray, segments: int = SEGMENTS) -> ObjectMesh:
    """A surface of revolution about the Y axis.

    Args:
        profile: (M, 4) rows ``(rho, y, n_rho, n_y)``: a polyline in the half plane rho >= 0
            and its unit normals there, in order; each pair of rows is revolved into a band.
    """
    theta = np.linspace(0.0, 2.0 * np.pi, segments + 1)
    c, s = np.cos(theta), np.sin(theta)
    rho, y, nr, ny = (profile[:, i, None] for i in range(4))
    vertices = np.stack([rho * c, np.broadcast_to(y, (len(profile), segments + 1)), rho * s], axis=-1)
    normals = np.stack([nr * c, np.broadcast_to(ny, vertices.shape[:2]), nr * s], axis=-1)
    idx = np.arange(vertices.shape[0] * vertices.shape[1]).reshape(vertices.shape[:2])
    a, b, cc, d = idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]
    faces = np.concatenate([np.stack([a, b, cc], -1).reshape(-1, 3), np.stack([a, cc, d], -1).reshape(-1, 3)])
    return _mesh(vertices.reshape(-1, 3), normals.reshape(-1, 3), faces)


def _arc(radius: float, centre_y: float, start: float, stop: float, count: int) -> np.ndarray:
    """Profile rows of a circular arc (angles in radians from the rho axis, towards +y)."""
    phi = np.linspace(start, stop, count)
    return np.c_[radius * np.cos(phi), centre_y + radius * np.sin(phi), np.cos(phi), np.sin(phi)]


def _join(*parts: ObjectMesh) -> ObjectMesh:
    vertices, normals, faces, base = [], [], [], 0
    for part in parts:
        vertices.append(part.vertices)
        normals.append(part.normals)
        faces.append(part.faces.astype(np.int64) + base)
        base += len(part.vertices)
    return _mesh(np.concatenate(vertices), np.concatenate(normals), np.concatenate(faces))


def _mesh(vertices, normals, faces, ground: bool = False) -> ObjectMesh:
    """An ObjectMesh with its normals made unit and its faces wound to face along them."""
    v = np.asarray(vertices, np.float64)
    n = np.asarray(normals, np.float64)
    n = n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)
    f = np.asarray(faces, np.int64).reshape(-1, 3)
    geometric = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    backwards = np.einsum("ij,ij->i", geometric, n[f].sum(axis=1)) < 0.0
    f[backwards] = f[backwards][:, ::-1]
    return ObjectMesh(v.astype(np.float32), n.astype(np.float32), f.astype(np.uint32), ground)


def _box(hx: float, hy: float, hz: float) -> ObjectMesh:
    vertices, normals, faces = [], [], []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            u, w = [a for a in range(3) if a != axis]
            corners = np.zeros((4, 3))
            corners[:, axis] = sign
            corners[:, u] = [-1, 1, 1, -1]
            corners[:, w] = [-1, -1, 1, 1]
            normal = np.zeros(3)
            normal[axis] = sign
            faces += [[len(vertices) * 4 + i for i in (0, 1, 2)], [len(vertices) * 4 + i for i in (0, 2, 3)]]
            vertices.append(corners * (hx, hy, hz))
            normals.append(np.tile(normal, (4, 1)))
    return _mesh(np.concatenate(vertices), np.concatenate(normals), faces)


def _sphere(r: float, segments: int) -> ObjectMesh:
    return _revolve(_arc(r, 0.0, math.pi / 2, -math.pi / 2, segments // 2 + 1), segments)


def _cylinder(r: float, hh: float, segments: int) -> ObjectMesh:
    top = np.array([[0.0, hh, 0.0, 1.0], [r, hh, 0.0, 1.0]])
    side = np.array([[r, hh, 1.0, 0.0], [r, -hh, 1.0, 0.0]])
    bottom = np.array([[r, -hh, 0.0, -1.0], [0.0, -hh, 0.0, -1.0]])
    return _join(_revolve(top, segments), _revolve(side, segments), _revolve(bottom, segments))


def _capsule(r: float, half_segment: float, segments: int) -> ObjectMesh:
    rows = segments // 4 + 1
    upper = _arc(r, half_segment, math.pi / 2, 0.0, rows)
    lower = _arc(r, -half_segment, 0.0, -math.pi / 2, rows)
    return _revolve(np.vstack([upper, lower]), segments)  # the band between the arcs is the side


def _torus(ring: float, tube: float, segments: int) -> ObjectMesh:
    profile = _arc(tube, 0.0, 0.0, 2.0 * math.pi, segments + 1)  # the tube as round as the ring
    profile[:, 0] += ring
    return _revolve(profile, segments)


#: How each primitive is drawn, from the sizes it packs (:meth:`~flock3d.core.objects.Shape.packed`),
#: with ``segments`` around for a round one.
_DRAWN = {"box": _box, "sphere": _sphere, "cylinder": _cylinder, "capsule": _capsule, "torus": _torus}


def _grid(x: np.ndarray, z: np.ndarray, heights: np.ndarray) -> ObjectMesh:
    """Ground over the nodes (x[i], z[k]) at ``heights[i, k]``, normals from the slopes."""
    nx, nz = heights.shape
    gx, gz = np.meshgrid(x, z, indexing="ij")
    vertices = np.stack([gx, heights, gz], axis=-1).reshape(-1, 3)
    dhdx = np.gradient(heights, x, axis=0) if nx > 1 else np.zeros_like(heights)
    dhdz = np.gradient(heights, z, axis=1) if nz > 1 else np.zeros_like(heights)
    normals = np.stack([-dhdx, np.ones_like(heights), -dhdz], axis=-1).reshape(-1, 3)
    idx = np.arange(nx * nz).reshape(nx, nz)
    a, b, c, d = idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]
    # Each cell split along the diagonal whose ends differ least in height: a cliff or a rim
    # running across the grid's rows is then cut along, not across (which would draw it as a
    # sawtooth); on flat ground both splits are the same.
    h = heights.reshape(-1)
    across = np.abs(h[b] - h[d]) < np.abs(h[a] - h[c])
    first = np.where(across[..., None], np.stack([a, b, d], -1), np.stack([a, b, c], -1))
    second = np.where(across[..., None], np.stack([b, c, d], -1), np.stack([a, c, d], -1))
    faces = np.concatenate([first.reshape(-1, 3), second.reshape(-1, 3)])
    return _mesh(vertices, normals, faces, ground=True)


def object_heights(o: Object) -> np.ndarray:
    """A heightfield's (nx, nz) heights in [0, 1], as the engines take them: from its seed, or
    read from its image (which needs the world extra, as loading its scene did)."""
    if o.seed is not None:
        return geometry.fractal_heights(o.seed, HEIGHTFIELD_SAMPLES)
    from flock3d.io.meshes import read_heights

    return read_heights(o.image)


def object_mesh(o: Object, extent: float, segments: int = SEGMENTS) -> ObjectMesh:
    """The triangles of object ``o`` (valid) in its scaled local frame; a plane is drawn as a
    square reaching ``extent`` units each way from its origin (a plane has no edge); a round
    shape with ``segments`` around (a multiple of 4)."""
    sx, sy, sz = scales(o)
    shape = shape_of(o)
    if o.shape in _DRAWN:  # from the sizes it packs for the engines: the drawn shape is the flown one
        sizes, _ = shape.packed(o, sx, sy, sz)
        return _DRAWN[o.shape](*sizes, *((segments,) if shape.round else ()))._replace(closed=True)
    if shape.edgeless:
        side = np.linspace(-extent, extent, PLANE_CELLS + 1)
        return _grid(side, side, np.zeros((len(side), len(side))))
    if shape.field == "heights":
        ground = ground_of(o, -1)
        nx, nz = ground.heights.shape
        # Every step-th node (and the far edges): a large image is drawn coarser than it is flown.
        step = max(1, math.ceil((max(nx, nz) - 1) / (MAX_DRAWN_SIDE - 1)))
        i = np.unique(np.r_[np.arange(0, nx, step), nx - 1])
        k = np.unique(np.r_[np.arange(0, nz, step), nz - 1])
        x, z = ground.x0 + ground.dx * i, ground.z0 + ground.dz * k
        return _grid(x, z, ground.heights[np.ix_(i, k)])
    from flock3d.io.meshes import read_mesh

    mesh = read_mesh(o.file, o.role)
    corners = (np.asarray(mesh.vertices, np.float64) * (sx, sy, sz))[np.asarray(mesh.faces)]  # (F, 3, 3)
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    # Flat: each triangle its own normal (a mesh's hard edges stay hard).
    return _mesh(corners.reshape(-1, 3), np.repeat(normals, 3, axis=0), np.arange(3 * len(corners)))


# -- frames ----------------------------------------------------------------------------------


class Frames:
    """Where each object is at a simulated time: its frame's origin and rotation matrix.

    The frames are the engines' own (:func:`~flock3d.core.objects.object_frame` of the
    packed objects): a frame does not depend on the shape, so each object is packed as a unit
    sphere with its position, rotation and motion (a mesh's packed record would need its grid).

    Args:
        objects: valid objects (``Params.objects``).
    """

    def __init__(self, objects: Sequence[Object]) -> None:
        stand_ins = [
            Object("sphere", radius=1.0, position=o.position, rotation=o.rotation, motion=o.motion)
            for o in objects
        ]
        self._data, self._offsets = pack_objects(stand_ins)
        self.moving = tuple(k for k, o in enumerate(objects) if o.motion is not None)
        """The indices of the objects that move."""
        self._still = self._at(range(len(objects)), 0.0)

    def _at(self, indices, t: float) -> tuple[np.ndarray, np.ndarray]:
        frames = np.array([object_frame(self._data, self._offsets[k], t) for k in indices]).reshape(-1, 7)
        return frames[:, :3], frames[:, 3:]

    def poses(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(K, 3) origins and (K, 4) unit quaternions (w, x, y, z) of the objects at time ``t``, s."""
        positions, quaternions = self._still[0].copy(), self._still[1].copy()
        if self.moving:
            positions[list(self.moving)], quaternions[list(self.moving)] = self._at(self.moving, t)
        return positions, quaternions

    def at(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(K, 3) origins and (K, 3, 3) rotations (``world = origin + R @ local``) at time ``t``, s."""
        positions, quaternions = self.poses(t)
        return positions, to_matrices(quaternions)


# -- the ground -----------------------------------------------------------------------------


class Ground(NamedTuple):
    """A plane or heightfield as the shadows need it, in its scaled local frame.

    ``heights`` (nx, nz) world units over the nodes ``(x0 + i dx, z0 + k dz)`` (a heightfield's,
    as the engines read it: :func:`flock3d.core.geometry.heightfield_height`), None for a plane;
    ``extent``: half the side of a plane's square as drawn.
    """

    index: int
    heights: np.ndarray | None
    x0: float
    z0: float
    dx: float
    dz: float
    extent: float = math.inf


def ground_of(o: Object, index: int, extent: float = math.inf) -> Ground:
    """Plane or heightfield ``o`` (object ``index``) as the shadows need it; a plane is drawn
    ``extent`` units each way."""
    if shape_of(o).edgeless:
        return Ground(index, None, 0.0, 0.0, 1.0, 1.0, extent)
    sx, sy, sz = scales(o)
    heights = object_heights(o) * (o.height * sy)
    nx, nz = heights.shape
    width, depth = o.size[0] * sx, o.size[1] * sz
    return Ground(index, heights, -0.5 * width, -0.5 * depth, width / (nx - 1), depth / (nz - 1))


def grounds_of(objects: Sequence[Object], extent: float) -> list[Ground]:
    """The ground among ``objects``: each plane (drawn ``extent`` units each way) and heightfield."""
    return [ground_of(o, k, extent) for k, o in enumerate(objects) if is_ground(o)]


def _heights(g: Ground, x: np.ndarray, z: np.ndarray):
    """Bilinear heights and slopes of heightfield ``g`` at local (x, z), and which lie over it."""
    h = g.heights
    nx, nz = h.shape
    u, v = (x - g.x0) / g.dx, (z - g.z0) / g.dz
    over = (u >= 0.0) & (u <= nx - 1.0) & (v >= 0.0) & (v <= nz - 1.0)
    u, v = np.clip(u, 0.0, nx - 1.0), np.clip(v, 0.0, nz - 1.0)
    i = np.minimum(u.astype(np.int64), nx - 2)
    k = np.minimum(v.astype(np.int64), nz - 2)
    fx, fz = u - i, v - k
    h00, h01, h10, h11 = h[i, k], h[i, k + 1], h[i + 1, k], h[i + 1, k + 1]
    h0 = h00 + fz * (h01 - h00)
    h1 = h10 + fz * (h11 - h10)
    slope_x = (h1 - h0) / g.dx
    slope_z = ((1.0 - fx) * (h01 - h00) + fx * (h11 - h10)) / g.dz
    return h0 + fx * (h1 - h0), slope_x, slope_z, over


def ground_under(
    points: np.ndarray,
    grounds: Sequence[Ground],
    origins: np.ndarray,
    rotations: np.ndarray,
    up=(0.0, 1.0, 0.0),
    above: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the ground lies under each point: the nearest ground below it along ``-up``
    (``above``: the nearest over it, for a point under the ground).

    Args:
        points: (N, 3) world units.
        grounds: the ground (:func:`grounds_of`).
        origins, rotations: every object's frame (:meth:`Frames.at`), indexed by object.
        up: the world's up (a heightfield's own up when it is tilted).
        above: look up from the points rather than down.

    Returns:
        ``(feet, normals, heights)``: (N, 3) the ground's point under each point and its unit
        normal there, (N,) the height above it (``above``: the depth under it); NaN feet and inf
        heights where none is below (above).
    """
    p = np.asarray(points, np.float64).reshape(-1, 3)
    up = np.asarray(up, np.float64)
    feet = np.full(p.shape, np.nan)
    normals = np.zeros(p.shape)
    best = np.full(len(p), np.inf)
    for g in grounds:
        origin, rotation = origins[g.index], rotations[g.index]
        local = (p - origin) @ rotation  # R^T (p - origin), row by row
        if g.heights is None:
            n = rotation[:, 1]
            along = float(up @ n)
            if abs(along) < 0.2:  # a steep plane: no shadow falls straight onto it
                continue
            height = local[:, 1] / along
            foot = p - height[:, None] * up
            foot_local = (foot - origin) @ rotation
            over = (np.abs(foot_local[:, 0]) <= g.extent) & (np.abs(foot_local[:, 2]) <= g.extent)
            normal = np.broadcast_to(n, p.shape)
        else:
            h, slope_x, slope_z, over = _heights(g, local[:, 0], local[:, 2])
            height = local[:, 1] - h
            foot = origin + np.c_[local[:, 0], h, local[:, 2]] @ rotation.T
            n = np.c_[-slope_x, np.ones_like(h), -slope_z]
            normal = (n / np.linalg.norm(n, axis=1, keepdims=True)) @ rotation.T
        if above:
            height = -height
        nearer = over & (height >= 0.0) & (height < best)
        best[nearer] = height[nearer]
        feet[nearer] = foot[nearer]
        normals[nearer] = normal[nearer]
    return feet, normals, best


SHADOW_ITERATIONS = 4
"""Steps of the walk along the sun's rays onto a heightfield (a plane takes one)."""


def ground_along(
    points: np.ndarray, grounds: Sequence[Ground], origins, rotations, light, up=(0.0, 1.0, 0.0)
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the sun's ray through each point meets the ground below it: the point moved away
    from the sun (along ``-light``) until it lies on the ground (:func:`ground_under`); a point
    under the ground, where it comes out of it (straight above).

    The ray is walked by fixed-point steps: each drops the point by its height over the ground
    straight below it, along the ray. On a plane the first step lands; on a heightfield each
    step halves the error or better wherever the ground rises more slowly along the ray than
    the ray falls (slopes under the sun's elevation).

    Args:
        points: (N, 3) world units.
        grounds, origins, rotations: as for :func:`ground_under`.
        light: towards the sun, unit vector; a sun less than 3 degrees up casts no shadow.
        up: the world's up.

    Returns:
        ``(feet, normals, hit)``: (N, 3) the ground's points and unit normals there, (N,) bool:
        whether the point has ground below it (elsewhere the feet are NaN).
    """
    p = np.asarray(points, np.float64).reshape(-1, 3)
    light, up = np.asarray(light, np.float64), np.asarray(up, np.float64)
    fall = float(light @ up)
    if fall < math.sin(math.radians(3.0)) or not grounds:
        return np.full(p.shape, np.nan), np.zeros(p.shape), np.zeros(len(p), bool)
    q = p + 1e-6 * max(1.0, float(np.abs(p).max(initial=0.0))) * up  # a vertex on the ground stays over it
    for k in range(SHADOW_ITERATIONS):
        _, _, heights = ground_under(q, grounds, origins, rotations, up)
        if k == 0:
            # A point under the ground casts from where it comes out of it, straight above: the
            # part of an object sunk into the ground (a trunk on a slope, a building scaled about
            # its centre) then casts nothing past its own footprint, where its faces' shadows
            # were dropped and the rest fell off its foot.
            lost = np.flatnonzero(~np.isfinite(heights))
            exits, _, depths = ground_under(q[lost], grounds, origins, rotations, up, above=True)
            under = lost[np.isfinite(depths)]
            q[under] = exits[np.isfinite(depths)]
            heights[under] = 0.0
        heights = np.where(np.isfinite(heights), heights, 0.0)
        q = q - (heights / fall)[:, None] * light
    feet, normals, heights = ground_under(q + 1e-6 * up, grounds, origins, rotations, up)
    # On a heightfield the walk may end a little under the ground (a slope steeper along the ray
    # than at the point): such a point's shadow lies on the ground straight above it.
    lost = np.flatnonzero(~np.isfinite(heights))
    if len(lost):
        over, over_normals, depths = ground_under(q[lost], grounds, origins, rotations, up, above=True)
        found = np.isfinite(depths)
        feet[lost[found]], normals[lost[found]], heights[lost[found]] = over[found], over_normals[found], 0.0
    return feet, normals, np.isfinite(heights)


def cast_shadow(vertices, faces, grounds: Sequence[Ground], origins, rotations, light, up=(0.0, 1.0, 0.0)):
    """The shadow a closed mesh casts on the ground: its faces turned to the sun, each vertex
    carried along the sun's rays onto the ground (:func:`ground_along`). Of a convex shape they
    cover the shadow once (no face's shadow darkens another's); of a concave one (a torus, a
    rock) a few overlap.

    Args:
        vertices: (V, 3) world units; faces: (F, 3), counter-clockwise seen from outside.
        grounds, origins, rotations, light, up: as for :func:`ground_along`.

    Returns:
        ``(points, normals)``: (3S, 3) the shadow's triangles' corners on the ground and the
        ground's unit normals there (every three rows a triangle).
    """
    v = np.asarray(vertices, np.float64).reshape(-1, 3)
    f = np.asarray(faces, np.int64).reshape(-1, 3)
    facing = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]) @ np.asarray(light, np.float64) > 0.0
    f = f[facing]
    used = np.unique(f)
    feet, normals, hit = ground_along(v[used], grounds, origins, rotations, light, up)
    index = np.full(len(v), -1)
    index[used] = np.arange(len(used))
    corners = index[f]
    kept = hit[corners].all(axis=1)
    corners = corners[kept].ravel()
    return _draped(feet[corners], normals[corners], grounds, origins, rotations, up)


DRAPE_SPLITS = 6
"""Most times a shadow triangle on a heightfield is split in four (:func:`_draped`)."""
DRAPE_LIMIT = 200_000
"""Most triangles a shadow is split into; beyond, its triangles stay as long as they are."""


def _draped(points, normals, grounds: Sequence[Ground], origins, rotations, up):
    """Shadow triangles ``points`` (3S, 3) with their ground's ``normals``, split in four until no
    edge spans more than four of a heightfield's drawn cells, each new corner on the ground under
    it: a long triangle between corners on the terrain would pass under the bumps between them (a
    box's shadow had holes). A triangle whose corners share one normal lies on flat ground (a
    plane), and stays as it is; so do all on planes alone."""
    fields = [g for g in grounds if g.heights is not None]
    if not fields or not len(points):
        return points, normals
    # The cells as drawn (every step-th node of a large image: object_mesh), not the image's own.
    steps = [max(1, math.ceil((max(g.heights.shape) - 1) / (MAX_DRAWN_SIDE - 1))) for g in fields]
    cell = 4.0 * min(k * min(g.dx, g.dz) for k, g in zip(steps, fields, strict=True))
    lift = max(float(np.ptp(g.heights)) for g in fields) + 1.0  # above every bump of the terrain
    # Lifted along the terrain's own up (a tilted heightfield's), whose nodes ground_under drops from.
    field_up = rotations[fields[0].index][:, 1] if len(fields) == 1 else np.asarray(up, np.float64)
    # Each corner is its position and its ground's normal, side by side: split together.
    tri = np.concatenate([points.reshape(-1, 3, 3), normals.reshape(-1, 3, 3)], axis=2)
    for _ in range(DRAPE_SPLITS):
        curved = np.any(np.abs(tri[:, :, 3:] - tri[:, :1, 3:]) > 1e-9, axis=(1, 2))
        edges = np.linalg.norm(tri[:, :, :3] - np.roll(tri[:, :, :3], -1, axis=1), axis=2)
        long = curved & (edges.max(axis=1) > cell)
        if not long.any() or len(tri) + 3 * np.count_nonzero(long) > DRAPE_LIMIT:
            break
        t = tri[long]
        mid = 0.5 * (t + np.roll(t, -1, axis=1))  # m01, m12, m20
        lifted = mid[:, :, :3].reshape(-1, 3) + lift * field_up
        feet, feet_n, heights = ground_under(lifted, grounds, origins, rotations, field_up)
        on = np.isfinite(heights).reshape(mid.shape[:2])
        mid[on] = np.concatenate([feet, feet_n], axis=1).reshape(mid.shape)[on]
        a, b, c = t[:, 0], t[:, 1], t[:, 2]
        m01, m12, m20 = mid[:, 0], mid[:, 1], mid[:, 2]
        split = np.stack(
            [np.stack(q, axis=1) for q in ((a, m01, m20), (m01, b, m12), (m20, m12, c), (m01, m12, m20))]
        )
        tri = np.concatenate([tri[~long], split.reshape(-1, 3, 6)])
    return tri[:, :, :3].reshape(-1, 3), tri[:, :, 3:].reshape(-1, 3)


def pull_inside(points: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """``points`` (N, 3) with those outside the closed surface ``triangles`` (T, 3, 3) moved
    straight down (along -y) onto it: what hangs from an arena's roof and reaches through it
    (a stalactite's root in the rock) ends at the roof as drawn.

    A point is inside where the nearest triangle straight above it faces up (outwards, as the
    triangles are wound: a roof seen from under it); elsewhere (under a floor, or nothing above)
    it is moved to the nearest triangle below it, and kept where there is none. (Nearest, not a
    count of crossings: a ray through a shared edge meets two triangles.) Only the triangles
    over the points' footprint are tested.
    """
    p = np.asarray(points, np.float64).reshape(-1, 3)
    tri = np.asarray(triangles, np.float64).reshape(-1, 3, 3)
    low, high = p[:, [0, 2]].min(axis=0), p[:, [0, 2]].max(axis=0)
    xz = tri[:, :, [0, 2]]
    over = (xz.max(axis=1) >= low).all(axis=1) & (xz.min(axis=1) <= high).all(axis=1)
    tri = tri[over]
    if len(tri) == 0:
        return p
    # Barycentric coordinates of each point's (x, z) in each triangle's (x, z) projection.
    a, b, c = (tri[None, :, k, :] for k in range(3))  # (1, T, 3)
    q = p[:, None, :]
    e1, e2, r = b - a, c - a, q - a
    det = e1[..., 0] * e2[..., 2] - e1[..., 2] * e2[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        u = (r[..., 0] * e2[..., 2] - r[..., 2] * e2[..., 0]) / det
        v = (e1[..., 0] * r[..., 2] - e1[..., 2] * r[..., 0]) / det
    inside = (det != 0.0) & (u >= 0.0) & (v >= 0.0) & (u + v <= 1.0)
    y = a[..., 1] + u * e1[..., 1] + v * e2[..., 1]  # the surface's height over the point
    faces_up = np.cross(e1[0], e2[0])[:, 1] > 0.0  # (T,) outward normals' y
    above = np.where(inside & (y > q[..., 1]), y, np.inf)
    nearest = above.argmin(axis=1)
    roofed = np.isfinite(above.min(axis=1)) & faces_up[nearest]
    below = np.where(inside & (y <= q[..., 1]), y, -np.inf).max(axis=1)
    out = p.copy()
    moved = ~roofed & np.isfinite(below)
    out[moved, 1] = below[moved]
    return out


# -- picking ------------------------------------------------------------------------------


def ray_distances(origin, direction, triangles: np.ndarray) -> np.ndarray:
    """(T,) where the ray ``origin + s * direction`` meets each of ``triangles`` (T, 3, 3): its
    s > 0, inf where it misses. Both sides of a triangle count (Moller-Trumbore)."""
    tri = np.asarray(triangles, np.float64).reshape(-1, 3, 3)
    o, d = np.asarray(origin, np.float64), np.asarray(direction, np.float64)
    e1, e2 = tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
    pvec = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, pvec)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / det
        tvec = o - tri[:, 0]
        u = np.einsum("ij,ij->i", tvec, pvec) * inv
        qvec = np.cross(tvec, e1)
        v = (qvec @ d) * inv
        s = np.einsum("ij,ij->i", e2, qvec) * inv
        hit = (det != 0.0) & (u >= 0.0) & (v >= 0.0) & (u + v <= 1.0) & (s > 0.0)
    return np.where(hit, s, np.inf)
