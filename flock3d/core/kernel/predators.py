"""The predators' hunt: each chases the nearest boid it sees, at its own speed and turn limit, and
stays out of the world's objects as the boids do."""

from __future__ import annotations

import math

import numpy as np
from numba import types

from flock3d.core.kernel.base import shared
from flock3d.core.kernel.calls import function_at
from flock3d.core.kernel.motion import image, settle
from flock3d.core.quaternion import (
    forward_of,
    rotate_towards_of,
)

__all__ = ["hunt", "kept_out", "KEEP_OUT_SIGNATURE"]

#: A world's keep-out as compiled code calls it at its address (the objects term's ``KEEP_OUT``):
#: a point's new and old positions, the world's record of objects, the step's start and end
#: times and whether the flock is planar; where the point may be.
KEEP_OUT_SIGNATURE = types.UniTuple(types.float64, 3)(
    *[types.float64] * 6, types.float64[::1], *[types.float64] * 2, types.boolean
)
_keep_out_at = function_at(types.FunctionType(KEEP_OUT_SIGNATURE))

# -- predators -------------------------------------------------------------------------------


@shared
def hunt(pred_pos, pred_vel, pred_quat, pos, ids, box, periodic, wrap, planar, speed, dt, cos_max, cos_half,
         sin_half):  # fmt: skip
    """Predators: turn (at their own rate) towards their nearest boid and fly on at their speed.

    Reads only the boids' start-of-step positions ``pos`` (N, 3), whose rows hold the boids of
    public index ``ids`` (N,); the lowest public index wins a tie.
    """
    n = pos.shape[0]
    for k in range(pred_pos.shape[0]):
        qx, qy, qz = pred_pos[k, 0], pred_pos[k, 1], pred_pos[k, 2]
        ex, ey, ez = forward_of(pred_quat[k, 0], pred_quat[k, 1], pred_quat[k, 2], pred_quat[k, 3])
        best = np.inf
        best_id = n
        bx = by = bz = 0.0
        for j in range(n):
            dx = image(pos[j, 0] - qx, 2.0 * box[3], periodic)
            dy = image(pos[j, 1] - qy, 2.0 * box[4], periodic)
            dz = image(pos[j, 2] - qz, 2.0 * box[5], periodic and not planar)
            d2 = dx * dx + dy * dy + dz * dz
            if d2 < best or (d2 == best and ids[j] < best_id and best < np.inf):
                best, best_id, bx, by, bz = d2, ids[j], dx, dy, dz
        if planar:
            bz = 0.0
        d = math.sqrt(bx * bx + by * by + bz * bz)
        if n and d > 0.0:
            ex, ey, ez = bx / d, by / d, bz / d
        w, x, y, z = rotate_towards_of(
            pred_quat[k, 0],
            pred_quat[k, 1],
            pred_quat[k, 2],
            pred_quat[k, 3],
            ex,
            ey,
            ez,
            cos_max,
            cos_half,
            sin_half,
        )
        pred_quat[k, 0], pred_quat[k, 1], pred_quat[k, 2], pred_quat[k, 3] = w, x, y, z
        hx, hy, hz = forward_of(w, x, y, z)
        vx, vy, vz = speed * hx, speed * hy, speed * hz
        px, py, pz, vz = settle(qx + dt * vx, qy + dt * vy, qz + dt * vz, vz, box, wrap, planar)
        pred_pos[k, 0], pred_pos[k, 1], pred_pos[k, 2] = px, py, pz
        pred_vel[k, 0], pred_vel[k, 1], pred_vel[k, 2] = vx, vy, vz


@shared
def kept_out(pred_pos, hunters, world, shield, now, later, planar):
    """The predators, moved from ``hunters`` to ``pred_pos`` in the step from ``now`` to
    ``later``, kept out of the world's objects as a boid is: by the keep-out at address
    ``shield[2]`` (:data:`KEEP_OUT_SIGNATURE`), on the record ``world[shield[0]:shield[1]]``.
    A world without objects (``shield[1] == shield[0]``) keeps nothing out."""
    if shield[1] <= shield[0]:
        return
    keep_out = _keep_out_at(shield[2])
    record = world[shield[0] : shield[1]]
    for k in range(pred_pos.shape[0]):
        pred_pos[k, 0], pred_pos[k, 1], pred_pos[k, 2] = keep_out(
            pred_pos[k, 0], pred_pos[k, 1], pred_pos[k, 2], hunters[k, 0], hunters[k, 1], hunters[k, 2],
            record, now, later, planar,
        )  # fmt: skip
