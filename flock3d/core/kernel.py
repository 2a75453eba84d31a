"""The fast step: the model's update, compiled with numba and run in parallel.

Same maths as :mod:`flock3d.core.reference`, organised for speed
(``shared/notes/performance.md``). The run loop, as pseudocode::

    for each of n steps:
        grid   <- boids counting-sorted into cells of side >= view_distance
                  (a periodic arena: cells that exactly tile its box)
        sorted <- positions, velocities, forwards gathered in cell order  (start-of-step state)
        predators turn towards their nearest boid and move                (from that state)
        for each chunk of cells, in parallel:                             (about 256 boids each)
            for each cell c of the chunk:
                buffer <- boids of the 27 cells around c that lie within
                          view_distance of c's box, copied contiguously
                          (periodic: each shifted to its image nearest c)
                for each boid i of c:
                    sums over the boids of buffer it sees                  (spec steps 1-4)
                    u_i  <- v_i + dt * (S_i + A_i + C_i + B_i + extras)    (steps 5-7)
                    q_i  <- q_i turned towards u_i by at most omega * dt   (steps 8-9)
                    v_i, p_i <- speed_i * forward(q_i), p_i + dt * v_i      (step 10)

Why it is shaped like this (measured on a 2-core machine, ``flock3d bench``):

- Every boid of a cell shares one candidate buffer, so the pair loop runs over
  one long contiguous array instead of nine short cell runs; short runs cost
  twice as much per pair because vector loops never warm up.
- The pair loop is branch-free and indexes with unsigned integers: numba then
  skips negative-index wrapping and LLVM emits plain vector loads (signed
  indices gave gathers, 2.4x slower).
- The cone test compares ``(f.d)|f.d|`` with ``cos|cos| |d|^2``: no square
  root or arccos per pair. The quaternion turn uses precomputed cosines and
  sines of the turn limit: no trigonometry per boid (it had cost 5x the turn).
- The spec's own rules run in that lean pair loop; only per-rule radii and
  cones or another separation falloff switch to a longer, generic one. In a
  periodic arena the buffer holds nearest images, so neither loop needs a
  per-pair minimum image. The world features (attractors, the path, obstacles,
  predators, wind) cost per boid, not per pair.
- Each boid writes only its own rows and sums its neighbours in an order fixed
  by the current positions, so a step is a pure function of the state: the same
  bit for bit whatever the thread count, and ``step(n)`` equals n single steps.
"""

from __future__ import annotations

import math
import os
from collections import namedtuple

# Idle OpenMP threads otherwise spin; with another busy process on a 2-core machine
# (a renderer, a second simulation) that made steps 60x slower
# (shared/notes/performance.md). It must be set before the OpenMP runtime starts;
# set OMP_WAIT_POLICY=ACTIVE yourself for a few per cent more on an idle machine.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba import prange  # noqa: E402

from flock3d.core import noise  # noqa: E402
from flock3d.core.neighbors import build_grid, build_periodic_grid  # noqa: E402
from flock3d.core.params import ARENA_SHAPES, FALLOFFS, Params  # noqa: E402
from flock3d.core.quaternion import forward_of, right_of, rotate_towards_of, turn_limit  # noqa: E402
from flock3d.core.state import FlockState  # noqa: E402

__all__ = [
    "advance",
    "advance_couzin",
    "threads",
    "KernelParams",
    "kernel_params",
    "CouzinParams",
    "couzin_params",
]

# No 'nnan'/'ninf': view_distance and max_turn_rate may legitimately be inf.
# 'reassoc' lets LLVM vectorise the per-boid sums; each boid's summation order is
# still fixed, so results do not depend on the thread count.
_FAST = {"nsz", "arcp", "contract", "afn", "reassoc"}
# Helpers are inlined into the parallel loop at numba's level (LLVM left them as calls,
# 8% slower). Numba's parfor analysis rejects nested tuples from inlined functions,
# hence their flat return values.
_helper = numba.njit(fastmath=_FAST, error_model="numpy", cache=True, inline="always")

#: Boids per unit of parallel work: large enough to amortise a candidate buffer,
#: small enough to balance two to a few dozen threads.
BOIDS_PER_CHUNK = 256

SPHERE, BOX, PERIODIC, OPEN = range(4)
INVERSE, LINEAR, LINEAR_GAP, QUADRATIC = range(4)

KernelParams = namedtuple(
    "KernelParams",
    [
        "center_x", "center_y", "center_z",
        "arena_radius",  # R (half the side of a box)
        "shape",  # SPHERE, BOX, PERIODIC or OPEN
        "planar",  # a flock in the plane z = c_z
        "confinement_radius",  # f_b * R
        "confinement",  # k_b
        "view_distance",  # r_v (cell size)
        "view2",  # r_v^2
        "cone",  # cos(alpha/2) |cos(alpha/2)|, or -inf for alpha = 360
        "separation2",  # r_s^2
        "separation", "alignment", "cohesion",  # k_s, k_a, k_c
        "generic",  # per-rule radii or cones, or another falloff: the generic pair loop
        "falloff",  # INVERSE, LINEAR, LINEAR_GAP or QUADRATIC
        "separation_distance",  # r_s, for the gap falloffs
        "average",  # average the separation (spec) rather than sum it
        "separation_cone", "alignment2", "alignment_cone", "cohesion2", "cohesion_cone",
        "min_speed", "max_speed",
        "cos_max", "cos_half", "sin_half",  # turn limit, see quaternion.turn_limit
        "dt",
        "path_weight", "path_reach2",
        "avoidance", "avoidance_ahead", "avoidance_margin",
        "flee_distance2", "flee",
        "predator_speed", "predator_cos_max", "predator_cos_half", "predator_sin_half",
        "wind_x", "wind_y", "wind_z",
        "extras",  # any world feature at all (else their per-boid code is skipped)
    ],
)  # fmt: skip
KernelParams.__doc__ = """Model parameters as the kernel consumes them, from :func:`kernel_params`."""


def _cone(fov_degrees: float) -> float:
    """The cone test's threshold: cos(fov/2) |cos(fov/2)|, or -inf when nothing is hidden.

    cos(fov/2) is computed as sin((180 - fov)/2), which is exactly 0 at fov = 180, so a
    boid exactly abreast (angle 90) is seen, as the spec's angle <= fov/2 says; cos(pi/2)
    would give 6e-17 and hide it.
    """
    if fov_degrees >= 360.0:
        return -math.inf
    c = math.sin(math.radians(180.0 - fov_degrees) / 2.0)
    return c * abs(c)


def kernel_params(params: Params) -> KernelParams:
    """Precompute what the kernel needs from ``params`` (squares, cosines, turn limits)."""
    (rs, ra, rc), (fs, fa, fc) = params.rule_distances, params.rule_fovs
    generic = (
        params.separation_falloff != "inverse"
        or (ra, rc) != (params.view_distance, params.view_distance)
        or (fs, fa, fc) != (params.fov, params.fov, params.fov)
    )
    path = params.path
    return KernelParams(
        *(float(c) for c in params.arena_center),
        float(params.arena_radius),
        ARENA_SHAPES.index(params.arena_shape),
        params.dimensions == 2,
        float(params.confinement_start * params.arena_radius),
        float(params.confinement),
        float(params.view_distance),
        float(params.view_distance) ** 2,
        _cone(params.fov),
        float(rs) ** 2,
        float(params.separation),
        float(params.alignment),
        float(params.cohesion),
        generic,
        FALLOFFS.index(params.separation_falloff),
        float(rs),
        bool(params.separation_average),
        _cone(fs),
        float(ra) ** 2,
        _cone(fa),
        float(rc) ** 2,
        _cone(fc),
        float(params.min_speed),
        float(params.max_speed),
        *turn_limit(math.radians(params.max_turn_rate) * params.dt),
        float(params.dt),
        float(path.weight) if path else 0.0,
        float(path.reach) ** 2 if path else 0.0,
        float(params.avoidance),
        float(params.max_speed * params.avoidance_lookahead),
        float(params.avoidance_margin),
        float(params.flee_distance) ** 2,
        float(params.flee),
        float(params.predator_speed),
        *turn_limit(math.radians(params.predator_turn_rate) * params.dt),
        *(float(w) for w in params.wind),
        bool(
            params.attractors
            or params.path
            or params.obstacles
            or params.predator_count
            or any(params.wind)
            or any(any(row) for row in params.wind_gradient)
        ),
    )


def _world_arrays(params: Params) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Attractors (K, 5: x y z weight radius), path (P, 3), obstacles (O, 4: x y z radius), G (3, 3)."""
    attractors = np.array([[*a.position, a.weight, a.radius] for a in params.attractors], dtype=np.float64)
    path = np.array(params.path.points if params.path else [], dtype=np.float64)
    obstacles = np.array([[*o.center, o.radius] for o in params.obstacles], dtype=np.float64)
    return (
        attractors.reshape(-1, 5),
        path.reshape(-1, 3),
        obstacles.reshape(-1, 4),
        np.asarray(params.wind_gradient, dtype=np.float64).reshape(3, 3),
    )


# -- the neighbourhood of a cell -----------------------------------------------------------


@_helper
def _cell_coords(c, nx, ny):
    return c % nx, (c // nx) % ny, c // (nx * ny)


@_helper
def _wrap(index, n, periodic):
    """A neighbour cell's index along one axis and its image shift (-1, 0, +1 boxes), or -1."""
    if 0 <= index < n:
        return index, 0.0
    if not periodic:
        return -1, 0.0
    if index < 0:
        return index + n, -1.0
    return index - n, 1.0


@_helper
def _copy_run(a, b, shift_x, shift_y, shift_z, lo_x, lo_y, lo_z, size, reach2, cols, buf, m):
    """Append boids a..b of the sorted state, shifted by an image, if within reach of the cell box."""
    xs, ys, zs, vxs, vys, vzs = cols
    bx, by, bz, bvx, bvy, bvz = buf
    hi_x, hi_y, hi_z = lo_x + size, lo_y + size, lo_z + size
    for jj in range(a, b):
        j = numba.uint64(jj)
        x, y, z = xs[j] + shift_x, ys[j] + shift_y, zs[j] + shift_z
        gx = max(lo_x - x, 0.0, x - hi_x)
        gy = max(lo_y - y, 0.0, y - hi_y)
        gz = max(lo_z - z, 0.0, z - hi_z)
        # Always copy, advance only when kept: a branch-free compaction.
        mm = numba.uint64(m)
        bx[mm], by[mm], bz[mm] = x, y, z
        bvx[mm], bvy[mm], bvz[mm] = vxs[j], vys[j], vzs[j]
        m += 1 if gx * gx + gy * gy + gz * gz < reach2 else 0
    return m


@_helper
def _fill_candidates(c, origin, size, nx, ny, nz, start, cols, reach2, buf, periodic, side, count_only):
    """Copy into ``buf`` the boids around cell c that may lie within reach of its boids.

    Candidates are the boids of the 27 surrounding cells whose distance to c's box
    is below sqrt(reach2). In a periodic arena (box side ``side``) each is copied at
    its image nearest to c, so plain distances in ``buf`` are minimum-image ones.
    ``cols`` and ``buf`` are 6-tuples of 1-D arrays (x, y, z, vx, vy, vz). Returns
    the number copied; with ``count_only``, only counts the boids (and images) of
    those cells, without copying: the buffer size that cell c needs.
    """
    ox, oy, oz = origin
    cx, cy, cz = _cell_coords(c, nx, ny)
    lo_x, lo_y, lo_z = ox + cx * size, oy + cy * size, oz + cz * size
    m = 0
    for dz in range(-1, 2):
        z, wz = _wrap(cz + dz, nz, periodic and nz > 1)
        if z < 0:
            continue
        for dy in range(-1, 2):
            y, wy = _wrap(cy + dy, ny, periodic)
            if y < 0:
                continue
            row = (z * ny + y) * nx
            # One run of cells along x, or three when wrap-around can split it.
            for dx in range(-1, 2) if periodic else range(1):
                if periodic:
                    x, wx = _wrap(cx + dx, nx, True)
                    a, b = start[row + x], start[row + x + 1]
                else:
                    wx = 0.0
                    a, b = start[row + max(cx - 1, 0)], start[row + min(cx + 1, nx - 1) + 1]
                if count_only:
                    m += b - a
                else:
                    m = _copy_run(
                        a, b, wx * side, wy * side, wz * side, lo_x, lo_y, lo_z, size, reach2, cols, buf, m
                    )
    return m


@numba.njit(cache=True)
def _chunk_buffer(c_lo, c_hi, origin, size, nx, ny, nz, start, cols, periodic, side):
    """A (6, capacity) buffer big enough for the candidates of any cell c_lo..c_hi - 1."""
    cap = 1
    for c in range(c_lo, c_hi):
        if start[c + 1] > start[c]:
            count = _fill_candidates(
                c, origin, size, nx, ny, nz, start, cols, 0.0, cols, periodic, side, True
            )
            cap = max(cap, count)
    return np.empty((6, cap))


@_helper
def _step_grid(pos, vel, kp, radius, centre, side, periodic):
    """The step's cell grid: the flock's bounding box, or the exact tiling of a periodic box."""
    if periodic:
        # The cell images assume every boid inside the box (given or edited positions may not be).
        _wrap_into_box(pos, vel, kp, side)
        return build_periodic_grid(pos, centre, kp.arena_radius, radius, kp.planar)
    return build_grid(pos, radius)


# -- the pair loops ------------------------------------------------------------------------


@_helper
def _neighbour_sums(buf, m, px, py, pz, fx, fy, fz, kp):
    """Spec steps 1-4 for one boid: sums over the candidates it sees.

    Returns ``(n_close, sep_x, sep_y, sep_z, n_seen, vel_x, vel_y, vel_z, n_seen,
    off_x, off_y, off_z)``: ``sep = sum (p_i - p_j) / d^2`` over the seen boids
    closer than r_s, and ``vel = sum v_j``, ``off = sum (p_j - p_i)`` over all
    seen boids (alignment and cohesion share the set, hence n_seen twice).
    """
    bx, by, bz, bvx, bvy, bvz = buf
    view2, cone, sep2 = kp.view2, kp.cone, kp.separation2
    n_seen = 0.0
    n_close = 0.0
    sep_x = sep_y = sep_z = 0.0
    vel_x = vel_y = vel_z = 0.0
    off_x = off_y = off_z = 0.0
    for jj in range(m):
        j = numba.uint64(jj)
        dx = bx[j] - px
        dy = by[j] - py
        dz = bz[j] - pz
        d2 = dx * dx + dy * dy + dz * dz
        dot = fx * dx + fy * dy + fz * dz
        # d > 0 excludes the boid itself and coincident boids (spec step 1).
        w = 1.0 if (d2 > 0.0) & (d2 < view2) & (dot * abs(dot) >= cone * d2) else 0.0
        n_seen += w
        vel_x += w * bvx[j]
        vel_y += w * bvy[j]
        vel_z += w * bvz[j]
        off_x += w * dx
        off_y += w * dy
        off_z += w * dz
        # Written so that LLVM vectorises it ("1.0 / d2 if close" was not).
        ws = w / d2 if (d2 < sep2) & (d2 > 0.0) else 0.0
        n_close += 1.0 if ws > 0.0 else 0.0
        sep_x -= ws * dx
        sep_y -= ws * dy
        sep_z -= ws * dz
    return n_close, sep_x, sep_y, sep_z, n_seen, vel_x, vel_y, vel_z, n_seen, off_x, off_y, off_z


@_helper
def _generic_neighbour_sums(buf, m, px, py, pz, fx, fy, fz, kp):
    """As :func:`_neighbour_sums`, with a radius and a cone per rule and any falloff.

    The separation push of a close boid at distance d along the unit offset u away
    from it is u/d (inverse), u*d (linear), u*(r_s - d) (linear_gap) or
    u*(r_s - d)^2 (quadratic); it is returned as ``sep`` summed over the close set.
    """
    bx, by, bz, bvx, bvy, bvz = buf
    sep2, sep_cone = kp.separation2, kp.separation_cone
    ali2, ali_cone = kp.alignment2, kp.alignment_cone
    coh2, coh_cone = kp.cohesion2, kp.cohesion_cone
    falloff, rs = kp.falloff, kp.separation_distance
    n_close = n_ali = n_coh = 0.0
    sep_x = sep_y = sep_z = 0.0
    vel_x = vel_y = vel_z = 0.0
    off_x = off_y = off_z = 0.0
    for jj in range(m):
        j = numba.uint64(jj)
        dx = bx[j] - px
        dy = by[j] - py
        dz = bz[j] - pz
        d2 = dx * dx + dy * dy + dz * dz
        dot = fx * dx + fy * dy + fz * dz
        c = dot * abs(dot)
        there = d2 > 0.0
        wa = 1.0 if there & (d2 < ali2) & (c >= ali_cone * d2) else 0.0
        wc = 1.0 if there & (d2 < coh2) & (c >= coh_cone * d2) else 0.0
        close = there & (d2 < sep2) & (c >= sep_cone * d2)
        n_ali += wa
        vel_x += wa * bvx[j]
        vel_y += wa * bvy[j]
        vel_z += wa * bvz[j]
        n_coh += wc
        off_x += wc * dx
        off_y += wc * dy
        off_z += wc * dz
        if falloff == INVERSE:
            ws = 1.0 / d2 if close else 0.0
        elif falloff == LINEAR:
            ws = 1.0 if close else 0.0
        elif falloff == LINEAR_GAP:
            d = math.sqrt(d2)
            ws = (rs - d) / d if close else 0.0
        else:
            d = math.sqrt(d2)
            ws = (rs - d) * (rs - d) / d if close else 0.0
        n_close += 1.0 if close else 0.0
        sep_x -= ws * dx
        sep_y -= ws * dy
        sep_z -= ws * dz
    return n_close, sep_x, sep_y, sep_z, n_ali, vel_x, vel_y, vel_z, n_coh, off_x, off_y, off_z


# -- per-boid forces -----------------------------------------------------------------------


@_helper
def _image(d, side, periodic):
    """A coordinate difference reduced to the nearest image in a periodic box."""
    if periodic:
        return d - side * np.rint(d / side)
    return d


@_helper
def _acceleration(px, py, pz, vx, vy, vz, n_close, sx, sy, sz, n_ali, wx, wy, wz, n_coh, ox, oy, oz, kp):
    """Spec steps 2-5: separation + alignment + cohesion + confinement, for the arena's shape."""
    ax = ay = az = 0.0
    if n_close > 0.0:
        w = kp.separation / n_close if kp.average else kp.separation
        ax += w * sx
        ay += w * sy
        az += w * sz
    if n_ali > 0.0:
        m = 1.0 / n_ali
        ax += kp.alignment * (wx * m - vx)
        ay += kp.alignment * (wy * m - vy)
        az += kp.alignment * (wz * m - vz)
    if n_coh > 0.0:
        m = kp.cohesion / n_coh
        ax += m * ox
        ay += m * oy
        az += m * oz
    rx, ry, rz = px - kp.center_x, py - kp.center_y, pz - kp.center_z
    if kp.shape == SPHERE:
        r = math.sqrt(rx * rx + ry * ry + rz * rz)
        if r > kp.confinement_radius:
            w = kp.confinement / r
            ax -= w * rx
            ay -= w * ry
            az -= w * rz
    elif kp.shape == BOX:
        start, k = kp.confinement_radius, kp.confinement
        ax += -k if rx > start else (k if rx < -start else 0.0)
        ay += -k if ry > start else (k if ry < -start else 0.0)
        if not kp.planar:
            az += -k if rz > start else (k if rz < -start else 0.0)
    return ax, ay, az


@_helper
def _seek(px, py, pz, vx, vy, vz, tx, ty, tz, weight, kp, side, periodic):
    """Reynolds' seek towards (tx, ty, tz): weight * (max_speed * unit(offset) - v)."""
    dx = _image(tx - px, side, periodic)
    dy = _image(ty - py, side, periodic)
    dz = _image(tz - pz, side, periodic and not kp.planar)
    d = math.sqrt(dx * dx + dy * dy + dz * dz)
    if d == 0.0:
        return 0.0, 0.0, 0.0
    s = kp.max_speed / d
    return weight * (s * dx - vx), weight * (s * dy - vy), weight * (s * dz - vz)


@_helper
def _extras(i, px, py, pz, vx, vy, vz, fx, fy, fz, qw, qx, qy, qz, kp, attractors, path, waypoints, obstacles,
            gradient, predators, side, periodic):  # fmt: skip
    """Step 6, the extra forces: attractors, the path, obstacles, predators, wind.

    Advances boid i's waypoint when it is within reach. Returns the acceleration.
    """
    periodic_z = periodic and not kp.planar  # a planar flock wraps in x and y only
    ax = ay = az = 0.0
    for k in range(attractors.shape[0]):
        tx, ty, tz, weight, radius = (
            attractors[k, 0],
            attractors[k, 1],
            attractors[k, 2],
            attractors[k, 3],
            attractors[k, 4],
        )
        dx = _image(tx - px, side, periodic)
        dy = _image(ty - py, side, periodic)
        dz = _image(tz - pz, side, periodic_z)
        if dx * dx + dy * dy + dz * dz < radius * radius:
            sx, sy, sz = _seek(px, py, pz, vx, vy, vz, tx, ty, tz, weight, kp, side, periodic)
            ax += sx
            ay += sy
            az += sz
    n_points = path.shape[0]
    if n_points:
        k = waypoints[i]
        dx = _image(path[k, 0] - px, side, periodic)
        dy = _image(path[k, 1] - py, side, periodic)
        dz = _image(path[k, 2] - pz, side, periodic_z)
        if dx * dx + dy * dy + dz * dz < kp.path_reach2:
            k = (k + 1) % n_points
            waypoints[i] = k
        sx, sy, sz = _seek(
            px, py, pz, vx, vy, vz, path[k, 0], path[k, 1], path[k, 2], kp.path_weight, kp, side, periodic
        )
        ax += sx
        ay += sy
        az += sz
    ahead = kp.avoidance_ahead
    for k in range(obstacles.shape[0]):
        cx, cy, cz, radius = obstacles[k, 0], obstacles[k, 1], obstacles[k, 2], obstacles[k, 3]
        clearance = radius + kp.avoidance_margin
        ex = -_image(cx - px, side, periodic)  # from the centre's nearest image to the boid
        ey = -_image(cy - py, side, periodic)
        ez = -_image(cz - pz, side, periodic_z)
        e = math.sqrt(ex * ex + ey * ey + ez * ez)
        if e < clearance:  # inside the margin: push straight out
            if e > 0.0:
                ax += kp.avoidance * ex / e
                ay += kp.avoidance * ey / e
                az += kp.avoidance * ez / e
            else:
                ax += kp.avoidance * fx
                ay += kp.avoidance * fy
                az += kp.avoidance * fz
            continue
        t = -(ex * fx + ey * fy + ez * fz)  # distance ahead of the closest approach
        if 0.0 < t < ahead:
            lx, ly, lz = ex + t * fx, ey + t * fy, ez + t * fz  # from the centre to that point
            l2 = lx * lx + ly * ly + lz * lz
            if l2 < clearance * clearance:
                w = kp.avoidance * (1.0 - t / ahead)
                if l2 > 0.0:
                    inv = 1.0 / math.sqrt(l2)
                    ax += w * lx * inv
                    ay += w * ly * inv
                    az += w * lz * inv
                else:  # heading straight at the centre: veer right
                    rx, ry, rz = right_of(qw, qx, qy, qz)
                    ax += w * rx
                    ay += w * ry
                    az += w * rz
    if predators.shape[0]:
        cone = kp.cone
        for k in range(predators.shape[0]):
            dx = _image(predators[k, 0] - px, side, periodic)
            dy = _image(predators[k, 1] - py, side, periodic)
            dz = _image(predators[k, 2] - pz, side, periodic_z)
            d2 = dx * dx + dy * dy + dz * dz
            dot = fx * dx + fy * dy + fz * dz
            if (d2 > 0.0) & (d2 < kp.flee_distance2) & (dot * abs(dot) >= cone * d2):
                w = kp.flee / math.sqrt(d2)
                ax -= w * dx
                ay -= w * dy
                az -= w * dz
    rx, ry, rz = px - kp.center_x, py - kp.center_y, pz - kp.center_z
    ax += kp.wind_x + gradient[0, 0] * rx + gradient[0, 1] * ry + gradient[0, 2] * rz
    ay += kp.wind_y + gradient[1, 0] * rx + gradient[1, 1] * ry + gradient[1, 2] * rz
    az += kp.wind_z + gradient[2, 0] * rx + gradient[2, 1] * ry + gradient[2, 2] * rz
    return ax, ay, az


@_helper
def _settle(px, py, pz, vx, vy, vz, kp, side, periodic):
    """After a move: keep a planar flock in its plane; wrap positions in a periodic arena."""
    if kp.planar:
        pz, vz = kp.center_z, 0.0
    if periodic:
        lo_x, lo_y = kp.center_x - kp.arena_radius, kp.center_y - kp.arena_radius
        px = lo_x + (px - lo_x) % side
        py = lo_y + (py - lo_y) % side
        if not kp.planar:
            lo_z = kp.center_z - kp.arena_radius
            pz = lo_z + (pz - lo_z) % side
    return px, py, pz, vx, vy, vz


@_helper
def _turn_and_move(i, px, py, pz, vx, vy, vz, fx, fy, fz, ax, ay, az, pos, vel, quat, kp, side, periodic):
    """Spec steps 7-10 for boid i; writes its new row of pos, vel and quat."""
    dt = kp.dt
    if kp.planar:
        az = 0.0
    ux, uy, uz = vx + dt * ax, vy + dt * ay, vz + dt * az
    u = math.sqrt(ux * ux + uy * uy + uz * uz)
    speed = min(max(u, kp.min_speed), kp.max_speed)
    if u > 0.0:
        ex, ey, ez = ux / u, uy / u, uz / u
    else:
        ex, ey, ez = fx, fy, fz
    qw, qx, qy, qz = rotate_towards_of(
        quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3], ex, ey, ez, kp.cos_max, kp.cos_half, kp.sin_half
    )
    hx, hy, hz = forward_of(qw, qx, qy, qz)
    quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3] = qw, qx, qy, qz
    vx, vy, vz = speed * hx, speed * hy, speed * hz
    px, py, pz, vx, vy, vz = _settle(px + dt * vx, py + dt * vy, pz + dt * vz, vx, vy, vz, kp, side, periodic)
    vel[i, 0], vel[i, 1], vel[i, 2] = vx, vy, vz
    pos[i, 0], pos[i, 1], pos[i, 2] = px, py, pz


@numba.njit(fastmath=_FAST, error_model="numpy", cache=True)
def _hunt(pred_pos, pred_vel, pred_quat, pos, kp, side, periodic):
    """Predators: turn (at their own rate) towards their nearest boid and fly on at their speed.

    Reads only the boids' start-of-step positions; the lowest index wins a tie.
    """
    n = pos.shape[0]
    periodic_z = periodic and not kp.planar
    for k in range(pred_pos.shape[0]):
        qx, qy, qz = pred_pos[k, 0], pred_pos[k, 1], pred_pos[k, 2]
        ex, ey, ez = forward_of(pred_quat[k, 0], pred_quat[k, 1], pred_quat[k, 2], pred_quat[k, 3])
        best = np.inf
        bx = by = bz = 0.0
        for j in range(n):
            dx = _image(pos[j, 0] - qx, side, periodic)
            dy = _image(pos[j, 1] - qy, side, periodic)
            dz = _image(pos[j, 2] - qz, side, periodic_z)
            d2 = dx * dx + dy * dy + dz * dz
            if d2 < best:
                best, bx, by, bz = d2, dx, dy, dz
        if kp.planar:
            bz = 0.0
        d = math.sqrt(bx * bx + by * by + bz * bz)
        if n and d > 0.0:
            ex, ey, ez = bx / d, by / d, bz / d
        w, x, y, z = rotate_towards_of(
            pred_quat[k, 0], pred_quat[k, 1], pred_quat[k, 2], pred_quat[k, 3], ex, ey, ez,
            kp.predator_cos_max, kp.predator_cos_half, kp.predator_sin_half,
        )  # fmt: skip
        pred_quat[k, 0], pred_quat[k, 1], pred_quat[k, 2], pred_quat[k, 3] = w, x, y, z
        hx, hy, hz = forward_of(w, x, y, z)
        s, dt = kp.predator_speed, kp.dt
        vx, vy, vz = s * hx, s * hy, s * hz
        px, py, pz, vx, vy, vz = _settle(
            qx + dt * vx, qy + dt * vy, qz + dt * vz, vx, vy, vz, kp, side, periodic
        )
        pred_pos[k, 0], pred_pos[k, 1], pred_pos[k, 2] = px, py, pz
        pred_vel[k, 0], pred_vel[k, 1], pred_vel[k, 2] = vx, vy, vz


@numba.njit(fastmath=_FAST, error_model="numpy", cache=True)
def _wrap_into_box(pos, vel, kp, side):
    for i in range(pos.shape[0]):
        p = _settle(pos[i, 0], pos[i, 1], pos[i, 2], vel[i, 0], vel[i, 1], vel[i, 2], kp, side, True)
        pos[i, 0], pos[i, 1], pos[i, 2] = p[0], p[1], p[2]


@numba.njit(cache=True)
def _chunk_cells(start, n_boids, n_chunks):
    """Cell boundaries splitting the sorted boids into ``n_chunks`` runs of whole cells."""
    n_cells = start.shape[0] - 1
    bounds = np.empty(n_chunks + 1, dtype=np.int64)
    bounds[0] = 0
    c = 0
    for t in range(1, n_chunks):
        target = (n_boids * t) // n_chunks
        while start[c + 1] <= target:
            c += 1
        bounds[t] = c
    bounds[n_chunks] = n_cells
    return bounds


@numba.njit(parallel=True, fastmath=_FAST, error_model="numpy", cache=True)
def _advance(pos, vel, quat, waypoints, pred_pos, pred_vel, pred_quat, n_steps, kp, attractors, path,
             obstacles, gradient):  # fmt: skip
    n = pos.shape[0]
    periodic = kp.shape == PERIODIC
    side = 2.0 * kp.arena_radius
    centre = np.array([kp.center_x, kp.center_y, kp.center_z])
    # Start-of-step state in cell order.
    xs, ys, zs = np.empty(n), np.empty(n), np.empty(n)
    vxs, vys, vzs = np.empty(n), np.empty(n), np.empty(n)
    fxs, fys, fzs = np.empty(n), np.empty(n), np.empty(n)
    cols = (xs, ys, zs, vxs, vys, vzs)
    n_chunks = max(1, (n + BOIDS_PER_CHUNK - 1) // BOIDS_PER_CHUNK)
    for _ in range(n_steps):
        if periodic:
            _wrap_into_box(pred_pos, pred_vel, kp, side)
        grid = _step_grid(pos, vel, kp, kp.view_distance, centre, side, periodic)
        # Plain values only inside prange: numba cannot see CellGrid from a parallel body.
        order, start = grid.order, grid.cell_start
        nx, ny, nz = grid.nx, grid.ny, grid.nz
        origin, size = (grid.origin_x, grid.origin_y, grid.origin_z), grid.cell_size
        for k in prange(n):
            i = order[k]
            xs[k], ys[k], zs[k] = pos[i, 0], pos[i, 1], pos[i, 2]
            vxs[k], vys[k], vzs[k] = vel[i, 0], vel[i, 1], vel[i, 2]
            fxs[k], fys[k], fzs[k] = forward_of(quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3])
        # Predators move from the start-of-step state; boids flee from where they were.
        hunters = pred_pos.copy()
        _hunt(pred_pos, pred_vel, pred_quat, pos, kp, side, periodic)
        bounds = _chunk_cells(start, n, n_chunks)
        for t in prange(n_chunks):
            c_lo, c_hi = bounds[t], bounds[t + 1]
            b = _chunk_buffer(c_lo, c_hi, origin, size, nx, ny, nz, start, cols, periodic, side)
            buf = (b[0], b[1], b[2], b[3], b[4], b[5])
            for c in range(c_lo, c_hi):
                if start[c + 1] == start[c]:
                    continue
                m = _fill_candidates(
                    c, origin, size, nx, ny, nz, start, cols, kp.view2, buf, periodic, side, False
                )
                for k in range(start[c], start[c + 1]):
                    i = order[k]
                    px, py, pz = xs[k], ys[k], zs[k]
                    vx, vy, vz = vxs[k], vys[k], vzs[k]
                    fx, fy, fz = fxs[k], fys[k], fzs[k]
                    if kp.generic:
                        n_close, sx, sy, sz, n_ali, wx, wy, wz, n_coh, ox, oy, oz = _generic_neighbour_sums(
                            buf, m, px, py, pz, fx, fy, fz, kp
                        )
                    else:
                        n_close, sx, sy, sz, n_ali, wx, wy, wz, n_coh, ox, oy, oz = _neighbour_sums(
                            buf, m, px, py, pz, fx, fy, fz, kp
                        )
                    ax, ay, az = _acceleration(
                        px, py, pz, vx, vy, vz, n_close, sx, sy, sz, n_ali, wx, wy, wz, n_coh, ox, oy, oz, kp
                    )
                    if kp.extras:
                        qw, qx, qy, qz = quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3]
                        ex, ey, ez = _extras(
                            i, px, py, pz, vx, vy, vz, fx, fy, fz, qw, qx, qy, qz,
                            kp, attractors, path, waypoints, obstacles, gradient, hunters, side, periodic,
                        )  # fmt: skip
                        ax, ay, az = ax + ex, ay + ey, az + ez
                    _turn_and_move(
                        i, px, py, pz, vx, vy, vz, fx, fy, fz, ax, ay, az, pos, vel, quat, kp, side, periodic
                    )


# -- the Couzin et al. (2002) zone model ------------------------------------------------------

CouzinParams = namedtuple(
    "CouzinParams",
    [
        "center_x", "center_y", "center_z", "arena_radius", "shape", "planar",
        "repulsion2", "orientation2", "attraction2",  # r_r^2, r_o^2, r_a^2
        "attraction",  # r_a: the neighbour search radius
        "cone",  # of alpha
        "cos_max", "cos_half", "sin_half",  # theta * tau
        "dt", "speed", "sigma",
    ],
)  # fmt: skip
CouzinParams.__doc__ = (
    """The Couzin model's parameters as its kernel consumes them, from :func:`couzin_params`."""
)


def couzin_params(params: Params) -> CouzinParams:
    r_r, r_o, r_a = params.zone_radii
    return CouzinParams(
        *(float(c) for c in params.arena_center),
        float(params.arena_radius),
        ARENA_SHAPES.index(params.arena_shape),
        params.dimensions == 2,
        float(r_r) ** 2,
        float(r_o) ** 2,
        float(r_a) ** 2,
        float(r_a),
        _cone(params.fov),
        *turn_limit(math.radians(params.max_turn_rate) * params.dt),
        float(params.dt),
        float(params.speed),
        float(params.noise_sigma),
    )


@_helper
def _zone_sums(buf, m, px, py, pz, fx, fy, fz, kp):
    """Sums over the individuals a Couzin agent perceives, zone by zone.

    ``buf`` holds positions and unit headings. Returns ``(n_r, r_x, r_y, r_z, n_o, o_x,
    o_y, o_z, n_a, a_x, a_y, a_z)``: counts, and sums of unit offsets (repulsion and
    attraction zones) and of unit headings (orientation zone).
    """
    bx, by, bz, hx, hy, hz = buf
    rr2, ro2, ra2, cone = kp.repulsion2, kp.orientation2, kp.attraction2, kp.cone
    n_r = n_o = n_a = 0.0
    r_x = r_y = r_z = o_x = o_y = o_z = a_x = a_y = a_z = 0.0
    for jj in range(m):
        j = numba.uint64(jj)
        dx = bx[j] - px
        dy = by[j] - py
        dz = bz[j] - pz
        d2 = dx * dx + dy * dy + dz * dz
        dot = fx * dx + fy * dy + fz * dz
        w = 1.0 if (d2 > 0.0) & (d2 < ra2) & (dot * abs(dot) >= cone * d2) else 0.0
        inv = w / math.sqrt(d2) if d2 > 0.0 else 0.0
        wr = inv if d2 < rr2 else 0.0
        wo = w if (d2 >= rr2) & (d2 < ro2) else 0.0
        wa = inv if d2 >= ro2 else 0.0
        n_r += 1.0 if wr > 0.0 else 0.0
        n_o += wo
        n_a += 1.0 if wa > 0.0 else 0.0
        r_x += wr * dx
        r_y += wr * dy
        r_z += wr * dz
        o_x += wo * hx[j]
        o_y += wo * hy[j]
        o_z += wo * hz[j]
        a_x += wa * dx
        a_y += wa * dy
        a_z += wa * dz
    return n_r, r_x, r_y, r_z, n_o, o_x, o_y, o_z, n_a, a_x, a_y, a_z


@_helper
def _normalised(x, y, z):
    """The unit vector along (x, y, z); the zero vector stays zero (headings can cancel)."""
    n = math.sqrt(x * x + y * y + z * z)
    if n == 0.0:
        return 0.0, 0.0, 0.0
    return x / n, y / n, z / n


@_helper
def _perturbed(dx, dy, dz, planar, sigma, seed, step_count, index):
    """The noise: the direction rotated by a Gaussian angle (sd sigma) about a random perpendicular."""
    phi = sigma * noise.gaussian(seed, step_count, index, 0)
    c, s = math.cos(phi), math.sin(phi)
    if planar:
        ex, ey, ez = _normalised(-dy, dx, 0.0)
        return c * dx + s * ex, c * dy + s * ey, c * dz + s * ez
    psi = 2.0 * math.pi * noise.uniform(seed, step_count, index, 2)
    if abs(dx) < 0.9:  # e1 = d x (1, 0, 0)
        e1x, e1y, e1z = _normalised(0.0, dz, -dy)
    else:  # e1 = d x (0, 1, 0)
        e1x, e1y, e1z = _normalised(-dz, 0.0, dx)
    e2x, e2y, e2z = dy * e1z - dz * e1y, dz * e1x - dx * e1z, dx * e1y - dy * e1x
    cp, sp = math.cos(psi), math.sin(psi)
    return (
        c * dx + s * (cp * e1x + sp * e2x),
        c * dy + s * (cp * e1y + sp * e2y),
        c * dz + s * (cp * e1z + sp * e2z),
    )


@numba.njit(parallel=True, fastmath=_FAST, error_model="numpy", cache=True)
def _advance_couzin(pos, vel, quat, n_steps, first_step, seed, kp):
    n = pos.shape[0]
    periodic = kp.shape == PERIODIC
    side = 2.0 * kp.arena_radius
    centre = np.array([kp.center_x, kp.center_y, kp.center_z])
    xs, ys, zs = np.empty(n), np.empty(n), np.empty(n)
    fxs, fys, fzs = np.empty(n), np.empty(n), np.empty(n)
    cols = (xs, ys, zs, fxs, fys, fzs)  # the buffer carries unit headings, not velocities
    n_chunks = max(1, (n + BOIDS_PER_CHUNK - 1) // BOIDS_PER_CHUNK)
    for step in range(n_steps):
        step_count = first_step + step
        grid = _step_grid(pos, vel, kp, kp.attraction, centre, side, periodic)
        order, start = grid.order, grid.cell_start
        nx, ny, nz = grid.nx, grid.ny, grid.nz
        origin, size = (grid.origin_x, grid.origin_y, grid.origin_z), grid.cell_size
        for k in prange(n):
            i = order[k]
            xs[k], ys[k], zs[k] = pos[i, 0], pos[i, 1], pos[i, 2]
            fxs[k], fys[k], fzs[k] = forward_of(quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3])
        bounds = _chunk_cells(start, n, n_chunks)
        for t in prange(n_chunks):
            c_lo, c_hi = bounds[t], bounds[t + 1]
            b = _chunk_buffer(c_lo, c_hi, origin, size, nx, ny, nz, start, cols, periodic, side)
            buf = (b[0], b[1], b[2], b[3], b[4], b[5])
            for c in range(c_lo, c_hi):
                if start[c + 1] == start[c]:
                    continue
                m = _fill_candidates(
                    c, origin, size, nx, ny, nz, start, cols, kp.attraction2, buf, periodic, side, False
                )
                for k in range(start[c], start[c + 1]):
                    i = order[k]
                    px, py, pz = xs[k], ys[k], zs[k]
                    fx, fy, fz = fxs[k], fys[k], fzs[k]
                    n_r, rx, ry, rz, n_o, ox, oy, oz, n_a, ax, ay, az = _zone_sums(
                        buf, m, px, py, pz, fx, fy, fz, kp
                    )
                    # Repulsion has priority; else orientation (own heading included) and
                    # attraction, averaged when both zones are occupied; else keep going.
                    dx, dy, dz = fx, fy, fz
                    if n_r > 0.0:
                        dx, dy, dz = -rx, -ry, -rz
                    elif n_o > 0.0 or n_a > 0.0:
                        if n_o > 0.0:
                            dx, dy, dz = _normalised(fx + ox, fy + oy, fz + oz)
                        if n_a > 0.0:
                            tx, ty, tz = _normalised(ax, ay, az)
                            if n_o > 0.0:
                                dx, dy, dz = 0.5 * (dx + tx), 0.5 * (dy + ty), 0.5 * (dz + tz)
                            else:
                                dx, dy, dz = tx, ty, tz
                    if kp.planar:  # headings carry rounding out of the plane; drop it
                        dz = 0.0
                    if dx * dx + dy * dy + dz * dz > 0.0:
                        dx, dy, dz = _normalised(dx, dy, dz)
                    else:
                        dx, dy, dz = fx, fy, fz
                    dx, dy, dz = _perturbed(dx, dy, dz, kp.planar, kp.sigma, seed, step_count, i)
                    qw, qx, qy, qz = rotate_towards_of(
                        quat[i, 0],
                        quat[i, 1],
                        quat[i, 2],
                        quat[i, 3],
                        dx,
                        dy,
                        dz,
                        kp.cos_max,
                        kp.cos_half,
                        kp.sin_half,
                    )
                    quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3] = qw, qx, qy, qz
                    hx, hy, hz = forward_of(qw, qx, qy, qz)
                    s, dt = kp.speed, kp.dt
                    vx, vy, vz = s * hx, s * hy, s * hz
                    px, py, pz, vx, vy, vz = _settle(
                        px + dt * vx, py + dt * vy, pz + dt * vz, vx, vy, vz, kp, side, periodic
                    )
                    vel[i, 0], vel[i, 1], vel[i, 2] = vx, vy, vz
                    pos[i, 0], pos[i, 1], pos[i, 2] = px, py, pz


def advance_couzin(state: FlockState, params: Params, n: int = 1, seed: int = 0) -> None:
    """Advance ``state`` by ``n`` steps of the Couzin model in place; ``seed`` keys its noise."""
    _advance_couzin(
        state.positions, state.velocities, state.orientations, int(n), int(state.step_count), int(seed),
        couzin_params(params),
    )  # fmt: skip
    state.time += n * params.dt
    state.step_count += n


def advance(state: FlockState, params: Params, n: int = 1) -> None:
    """Advance ``state`` by ``n`` steps in place (its arrays are updated, not replaced).

    Args:
        state: its arrays must be C-contiguous float64 (waypoints int64), as
            :class:`FlockState` makes them.
        params: the model parameters, used for all ``n`` steps.
        n: number of steps, >= 0.
    """
    attractors, path, obstacles, gradient = _world_arrays(params)
    _advance(
        state.positions, state.velocities, state.orientations, state.waypoints,
        state.predator_positions, state.predator_velocities, state.predator_orientations,
        int(n), kernel_params(params), attractors, path, obstacles, gradient,
    )  # fmt: skip
    state.time += n * params.dt
    state.step_count += n


def threads() -> int:
    """Number of threads the kernel runs on (set with ``numba.set_num_threads``)."""
    return numba.get_num_threads()
