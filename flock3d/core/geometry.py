"""Signed distances of the world's objects: closed forms, sampled grids, frames and motion.

Every function here is compiled by numba and callable both from compiled code (the fast
engine's terms) and from Python (the spawner, the checks, the tests). The reference engine
measures with readable twins written from the definitions below
(:mod:`flock3d.core.objects.oracle`), so that the engines' agreement checks these functions.
Arguments are plain scalars and float64 arrays; results are tuples.

**Signed distance.** ``d < 0`` inside the solid, ``d > 0`` outside, ``|d|`` the Euclidean
distance to the surface. Each function returns ``(d, gx, gy, gz)``: the distance and the
unit outward normal, which is the gradient of ``d`` wherever ``d`` is differentiable. On the
medial set, where the gradient is undefined (a sphere's centre, a box's diagonal planes
inside, a cylinder's axis), the normal is one fixed choice stated in each docstring, so the
result never depends on rounding.

**Local frames.** Each shape lives in its own frame, centred on the origin, with +Y up (the
world's up, as the boids' body axes): a box of half sides (hx, hy, hz); a sphere; a cylinder,
a capsule and a torus around the Y axis; a plane whose solid side is y < 0; a heightfield
whose ground rises along +Y over the XZ plane.

**Scale.** The distances are exact for the sizes given. An object's scale is folded into its
sizes before they reach these functions (a box's half sides times the scale per axis, a mesh's
vertices scaled before its grid is sampled), so a frame is a rigid motion (a rotation and a
translation) and world distances equal local ones. Scales that would make a closed form
non-Euclidean are refused where objects are validated (:mod:`flock3d.core.objects`): a sphere
or a torus takes one scale, a cylinder or a capsule equal x and z scales.

**Rotations.** ``rotation = [yaw, pitch, roll]`` in degrees is the rotation
``R = R_y(yaw) R_x(pitch) R_z(roll)``: roll about the object's Z (forward) axis first, then
pitch about X, then yaw about the world's Y; each right-handed, so yaw 90 turns +Z to +X,
pitch 90 turns +Z to -Y (nose down) and roll 90 turns +X to +Y. These are the numbers of
Unity's ``Quaternion.Euler(pitch, yaw, roll)``. A point maps to the world as
``p_world = position + R p_local``.

**Sampled grids.** A grid holds signed distances at the nodes ``origin + (i, j, k) h`` of a
cubic lattice, ``values[i, j, k]`` for x, y, z. Inside it the distance is the trilinear
interpolant of the 8 nodes around the point, and its gradient is that interpolant's exact
derivative. Outside it, the distance is the value at the nearest point ``c`` of the grid's box
plus ``|p - c|`` (a grid is sampled with a margin around its shape, so the shape is never
near its box's faces): continuous, and as the true distance, 1-Lipschitz.

**Heightfields.** Heights ``values[i, k]`` over the nodes ``(x0 + i dx, z0 + k dz)``, bilinear
between them and constant beyond the edges (the edge height continues). The signed distance
is ``(y - h(x, z)) / sqrt(1 + |grad h|^2)``: the height above the ground, divided by the
slope factor, which is exact on a plane. Its sign is always exact (above or below the ground),
and where the slope is at most G everywhere, ``|d|`` lies within a factor ``sqrt(1 + G^2)`` of
the true distance either way. The normal is the ground's unit normal at (x, z).
"""

from __future__ import annotations

import math

import numpy as np

from flock3d.core.no_entry import no_entry
from flock3d.core.quaternion import forward_of, in_python, multiply_of, normalized_of, right_of, up_of

__all__ = [
    "BOX",
    "SPHERE",
    "CYLINDER",
    "CAPSULE",
    "TORUS",
    "PLANE",
    "HEIGHTFIELD",
    "MESH",
    "KINDS",
    "sdf_box",
    "sdf_sphere",
    "sdf_cylinder",
    "sdf_capsule",
    "sdf_torus",
    "sdf_plane",
    "grid_sdf",
    "grid_sdf_flat",
    "heightfield_sdf",
    "heightfield_height",
    "euler_quaternion",
    "rotate",
    "rotate_inverse",
    "to_local",
    "to_world",
    "slerp",
    "keyframe_frame",
    "fractal_heights",
]

#: Kinds of shape, as they are numbered in packed object records.
BOX, SPHERE, CYLINDER, CAPSULE, TORUS, PLANE, HEIGHTFIELD, MESH = range(8)
KINDS = ("box", "sphere", "cylinder", "capsule", "torus", "plane", "heightfield", "mesh")

# 'numpy' errors: a division by zero gives inf or NaN as in the kernel, never an exception in a
# parallel loop. No entry point (flock3d.core.no_entry): compiled code calls these; Python's
# calls reach their twins.
#: Compiled without fastmath: these functions round as the readable code (and the reference engine) do.
exact = no_entry(cache=True, nogil=True, error_model="numpy")
#: An :data:`exact` function that only passes its work on, inlined into its one or two callers at
#: numba's level: typed as part of them, not compiled on its own. Each compiled level of a chain
#: costs a fixed share and makes numba link and optimise everything below it again.
exact_inlined = no_entry(cache=True, nogil=True, error_model="numpy", inline="always")


# -- closed forms, in the shape's own frame ------------------------------------------------------


@exact
def sdf_box(x, y, z, hx, hy, hz):
    """Box of half sides (hx, hy, hz) centred on the origin.

    Inside, the normal is that of the nearest face; on a tie, the first of x, y, z, and the
    positive face at a coordinate of exactly 0.
    """
    qx, qy, qz = abs(x) - hx, abs(y) - hy, abs(z) - hz
    sx = 1.0 if x >= 0.0 else -1.0
    sy = 1.0 if y >= 0.0 else -1.0
    sz = 1.0 if z >= 0.0 else -1.0
    if qx > 0.0 or qy > 0.0 or qz > 0.0:
        ox, oy, oz = max(qx, 0.0), max(qy, 0.0), max(qz, 0.0)
        d = math.sqrt(ox * ox + oy * oy + oz * oz)
        return d, sx * ox / d, sy * oy / d, sz * oz / d
    if qx >= qy and qx >= qz:
        return qx, sx, 0.0, 0.0
    if qy >= qz:
        return qy, 0.0, sy, 0.0
    return qz, 0.0, 0.0, sz


@exact
def sdf_sphere(x, y, z, r):
    """Sphere of radius r centred on the origin; at the centre the normal is +Y."""
    n = math.sqrt(x * x + y * y + z * z)
    if n == 0.0:
        return -r, 0.0, 1.0, 0.0
    return n - r, x / n, y / n, z / n


@exact
def _radial(x, z):
    """|(x, z)| and the unit radial direction in the XZ plane (+X on the axis)."""
    rho = math.sqrt(x * x + z * z)
    if rho == 0.0:
        return 0.0, 1.0, 0.0
    return rho, x / rho, z / rho


@exact
def sdf_cylinder(x, y, z, r, hh):
    """Solid cylinder of radius r around the Y axis, from y = -hh to y = hh.

    Inside, the normal is the nearest of the side (radial) and the caps; on a tie, the side;
    on the axis the radial direction is +X.
    """
    rho, ux, uz = _radial(x, z)
    a, b = rho - r, abs(y) - hh
    sy = 1.0 if y >= 0.0 else -1.0
    if a > 0.0 or b > 0.0:
        oa, ob = max(a, 0.0), max(b, 0.0)
        d = math.sqrt(oa * oa + ob * ob)
        return d, ux * oa / d, sy * ob / d, uz * oa / d
    if a >= b:
        return a, ux, 0.0, uz
    return b, 0.0, sy, 0.0


@exact
def sdf_capsule(x, y, z, r, hh):
    """Capsule: the points within r of the segment from (0, -hh, 0) to (0, hh, 0).

    On the segment itself the normal is +X.
    """
    cy = min(max(y, -hh), hh)
    dy = y - cy
    n = math.sqrt(x * x + dy * dy + z * z)
    if n == 0.0:
        return -r, 1.0, 0.0, 0.0
    return n - r, x / n, dy / n, z / n


@exact
def sdf_torus(x, y, z, ring, tube):
    """Torus around the Y axis: the points within ``tube`` of the circle of radius ``ring`` in
    the XZ plane. On that circle the normal is radial, outwards; on the axis, +X is radial."""
    rho, ux, uz = _radial(x, z)
    qa = rho - ring
    n = math.sqrt(qa * qa + y * y)
    if n == 0.0:
        return -tube, ux, 0.0, uz
    return n - tube, ux * qa / n, y / n, uz * qa / n


@exact
def sdf_plane(x, y, z):
    """The half-space y < 0 is solid: the ground under the plane y = 0."""
    return y, 0.0, 1.0, 0.0


# -- sampled grids --------------------------------------------------------------------------------


@exact
def grid_sdf_flat(values, base, nx, ny, nz, ox, oy, oz, h, x, y, z):
    """A grid's distance at (x, y, z) and its gradient, from the nodes stored flat.

    Args:
        values: (L,) float64 holding the grid's (nx, ny, nz) nodes in C order from index ``base``
            (x slowest): node (i, j, k) at ``base + (i * ny + j) * nz + k``. nx, ny, nz >= 2.
        ox, oy, oz: the position of node (0, 0, 0); h: the spacing of the nodes (> 0).

    Returns:
        (d, gx, gy, gz): the trilinear interpolant and its derivative inside the grid's box;
        beyond it, the value at the nearest point c of the box plus |p - c|, whose gradient is
        the interpolant's along the axes where p is within the box and the unit offset
        (p - c) / |p - c| along the others.
    """
    # Position in cells, clamped to the box: c is the nearest point of the box.
    rx, ry, rz = (x - ox) / h, (y - oy) / h, (z - oz) / h
    ux = min(max(rx, 0.0), nx - 1.0)
    uy = min(max(ry, 0.0), ny - 1.0)
    uz = min(max(rz, 0.0), nz - 1.0)
    i = min(int(ux), nx - 2)
    j = min(int(uy), ny - 2)
    k = min(int(uz), nz - 2)
    fx, fy, fz = ux - i, uy - j, uz - k
    row = nz
    plane = ny * nz
    a = base + i * plane + j * row + k
    c000, c001 = values[a], values[a + 1]
    c010, c011 = values[a + row], values[a + row + 1]
    c100, c101 = values[a + plane], values[a + plane + 1]
    c110, c111 = values[a + plane + row], values[a + plane + row + 1]
    # Interpolate along z, then y, then x, keeping the partial derivatives.
    c00 = c000 + fz * (c001 - c000)
    c01 = c010 + fz * (c011 - c010)
    c10 = c100 + fz * (c101 - c100)
    c11 = c110 + fz * (c111 - c110)
    c0 = c00 + fy * (c01 - c00)
    c1 = c10 + fy * (c11 - c10)
    d = c0 + fx * (c1 - c0)
    gx = (c1 - c0) / h
    gy = ((1.0 - fx) * (c01 - c00) + fx * (c11 - c10)) / h
    dz00, dz01 = c001 - c000, c011 - c010
    dz10, dz11 = c101 - c100, c111 - c110
    gz = ((1.0 - fx) * ((1.0 - fy) * dz00 + fy * dz01) + fx * ((1.0 - fy) * dz10 + fy * dz11)) / h
    # Beyond the box: add the distance to it, and let its direction be the gradient there.
    ex = x - (ox + ux * h) if rx != ux else 0.0
    ey = y - (oy + uy * h) if ry != uy else 0.0
    ez = z - (oz + uz * h) if rz != uz else 0.0
    e = math.sqrt(ex * ex + ey * ey + ez * ez)
    if e > 0.0:
        d += e
        if ex != 0.0:
            gx = ex / e
        if ey != 0.0:
            gy = ey / e
        if ez != 0.0:
            gz = ez / e
    return d, gx, gy, gz


@exact
def grid_sdf(values, ox, oy, oz, h, x, y, z):
    """:func:`grid_sdf_flat` for a grid held as one (nx, ny, nz) C-contiguous float64 array."""
    nx, ny, nz = values.shape
    return grid_sdf_flat(values.reshape(-1), 0, nx, ny, nz, ox, oy, oz, h, x, y, z)


# -- heightfields ---------------------------------------------------------------------------------


@exact
def heightfield_height(values, base, nx, nz, x0, z0, dx, dz, x, z):
    """The ground's height h(x, z) and its slopes (dh/dx, dh/dz): bilinear over the nodes
    ``values[base + i * nz + k]`` at (x0 + i dx, z0 + k dz); beyond the edges the edge's
    height continues (slope 0 across it)."""
    ux = (x - x0) / dx
    uz = (z - z0) / dz
    inside_x = 0.0 <= ux <= nx - 1.0
    inside_z = 0.0 <= uz <= nz - 1.0
    ux = min(max(ux, 0.0), nx - 1.0)
    uz = min(max(uz, 0.0), nz - 1.0)
    i = min(int(ux), nx - 2)
    k = min(int(uz), nz - 2)
    fx, fz = ux - i, uz - k
    a = base + i * nz + k
    h00, h01 = values[a], values[a + 1]
    h10, h11 = values[a + nz], values[a + nz + 1]
    h0 = h00 + fz * (h01 - h00)
    h1 = h10 + fz * (h11 - h10)
    height = h0 + fx * (h1 - h0)
    sx = (h1 - h0) / dx if inside_x else 0.0
    sz = ((1.0 - fx) * (h01 - h00) + fx * (h11 - h10)) / dz if inside_z else 0.0
    return height, sx, sz


@exact
def heightfield_sdf(values, base, nx, nz, x0, z0, dx, dz, x, y, z):
    """Signed distance above a heightfield (solid below it) and the ground's unit normal:
    ``(y - h) / sqrt(1 + |grad h|^2)``, exact on planar ground (see the module's notes)."""
    height, sx, sz = heightfield_height(values, base, nx, nz, x0, z0, dx, dz, x, z)
    norm = math.sqrt(1.0 + sx * sx + sz * sz)
    return (y - height) / norm, -sx / norm, 1.0 / norm, -sz / norm


def fractal_heights(seed: int, samples: int = 129, octaves: int = 6) -> np.ndarray:
    """Deterministic fractal terrain: (samples, samples) heights in [0, 1].

    Value noise: each octave o has a lattice of 2^(o+1) + 1 random values per side (from
    ``numpy.random.default_rng(seed)``, octave after octave), smoothly interpolated (smoothstep)
    and weighted 0.5^o; the sum is rescaled to span [0, 1] exactly. The same seed always
    gives the same terrain.
    """
    rng = np.random.default_rng(seed)
    u = np.linspace(0.0, 1.0, samples)
    total = np.zeros((samples, samples))
    for o in range(octaves):
        cells = 2 ** (o + 1)
        lattice = rng.random((cells + 1, cells + 1))
        t = u * cells
        i = np.minimum(t.astype(np.int64), cells - 1)
        f = t - i
        f = f * f * (3.0 - 2.0 * f)  # smoothstep: the slope is continuous across lattice lines
        along_z = lattice[:, i] * (1.0 - f) + lattice[:, i + 1] * f  # (cells + 1, samples)
        layer = along_z[i, :] * (1.0 - f)[:, None] + along_z[i + 1, :] * f[:, None]
        total += 0.5**o * layer
    low, high = total.min(), total.max()
    return (total - low) / (high - low) if high > low else np.zeros_like(total)


# -- frames ---------------------------------------------------------------------------------------


@in_python  # only Python calls it, once an object or keyframe: nothing to compile
def euler_quaternion(yaw, pitch, roll):
    """The unit quaternion (w, x, y, z) of ``rotation = [yaw, pitch, roll]`` (degrees):
    ``R_y(yaw) R_x(pitch) R_z(roll)``, roll applied first (see the module's notes)."""
    hy, hp, hr = math.radians(yaw) / 2.0, math.radians(pitch) / 2.0, math.radians(roll) / 2.0
    yw, yy = math.cos(hy), math.sin(hy)
    pw, px = math.cos(hp), math.sin(hp)
    rw, rz = math.cos(hr), math.sin(hr)
    w, x, y, z = multiply_of(yw, 0.0, yy, 0.0, pw, px, 0.0, 0.0)
    w, x, y, z = multiply_of(w, x, y, z, rw, 0.0, 0.0, rz)
    return normalized_of(w, x, y, z)


@exact
def rotate(qw, qx, qy, qz, x, y, z):
    """The vector (x, y, z) rotated by the unit quaternion q: the sum of q's axes weighted."""
    rx, ry, rz = right_of(qw, qx, qy, qz)
    ux, uy, uz = up_of(qw, qx, qy, qz)
    fx, fy, fz = forward_of(qw, qx, qy, qz)
    return rx * x + ux * y + fx * z, ry * x + uy * y + fy * z, rz * x + uz * y + fz * z


@exact
def rotate_inverse(qw, qx, qy, qz, x, y, z):
    """The vector rotated by the inverse of q (its conjugate)."""
    return rotate(qw, -qx, -qy, -qz, x, y, z)


@exact_inlined
def to_local(px, py, pz, qw, qx, qy, qz, x, y, z):
    """A world point in the frame at position p with rotation q: R^T (x - p)."""
    return rotate_inverse(qw, qx, qy, qz, x - px, y - py, z - pz)


@exact
def to_world(px, py, pz, qw, qx, qy, qz, x, y, z):
    """A local point in the world: p + R x."""
    wx, wy, wz = rotate(qw, qx, qy, qz, x, y, z)
    return px + wx, py + wy, pz + wz


@exact
def slerp(aw, ax, ay, az, bw, bx, by, bz, u):
    """Spherical interpolation from a (u = 0) to b (u = 1) along the shorter arc."""
    dot = aw * bw + ax * bx + ay * by + az * bz
    if dot < 0.0:  # q and -q are one rotation
        bw, bx, by, bz, dot = -bw, -bx, -by, -bz, -dot
    if dot > 0.9999995:  # nearly equal: the chord is the arc to 1e-13
        wa, wb = 1.0 - u, u
    else:
        half = math.acos(dot)
        s = math.sin(half)
        wa, wb = math.sin((1.0 - u) * half) / s, math.sin(u * half) / s
    return normalized_of(wa * aw + wb * bw, wa * ax + wb * bx, wa * ay + wb * by, wa * az + wb * bz)


@exact
def keyframe_frame(data, m, t):
    """Position and rotation at time t of a keyframed motion stored in ``data`` from index m.

    The record is ``[K, loop, has_rotations, times (K), points (3K), quaternions (4K if
    has_rotations)]``: K >= 2 keyframes at strictly increasing times. Positions are linear and
    rotations spherical between keyframes. A looping motion repeats with the period
    ``times[K-1] - times[0]`` (before the start too); one that does not loop holds its first
    keyframe before ``times[0]`` and its last after ``times[K-1]``.

    Returns:
        (px, py, pz, qw, qx, qy, qz); the rotation is the identity without rotation keyframes.
    """
    n = int(data[m])
    loop = data[m + 1] != 0.0
    has_rotations = data[m + 2] != 0.0
    times = m + 3
    points = times + n
    quats = points + 3 * n
    t0, t1 = data[times], data[times + n - 1]
    if loop:
        period = t1 - t0
        t = t0 + (t - t0) - period * math.floor((t - t0) / period)
    t = min(max(t, t0), t1)
    lo, hi = 0, n - 1  # the keyframe interval [lo, lo + 1] holding t, by bisection
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if data[times + mid] <= t:
            lo = mid
        else:
            hi = mid
    u = (t - data[times + lo]) / (data[times + hi] - data[times + lo])
    a, b = points + 3 * lo, points + 3 * hi
    px = data[a] + u * (data[b] - data[a])
    py = data[a + 1] + u * (data[b + 1] - data[a + 1])
    pz = data[a + 2] + u * (data[b + 2] - data[a + 2])
    if not has_rotations:
        return px, py, pz, 1.0, 0.0, 0.0, 0.0
    a, b = quats + 4 * lo, quats + 4 * hi
    qw, qx, qy, qz = slerp(
        data[a], data[a + 1], data[a + 2], data[a + 3], data[b], data[b + 1], data[b + 2], data[b + 3], u
    )
    return px, py, pz, qw, qx, qy, qz
