"""The packed form of a world's objects: one float64 array the engines read (headers, motion
blocks, mesh grids and heightfields), and the few last packed kept."""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from flock3d.core import geometry as g
from flock3d.core.objects.records import HEIGHTFIELD_SAMPLES, Motion, Object, SDFGrid, scales
from flock3d.core.objects.shapes import shape_of
from flock3d.core.packed import slots

__all__ = ["KIND", "SIDE", "POSITION", "ROTATION", "SIZES", "MOTION", "FIELD", "BOUND", "HEADER",
           "pack_objects", "motion_block", "packed", "grid_skin", "grid_bound", "object_field", "terrain",
           "Terrain"]  # fmt: skip


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
    shape = shape_of(o)
    header = np.zeros(HEADER)
    header[KIND] = shape.kind
    header[SIDE] = -1.0 if o.role == "arena" else 1.0
    header[POSITION : POSITION + 3] = o.position or (0.0, 0.0, 0.0)
    header[ROTATION : ROTATION + 4] = g.euler_quaternion(*(o.rotation or (0.0, 0.0, 0.0)))
    sizes, bound = shape.packed(o, sx, sy, sz)
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
    grid = fields.get(k) if shape.field == "grid" else None
    if grid is not None and id(grid.values) in shared:  # fields holds the grid: its id is stable here
        header[FIELD], header[BOUND] = shared[id(grid.values)]
    elif shape.field:
        field, header[BOUND] = _field_block(k, o, fields, sx, sy, sz)
        header[FIELD] = at
        blocks.append(field)
        if grid is not None:
            shared[id(grid.values)] = (at, header[BOUND])
    return np.concatenate(blocks)


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
    field = object_field(k, o, fields)
    if shape_of(o).field == "grid":
        grid: SDFGrid = field
        head = np.array([*grid.values.shape, *grid.origin, grid.cell], dtype=np.float64)
        values = np.ascontiguousarray(grid.values, dtype=np.float64).reshape(-1)
        return np.concatenate([head, values]), grid_bound(grid)
    t = terrain(o, field, sx, sy, sz)
    head = np.array([*t.heights.shape, t.x0, t.z0, t.dx, t.dz])
    return np.concatenate([head, t.heights.reshape(-1), [t.steepest]]), math.inf


def object_field(k: int, o: Object, fields: Mapping[int, Any]) -> Any:
    """Object k's sampled field: a mesh's :class:`SDFGrid` or a heightfield's (nx, nz) heights in
    [0, 1] (from ``fields``, or generated from its seed).

    Raises:
        ValueError: when an object read from a file has no field given.
    """
    shape = shape_of(o)
    if shape.field == "heights" and o.seed is not None:
        return g.fractal_heights(o.seed, HEIGHTFIELD_SAMPLES)
    if k in fields:
        return fields[k]
    what = "its mesh's distance grid" if shape.field == "grid" else "its image's heights"
    raise ValueError(
        f"objects[{k}] ({o.shape}) needs {what}: build the fields with "
        "flock3d.io.meshes.object_fields(params)"
    )


def grid_bound(grid: SDFGrid) -> float:
    """The bound B of a mesh's grid (header slot BOUND): the least B with every node's value at
    least |node| - B, plus the grid's skin.

    Then the interpolant, a convex combination of nodes, and its extension beyond the box are at
    least |x| - B too (|x| - B is convex), so B bounds the grid's shape as a bounding ball does a
    primitive's. Nodes hold exact distances or convex combinations of them, so B is about the
    mesh's own radius; the clearance is the interpolant less the skin (:func:`grid_skin`)."""
    axes = [grid.origin[a] + grid.cell * np.arange(n) for a, n in enumerate(grid.values.shape)]
    x, y, z = axes[0][:, None, None], axes[1][None, :, None], axes[2][None, None, :]
    return float(np.max(np.sqrt(x * x + y * y + z * z) - grid.values)) + grid_skin(grid.cell)


class Terrain(NamedTuple):
    """A heightfield's ground in its local frame, scaled: ``heights[i, k]`` (world units) over
    the nodes (x0 + i dx, z0 + k dz), and its steepest slope."""

    heights: np.ndarray
    x0: float
    z0: float
    dx: float
    dz: float
    steepest: float


def terrain(o: Object, heights: np.ndarray, sx: float, sy: float, sz: float) -> Terrain:
    """A heightfield's :class:`Terrain` from its (nx, nz) heights in [0, 1] and its scale."""
    heights = np.asarray(heights, dtype=np.float64) * (o.height * sy)
    nx, nz = heights.shape
    width, depth = o.size[0] * sx, o.size[1] * sz
    dx, dz = width / (nx - 1), depth / (nz - 1)
    # The steepest slope of the bilinear ground (at most the steepest edge along x and along z,
    # together): y - h(x, z) changes by at most sqrt(1 + slope^2) per unit moved (:func:`object_room`).
    sx_max = float(np.max(np.abs(np.diff(heights, axis=0)))) / dx
    sz_max = float(np.max(np.abs(np.diff(heights, axis=1)))) / dz
    return Terrain(heights, -0.5 * width, -0.5 * depth, dx, dz, math.hypot(sx_max, sz_max))


def grid_skin(cell: float) -> float:
    """How far a mesh's grid may put its surface outside the mesh's own: half a cell's diagonal.

    The mesh's signed distance is 1-Lipschitz and the nodes hold it exactly near the surface
    (:func:`flock3d.io.meshes.mesh_grid`), so the trilinear interpolant at x, a convex
    combination of nodes at most half a diagonal from x on average, exceeds the exact distance
    by at most ``sqrt(3) / 2 * cell``, however thin the mesh's parts: a point whose interpolant
    is at least this is outside the mesh (inside, for an arena mesh)."""
    return 0.5 * math.sqrt(3.0) * cell


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
