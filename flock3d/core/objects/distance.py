"""Distances of packed objects: each object's frame at a time, its signed distance and the room a
point has from it, compiled (the fast engine and the checks call them; the reference engine
measures with :mod:`.oracle`'s readable twins)."""

from __future__ import annotations

import math

import numpy as np

from flock3d.core import compiling, elsewhere
from flock3d.core import geometry as g
from flock3d.core.geometry import exact, exact_inlined
from flock3d.core.objects.packing import FIELD, KIND, MOTION, POSITION, ROTATION, SIDE, SIZES, pack_objects
from flock3d.core.objects.records import Object

__all__ = ["object_frame", "object_sdf", "object_clearance", "object_room", "ground_clearance", "clearance",
           "clearances"]  # fmt: skip


@exact
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


@exact
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


@exact_inlined
def _sdf_in_frame(data, o, px, py, pz, qw, qx, qy, qz, x, y, z):
    """:func:`object_sdf` with the object's frame at the time given."""
    lx, ly, lz = g.to_local(px, py, pz, qw, qx, qy, qz, x, y, z)
    d, gx, gy, gz = _local_sdf(data, o, lx, ly, lz)
    wx, wy, wz = g.rotate(qw, qx, qy, qz, gx, gy, gz)
    return d, wx, wy, wz


@exact_inlined
def object_sdf(data, o, t, x, y, z):
    """The signed distance of the world point (x, y, z) to the object whose record starts at
    ``data[o]``, at time t, and its outward normal in the world: (d, gx, gy, gz), d < 0 inside
    the shape; the normal is a unit vector, or for a mesh the gradient of its grid's interpolant.
    Queried in the object's frame at t, so a moving object costs what a still one does."""
    px, py, pz, qw, qx, qy, qz = object_frame(data, o, t)
    return _sdf_in_frame(data, o, px, py, pz, qw, qx, qy, qz, x, y, z)


@exact
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


@exact
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


@exact
def ground_clearance(data, offsets, t, x, y, z):
    """The least height of a point above the grounds (the planes and heightfields) of the objects
    packed in ``data`` with ``offsets``, at time t; inf without a ground."""
    best = math.inf
    for k in range(offsets.shape[0] - 1):
        kind = int(data[offsets[k] + KIND])
        if kind == g.PLANE or kind == g.HEIGHTFIELD:
            best = min(best, object_clearance(data, offsets[k], t, x, y, z)[0])
    return best


@exact
def clearance(data, offsets, t, x, y, z):
    """The least clearance of a point over every object, its direction, and the object's index:
    (c, nx, ny, nz, k); (inf, 0, 0, 0, -1) without objects."""
    best, bx, by, bz, which = math.inf, 0.0, 0.0, 0.0, -1
    for k in range(offsets.shape[0] - 1):
        c, nx, ny, nz = object_clearance(data, offsets[k], t, x, y, z)
        if c < best:
            best, bx, by, bz, which = c, nx, ny, nz, k
    return best, bx, by, bz, which


@exact
def clearances(data, offsets, points, t):
    """(n,) the least clearance of each of the (n, 3) points over every object at time t (over
    object k alone with ``offsets[k:k + 2]``)."""
    out = np.empty(points.shape[0])
    for i in range(points.shape[0]):
        out[i] = clearance(data, offsets, t, points[i, 0], points[i, 1], points[i, 2])[0]
    return out


def load_clearances() -> None:
    """Load :func:`clearances` (compiling it where numba's cache lacks it) for the types every
    call passes: one compiled function measures every shape."""
    data, offsets = pack_objects((Object("plane"),), None)
    clearances(data, offsets, np.zeros((1, 3)), 0.0)


def clearances_cached() -> bool:
    """Whether :func:`clearances` runs with no compile: numba's cache holds it, or this process
    has it already."""
    try:
        with compiling.forbidden():
            load_clearances()
        return True
    except compiling.CompileNeeded:
        return False


def clearances_ready() -> None:
    """Make :func:`clearances` ready where this process leaves compiles to children (a window's:
    :func:`~flock3d.core.compiling.compiles_here`): a child compiles it where numba's cache lacks
    it (4-5 s on 2 cores, the whole distance chain) and this process loads it. Elsewhere its first
    call compiles it, as any numba function.

    Raises:
        flock3d.core.elsewhere.CompileFailed: the child failed, or was ended (a window closing).
    """
    if compiling.compiles_here():
        return
    # At the window's own priority: nothing happens in the scene until its boids are placed.
    if not elsewhere.load_or_compile(load_clearances, f"{__name__}:load_clearances", niceness=0):
        raise elsewhere.CompileFailed("the objects' distances were not compiled: their child was ended")
