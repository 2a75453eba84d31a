"""The fast step: the spec's update, compiled with numba and run in parallel.

Same maths as :mod:`flock3d.core.reference`, organised for speed
(``shared/notes/performance.md``). The run loop, as pseudocode::

    for each of n steps:
        grid   <- boids counting-sorted into cells of side view_distance
        sorted <- positions, velocities, forwards gathered in cell order  (start-of-step state)
        for each chunk of cells, in parallel:                             (about 256 boids each)
            for each cell c of the chunk:
                buffer <- boids of the 27 cells around c that lie within
                          view_distance of c's box, copied contiguously
                for each boid i of c:
                    sums over the visible boids in buffer                 (spec steps 1-4)
                    u_i  <- v_i + dt * (S_i + A_i + C_i + B_i)             (steps 5-7)
                    q_i  <- q_i turned towards u_i by at most omega * dt  (steps 8-9)
                    v_i, p_i <- speed_i * forward(q_i), p_i + dt * v_i     (step 10)

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

from flock3d.core.neighbors import build_grid  # noqa: E402
from flock3d.core.params import Params  # noqa: E402
from flock3d.core.quaternion import forward_of, rotate_towards_of, turn_limit  # noqa: E402
from flock3d.core.state import FlockState  # noqa: E402

__all__ = ["advance", "threads", "KernelParams", "kernel_params"]

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

KernelParams = namedtuple(
    "KernelParams",
    [
        "center_x", "center_y", "center_z",
        "confinement_radius",  # f_b * R
        "confinement",  # k_b
        "view_distance",  # r_v (cell size)
        "view2",  # r_v^2
        "cone",  # cos(alpha/2) |cos(alpha/2)|, or -inf for alpha = 360
        "separation2",  # r_s^2
        "separation", "alignment", "cohesion",  # k_s, k_a, k_c
        "min_speed", "max_speed",
        "cos_max", "cos_half", "sin_half",  # turn limit, see quaternion.turn_limit
        "dt",
    ],
)  # fmt: skip
KernelParams.__doc__ = (
    """Model parameters as the kernel consumes them (all floats), from :func:`kernel_params`."""
)


def kernel_params(params: Params) -> KernelParams:
    """Precompute what the kernel needs from ``params`` (squares, cosines, the turn limit)."""
    half_fov = math.cos(math.radians(params.fov) / 2.0)
    return KernelParams(
        *(float(c) for c in params.arena_center),
        params.confinement_start * params.arena_radius,
        float(params.confinement),
        float(params.view_distance),
        float(params.view_distance) ** 2,
        -math.inf if params.fov >= 360.0 else half_fov * abs(half_fov),
        float(params.separation_distance) ** 2,
        float(params.separation),
        float(params.alignment),
        float(params.cohesion),
        float(params.min_speed),
        float(params.max_speed),
        *turn_limit(math.radians(params.max_turn_rate) * params.dt),
        float(params.dt),
    )


@_helper
def _cell_coords(c, nx, ny):
    return c % nx, (c // nx) % ny, c // (nx * ny)


@_helper
def _neighbourhood_count(c, nx, ny, nz, start):
    """Number of boids in the (up to) 27 cells around cell c."""
    cx, cy, cz = _cell_coords(c, nx, ny)
    x0, x1 = max(cx - 1, 0), min(cx + 1, nx - 1)
    total = 0
    for z in range(max(cz - 1, 0), min(cz + 1, nz - 1) + 1):
        for y in range(max(cy - 1, 0), min(cy + 1, ny - 1) + 1):
            row = (z * ny + y) * nx
            total += start[row + x1 + 1] - start[row + x0]
    return total


@_helper
def _fill_candidates(c, origin, size, nx, ny, nz, start, s, reach2, buf):
    """Copy into ``buf`` the boids around cell c that may lie within reach of its boids.

    Candidates are the boids of the 27 surrounding cells whose distance to c's
    box is below sqrt(reach2). ``origin`` is the grid's corner (x, y, z), ``s``
    the sorted state (rows x, y, z, vx, vy, vz, ...); ``buf`` receives six rows.
    Returns the number copied.
    """
    ox, oy, oz = origin
    cx, cy, cz = _cell_coords(c, nx, ny)
    lo_x, lo_y, lo_z = ox + cx * size, oy + cy * size, oz + cz * size
    hi_x, hi_y, hi_z = lo_x + size, lo_y + size, lo_z + size
    x0, x1 = max(cx - 1, 0), min(cx + 1, nx - 1)
    m = 0
    for z in range(max(cz - 1, 0), min(cz + 1, nz - 1) + 1):
        for y in range(max(cy - 1, 0), min(cy + 1, ny - 1) + 1):
            row = (z * ny + y) * nx
            for jj in range(start[row + x0], start[row + x1 + 1]):
                j = numba.uint64(jj)
                x, y_, z_ = s[0, j], s[1, j], s[2, j]
                gx = max(lo_x - x, 0.0, x - hi_x)
                gy = max(lo_y - y_, 0.0, y_ - hi_y)
                gz = max(lo_z - z_, 0.0, z_ - hi_z)
                # Always copy, advance only when kept: a branch-free compaction.
                mm = numba.uint64(m)
                buf[0, mm], buf[1, mm], buf[2, mm] = x, y_, z_
                buf[3, mm], buf[4, mm], buf[5, mm] = s[3, j], s[4, j], s[5, j]
                m += 1 if gx * gx + gy * gy + gz * gz < reach2 else 0
    return m


@_helper
def _neighbour_sums(buf, m, px, py, pz, fx, fy, fz, kp):
    """Spec steps 1-4 for one boid: sums over the candidates it sees.

    Returns ``(n_seen, n_close, sep_x, sep_y, sep_z, vel_x, ..., off_z)`` with
    ``sep = sum (p_i - p_j) / d^2`` over the seen boids closer than r_s, and
    ``vel = sum v_j`` and ``off = sum (p_j - p_i)`` over all seen boids.
    """
    bx, by, bz, bvx, bvy, bvz = buf[0], buf[1], buf[2], buf[3], buf[4], buf[5]
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
    return n_seen, n_close, sep_x, sep_y, sep_z, vel_x, vel_y, vel_z, off_x, off_y, off_z


@_helper
def _acceleration(
    px, py, pz, vx, vy, vz, n_seen, n_close, sep_x, sep_y, sep_z, vel_x, vel_y, vel_z, off_x, off_y, off_z, kp
):
    """Spec steps 2-6: separation + alignment + cohesion + confinement."""
    ax = ay = az = 0.0
    if n_close > 0.0:
        w = kp.separation / n_close
        ax += w * sep_x
        ay += w * sep_y
        az += w * sep_z
    if n_seen > 0.0:
        m = 1.0 / n_seen
        ka, kc = kp.alignment, kp.cohesion
        ax += ka * (vel_x * m - vx) + kc * off_x * m
        ay += ka * (vel_y * m - vy) + kc * off_y * m
        az += ka * (vel_z * m - vz) + kc * off_z * m
    rx, ry, rz = px - kp.center_x, py - kp.center_y, pz - kp.center_z
    r = math.sqrt(rx * rx + ry * ry + rz * rz)
    if r > kp.confinement_radius:
        w = kp.confinement / r
        ax -= w * rx
        ay -= w * ry
        az -= w * rz
    return ax, ay, az


@_helper
def _turn_and_move(i, px, py, pz, vx, vy, vz, fx, fy, fz, ax, ay, az, pos, vel, quat, kp):
    """Spec steps 7-10 for boid i; writes its new row of pos, vel and quat."""
    dt = kp.dt
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
    vel[i, 0], vel[i, 1], vel[i, 2] = vx, vy, vz
    pos[i, 0], pos[i, 1], pos[i, 2] = px + dt * vx, py + dt * vy, pz + dt * vz


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
def _advance(pos, vel, quat, n_steps, kp):
    n = pos.shape[0]
    s = np.empty((9, n))  # start-of-step state in cell order: x, y, z, vx, vy, vz, fx, fy, fz
    n_chunks = max(1, (n + BOIDS_PER_CHUNK - 1) // BOIDS_PER_CHUNK)
    for _ in range(n_steps):
        grid = build_grid(pos, kp.view_distance)
        # Plain values only inside prange: numba cannot see CellGrid from a parallel body.
        order, start = grid.order, grid.cell_start
        nx, ny, nz = grid.nx, grid.ny, grid.nz
        origin, size = (grid.origin_x, grid.origin_y, grid.origin_z), grid.cell_size
        for k in prange(n):
            i = order[k]
            for a in range(3):
                s[a, k] = pos[i, a]
                s[3 + a, k] = vel[i, a]
            s[6, k], s[7, k], s[8, k] = forward_of(quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3])
        bounds = _chunk_cells(start, n, n_chunks)
        for t in prange(n_chunks):
            c_lo, c_hi = bounds[t], bounds[t + 1]
            cap = 1
            for c in range(c_lo, c_hi):
                if start[c + 1] > start[c]:
                    cap = max(cap, _neighbourhood_count(c, nx, ny, nz, start))
            buf = np.empty((6, cap))
            for c in range(c_lo, c_hi):
                if start[c + 1] == start[c]:
                    continue
                m = _fill_candidates(c, origin, size, nx, ny, nz, start, s, kp.view2, buf)
                for k in range(start[c], start[c + 1]):
                    px, py, pz = s[0, k], s[1, k], s[2, k]
                    vx, vy, vz = s[3, k], s[4, k], s[5, k]
                    fx, fy, fz = s[6, k], s[7, k], s[8, k]
                    n_seen, n_close, sx, sy, sz, wx, wy, wz, ox, oy, oz = _neighbour_sums(
                        buf, m, px, py, pz, fx, fy, fz, kp
                    )
                    ax, ay, az = _acceleration(
                        px, py, pz, vx, vy, vz, n_seen, n_close, sx, sy, sz, wx, wy, wz, ox, oy, oz, kp
                    )
                    _turn_and_move(
                        order[k], px, py, pz, vx, vy, vz, fx, fy, fz, ax, ay, az, pos, vel, quat, kp
                    )


def advance(state: FlockState, params: Params, n: int = 1) -> None:
    """Advance ``state`` by ``n`` steps in place (its arrays are updated, not replaced).

    Args:
        state: its arrays must be C-contiguous float64, as :class:`FlockState` makes them.
        params: the model parameters, used for all ``n`` steps.
        n: number of steps, >= 0.
    """
    _advance(state.positions, state.velocities, state.orientations, int(n), kernel_params(params))
    state.time += n * params.dt
    state.step_count += n


def threads() -> int:
    """Number of threads the kernel runs on (set with ``numba.set_num_threads``)."""
    return numba.get_num_threads()
