"""Where a boid goes: the minimum image and the box's walls, the speed limits, the turn limit
(heading or mesh), the batch's staged rows (:data:`STAGED`), the move and its checks."""

from __future__ import annotations

import math

import numpy as np
from numba import types

from flock3d.core.kernel.base import MAX_COORDINATE, inlined, shared
from flock3d.core.kernel.calls import Called
from flock3d.core.packed import slots
from flock3d.core.quaternion import (
    forward_of,
    look_rotation_of,
    normalized_of,
    rotate_towards_of,
)
from flock3d.core.status import NOT_FINITE, OK

# -- geometry ----------------------------------------------------------------------------


@shared
def image(d, side, periodic):
    """A coordinate difference reduced to the nearest image in a periodic box of that side."""
    if periodic:
        return d - side * np.rint(d / side)
    return d


@shared
def settle(px, py, pz, vz, box, wrap, planar):
    """Where a boid may be after a move: in its plane (z = c_z, v_z = 0) when ``planar``,
    and inside the box (6,: centre, half sides) when positions ``wrap``."""
    if planar:
        pz, vz = box[2], 0.0
    if wrap:
        lo_x, lo_y = box[0] - box[3], box[1] - box[4]
        px = lo_x + (px - lo_x) % (2.0 * box[3])
        py = lo_y + (py - lo_y) % (2.0 * box[4])
        if not planar:
            lo_z = box[2] - box[5]
            pz = lo_z + (pz - lo_z) % (2.0 * box[5])
    return px, py, pz, vz


@shared
def wrap_into_box(pos, vel, box, planar):
    """Bring every position into the box (given or edited positions may lie outside)."""
    for i in range(pos.shape[0]):
        pos[i, 0], pos[i, 1], pos[i, 2], _ = settle(
            pos[i, 0], pos[i, 1], pos[i, 2], vel[i, 2], box, True, planar
        )


# -- speed, turn, move ---------------------------------------------------------------------


@shared
def clamp_speed(ux, uy, uz, s_min, s_max):
    """The velocity with its speed clamped to [s_min, s_max] (a zero velocity stays zero)."""
    u = math.sqrt(ux * ux + uy * uy + uz * uz)
    s = min(max(u, s_min), s_max)
    if u == 0.0 or s == u:
        return ux, uy, uz
    return ux * (s / u), uy * (s / u), uz * (s / u)


@inlined
def turn_heading(qw, qx, qy, qz, ux, uy, uz, fx, fy, fz, s_min, s_max, cos_max, cos_half, sin_half):
    """The model's steps 8 and 9: the new orientation and velocity from the desired velocity u.

    The speed is |u| clamped to [s_min, s_max]; the orientation turns towards u's direction
    (the current forward f when u = 0) by at most the limit; the velocity is the speed
    along the new forward. Returns ``(qw, qx, qy, qz, vx, vy, vz)``.
    """
    u = math.sqrt(ux * ux + uy * uy + uz * uz)
    speed = min(max(u, s_min), s_max)
    if u > 0.0:
        ex, ey, ez = ux / u, uy / u, uz / u
    else:
        ex, ey, ez = fx, fy, fz
    qw, qx, qy, qz = rotate_towards_of(qw, qx, qy, qz, ex, ey, ez, cos_max, cos_half, sin_half)
    hx, hy, hz = forward_of(qw, qx, qy, qz)
    return qw, qx, qy, qz, speed * hx, speed * hy, speed * hz


#: The rows of a :func:`turn_rows` batch (a (STAGED, n) array, one column a boid): its
#: orientation, desired velocity, heading and position, its speed limits and turn limit
#: (``cos_max, cos_half, sin_half``; for the mesh limit the angle in the first).
Q_W, U_X, F_X, S_MIN, S_MAX, LIMIT, P_X, STAGED = slots(
    ("orientation", 4),
    ("desired velocity", 3),
    ("heading", 3),
    ("min speed", 1),
    ("max speed", 1),
    ("turn limit", 3),
    ("position", 3),
)


@inlined
def turn_rows(n, staged, turned):
    """Steps 8 and 9 of the model for a batch of boids, the heading turn limit: the new
    orientation and velocity of columns ``0 .. n - 1`` of ``staged`` (rows as :data:`STAGED`
    says) into ``turned`` (7, n): qw, qx, qy, qz, vx, vy, vz (see :func:`turn_heading`).

    A batch rather than boid by boid: the heading turn is a chain of square roots and
    divisions, each waiting for the last (about 160 cycles a boid), and over a batch whose
    columns are contiguous the loop runs as SIMD vectors, 8 boids at a time.
    """
    for r in range(n):
        nw, nx, ny, nz, nvx, nvy, nvz = turn_heading(
            staged[Q_W, r], staged[Q_W + 1, r], staged[Q_W + 2, r], staged[Q_W + 3, r], staged[U_X, r],
            staged[U_X + 1, r], staged[U_X + 2, r], staged[F_X, r], staged[F_X + 1, r], staged[F_X + 2, r],
            staged[S_MIN, r], staged[S_MAX, r], staged[LIMIT, r], staged[LIMIT + 1, r], staged[LIMIT + 2, r],
        )  # fmt: skip
        turned[0, r], turned[1, r], turned[2, r], turned[3, r] = nw, nx, ny, nz
        turned[4, r], turned[5, r], turned[6, r] = nvx, nvy, nvz


@inlined
def turn_mesh_rows(n, staged, turned, upx, upy, upz):
    """:func:`turn_rows` for the mesh turn limit (:func:`turn_mesh`, up towards ``up``; the
    angle in the first row of LIMIT). A function of its own: its arc cosines and sines have no
    SIMD form, and the heading limit's first runs do not compile them (0.8 s on 2 cores)."""
    for r in range(n):
        nw, nx, ny, nz, nvx, nvy, nvz = turn_mesh(
            staged[Q_W, r], staged[Q_W + 1, r], staged[Q_W + 2, r], staged[Q_W + 3, r], staged[U_X, r],
            staged[U_X + 1, r], staged[U_X + 2, r], staged[S_MIN, r], staged[S_MAX, r], upx, upy, upz,
            staged[LIMIT, r],
        )  # fmt: skip
        turned[0, r], turned[1, r], turned[2, r], turned[3, r] = nw, nx, ny, nz
        turned[4, r], turned[5, r], turned[6, r] = nvx, nvy, nvz


@inlined
def move_rows(k0, n, staged, turned, failed, dt, box, wraps, planar, quat, vel, pos, ids, status, t):
    """Move the boids of a :func:`turn_rows` batch and write them: column r to row k0 + r of
    ``quat``, ``vel`` and ``pos``, the boid of public index ``ids[k0 + r]``.

    A boid whose rule failed (``failed[r]``) keeps its state; so does one whose new state is
    not sound (:func:`is_sound`), which is recorded in ``status`` row ``t`` and marked failed.
    """
    for r in range(n):
        if failed[r]:
            continue
        k = k0 + r
        nw, nvx, nvy, nvz = turned[0, r], turned[4, r], turned[5, r], turned[6, r]
        px, py, pz, nvz = settle(staged[P_X, r] + dt * nvx, staged[P_X + 1, r] + dt * nvy,
                                 staged[P_X + 2, r] + dt * nvz, nvz, box, wraps, planar)  # fmt: skip
        if is_sound(px, py, pz, nvx, nvy, nvz) and nw == nw:
            quat[k, 0], quat[k, 1], quat[k, 2], quat[k, 3] = nw, turned[1, r], turned[2, r], turned[3, r]
            vel[k, 0], vel[k, 1], vel[k, 2] = nvx, nvy, nvz
            pos[k, 0], pos[k, 1], pos[k, 2] = px, py, pz
        else:
            record(status, t, NOT_FINITE, ids[k], -1)
            failed[r] = True


_F2C = types.float64[:, ::1]
#: :func:`turn_rows`, :func:`turn_mesh_rows` and :func:`move_rows` as a chunk calls them, once a
#: batch, at their addresses (:mod:`flock3d.core.kernel.calls`), with the argument types a chunk has.
TURN_ROWS = Called(turn_rows, types.void(types.int64, _F2C, _F2C))
TURN_MESH_ROWS = Called(turn_mesh_rows, types.void(types.int64, _F2C, _F2C, *[types.float64] * 3))
MOVE_ROWS = Called(
    move_rows,
    types.void(types.int64, types.int64, _F2C, _F2C, types.boolean[::1], types.float64, types.float64[::1],
               types.boolean, types.boolean, _F2C, _F2C, _F2C, types.int64[::1], types.int64[:, ::1],
               types.int64),
)  # fmt: skip
turn_rows_at, turn_mesh_rows_at, move_rows_at = TURN_ROWS.at, TURN_MESH_ROWS.at, MOVE_ROWS.at


def turn_called(turn: str) -> Called:
    """The batch turn a step of ``sim.turn_limit`` ``turn`` ("heading" or "mesh") calls."""
    return TURN_ROWS if turn == "heading" else TURN_MESH_ROWS


@shared
def slerp_towards(aw, ax, ay, az, bw, bx, by, bz, max_angle):
    """Unity's ``Quaternion.RotateTowards(a, b, max_angle)``: b if within max_angle (radians)
    of a, else the spherical interpolation from a towards b by max_angle, the short way."""
    dot = aw * bw + ax * bx + ay * by + az * bz
    if dot < 0.0:  # q and -q are one rotation: go the short way
        bw, bx, by, bz, dot = -bw, -bx, -by, -bz, -dot
    half = math.acos(min(dot, 1.0))  # half the rotation angle between them
    if 2.0 * half <= max_angle or half == 0.0:
        return bw, bx, by, bz
    t = max_angle / (2.0 * half)
    s = math.sin(half)
    wa, wb = math.sin((1.0 - t) * half) / s, math.sin(t * half) / s
    return normalized_of(wa * aw + wb * bw, wa * ax + wb * bx, wa * ay + wb * by, wa * az + wb * bz)


@shared
def turn_mesh(qw, qx, qy, qz, ux, uy, uz, s_min, s_max, upx, upy, upz, max_angle):
    """The ``mesh`` turn limit: the velocity is u with its speed clamped, turning freely; the
    orientation turns towards the look rotation of that velocity (up towards ``up``) by at
    most ``max_angle`` radians. Returns ``(qw, qx, qy, qz, vx, vy, vz)``."""
    vx, vy, vz = clamp_speed(ux, uy, uz, s_min, s_max)
    if vx == 0.0 and vy == 0.0 and vz == 0.0:
        return qw, qx, qy, qz, vx, vy, vz
    tw, tx, ty, tz = look_rotation_of(vx, vy, vz, upx, upy, upz)
    qw, qx, qy, qz = slerp_towards(qw, qx, qy, qz, tw, tx, ty, tz, max_angle)
    return qw, qx, qy, qz, vx, vy, vz


@shared
def record(status, t, code, boid, term):
    """Report a failure of ``boid`` in chunk row ``t`` of ``status`` (lowest index wins)."""
    if status[t, 0] == OK or boid < status[t, 1]:
        status[t, 0], status[t, 1], status[t, 2] = code, boid, term


@shared
def is_sound(px, py, pz, vx, vy, vz):
    """A state that is finite and within :data:`MAX_COORDINATE` on every axis."""
    return (
        abs(px) < MAX_COORDINATE
        and abs(py) < MAX_COORDINATE
        and abs(pz) < MAX_COORDINATE
        and abs(vx) < MAX_COORDINATE
        and abs(vy) < MAX_COORDINATE
        and abs(vz) < MAX_COORDINATE
    )
