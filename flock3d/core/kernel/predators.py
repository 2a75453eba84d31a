"""The predators' hunt: each chases the nearest boid it sees, at its own speed and turn limit."""

from __future__ import annotations

import math

import numpy as np

from flock3d.core.kernel.base import shared
from flock3d.core.kernel.motion import image, settle
from flock3d.core.quaternion import (
    forward_of,
    rotate_towards_of,
)

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
