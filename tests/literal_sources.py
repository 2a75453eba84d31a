"""The five write-ups flock3d's classic scenes reproduce, re-implemented literally.

Each function follows its source's code line by line (loops, update order, rule
arithmetic, limits), in plain numpy, sharing nothing with flock3d: the tests run a
classic scene and its source from the same initial state and compare.
"""

from __future__ import annotations

import math

import numpy as np
from pyquaternion import Quaternion


def raylib(p, v, steps, *, sep_range, visual_range, avoid, align, centre, turn, margin, width, height,
           min_speed, max_speed, frame_time):  # fmt: skip
    """Hasan's raylib C boids (2D): BoidsUpdate, boid after boid."""
    n = len(p)
    for _ in range(steps):
        for i in range(n):
            # BoidSeparation: every boid within range (itself too: a zero offset)
            force = np.zeros(2)
            for j in range(n):
                if np.linalg.norm(p[i] - p[j]) < sep_range:
                    force += p[i] - p[j]
            v[i] += force * avoid
            # BoidAlignment
            count, perceived = 0, np.zeros(2)
            for j in range(n):
                if np.linalg.norm(p[i] - p[j]) < visual_range and j != i:
                    perceived += v[j]
                    count += 1
            if count > 0:
                perceived /= count
            v[i] += (perceived - v[i]) * align
            # BoidCohesion
            count, perceived = 0, np.zeros(2)
            for j in range(n):
                if np.linalg.norm(p[i] - p[j]) < visual_range and j != i:
                    perceived += p[j]
                    count += 1
            if count > 0:
                perceived /= count
            v[i] += (perceived - p[i]) * centre
            # BoidAvoidEdges
            if p[i, 0] < margin:
                v[i, 0] += turn
            if p[i, 0] > width - margin:
                v[i, 0] -= turn
            if p[i, 1] < margin:
                v[i, 1] += turn
            if p[i, 1] > height - margin:
                v[i, 1] -= turn
            # BoidLimitSpeed
            speed = math.sqrt(v[i, 0] ** 2 + v[i, 1] ** 2)
            if speed > max_speed:
                v[i] = v[i] / speed * max_speed
            if speed < min_speed:
                v[i] = v[i] / speed * min_speed
            p[i] += v[i] * frame_time


def canvas_tutorial(p, v, steps, *, view_radius, view_angle, max_speed, width, height, elapsed):
    """The JavaScript canvas tutorial (2D): canSee, calculateSteering, steer, move, wrap."""
    n = len(p)

    def angle_to(a, b):
        angle = abs(math.atan2(b[1], b[0]) - math.atan2(a[1], a[0]))
        return 2 * math.pi - angle if angle > math.pi else angle

    for _ in range(steps):
        for i in range(n):
            visible = []
            for j in range(n):
                if j == i:
                    continue
                d = p[j] - p[i]
                distance = math.sqrt(d[0] ** 2 + d[1] ** 2)
                angle = angle_to(v[i], d)
                if distance <= view_radius and -view_angle / 2 <= angle <= view_angle / 2:
                    visible.append(j)
            steering = np.zeros(2)
            if visible:
                separation = np.zeros(2)
                for j in visible:
                    d = p[j] - p[i]
                    distance = math.sqrt(d[0] ** 2 + d[1] ** 2)
                    separation += d / distance * (view_radius - distance)
                separation = -separation
                alignment = np.mean(v[visible], axis=0) - v[i]
                cohesion = np.mean(p[visible], axis=0) - p[i]
                steering = (separation + alignment + cohesion) / 3
            v[i] += steering * elapsed
            length = math.sqrt(v[i, 0] ** 2 + v[i, 1] ** 2)
            if length > max_speed:
                v[i] = v[i] / length * max_speed
            p[i] += v[i] * elapsed
            p[i, 0] = (p[i, 0] + width) % width
            p[i, 1] = (p[i, 1] + height) % height


def pseudocode(p, v, steps, *, distance=100.0, max_mag=0.033):
    """The boids pseudocode (3D): rules 1-3, velocity += their sum, limitSpeed, position += velocity."""
    n = len(p)
    for _ in range(steps):
        for b in range(n):
            others = [b2 for b2 in range(n) if b2 != b]
            pc = sum(p[b2] for b2 in others) / (n - 1)
            vector1 = (pc - p[b]) / 200
            vector2 = np.zeros(3)
            for b2 in others:
                if np.linalg.norm(p[b] - p[b2]) < distance:
                    vector2 -= p[b2] - p[b]
            pv = sum(v[b2] for b2 in others) / (n - 1)
            vector3 = (pv - v[b]) / 10
            v[b] += vector1 + vector2 + vector3
            if np.linalg.norm(v[b]) > max_mag:
                v[b] = v[b] / np.linalg.norm(v[b]) * max_mag
            p[b] += v[b]


def unity(p, v, rotations, steps, *, fov_distance, fov_angle, min_separation, repulsion, matching, centering,
          radius, confinement, min_speed, max_speed, delta_time, degrees_per_second):  # fmt: skip
    """The Unity C# boids (3D): each Boid's Update in turn; RotateTowards turns only the drawn rotation."""
    n = len(p)

    def angle_degrees(a, b):
        return math.degrees(math.acos(np.clip(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), -1.0, 1.0)))

    def look_rotation(forward):
        z = forward / np.linalg.norm(forward)
        x = np.cross([0.0, 1.0, 0.0], z)
        x /= np.linalg.norm(x)
        return Quaternion(matrix=np.column_stack([x, np.cross(z, x), z]))

    def rotate_towards(current, target, max_degrees):  # Unity: SlerpUnclamped(a, b, min(1, max/angle))
        dot = float(np.dot(current.q, target.q))
        angle = math.degrees(2 * math.acos(min(abs(dot), 1.0)))
        if angle == 0:
            return target
        t = min(1.0, max_degrees / angle)
        if dot < 0:
            target = -target
        theta = math.acos(min(abs(dot), 1.0))
        a, b = math.sin((1 - t) * theta) / math.sin(theta), math.sin(t * theta) / math.sin(theta)
        return Quaternion(a * current.q + b * target.q).normalised

    for _ in range(steps):
        for i in range(n):
            neighbours = []
            for j in range(n):
                d = np.linalg.norm(p[j] - p[i])
                if j != i and d < fov_distance and abs(angle_degrees(p[j] - p[i], v[i])) < fov_angle:
                    neighbours.append(j)
            force_sum = np.zeros(3)
            total, closer = np.zeros(3), 0
            for j in neighbours:  # GetCollisionAvoidance
                d = np.linalg.norm(p[j] - p[i])
                if d != 0.0 and d < min_separation:
                    total += (p[i] - p[j]) / d / d
                    closer += 1
            force_sum += total / closer * repulsion if closer > 0 else np.zeros(3)
            if neighbours:  # GetVelocityMatching, GetFlockCentering
                force_sum += (np.mean(v[neighbours], axis=0) - v[i]) * matching
                force_sum += np.mean(p[neighbours] - p[i], axis=0) * centering
            if np.linalg.norm(p[i]) > radius * 0.8:  # GetExternalForce: the confinement
                force_sum += -p[i] / np.linalg.norm(p[i]) * confinement
            v[i] += force_sum
            if np.linalg.norm(v[i]) > max_speed:
                v[i] = v[i] / np.linalg.norm(v[i]) * max_speed
            if np.linalg.norm(v[i]) < min_speed:
                v[i] = v[i] / np.linalg.norm(v[i]) * min_speed
            p[i] += v[i] * delta_time
            rotations[i] = rotate_towards(rotations[i], look_rotation(v[i]), degrees_per_second * delta_time)


def castor(p, v, steps, *, border, margin, turn_factor, max_speed, separation_distance, separation_factor,
           alignment_distance, alignment_factor, cohesion_distance, cohesion_factor):  # fmt: skip
    """The Castor C++ boids (2D): each rule over every boid, in place; then the borders; then move."""
    n = len(p)

    def within(i, distance):
        d = np.sqrt((p[i, 0] - p[:, 0]) ** 2 + (p[i, 1] - p[:, 1]) ** 2)
        return [j for j in np.flatnonzero(d < distance) if j != i]

    for _ in range(steps):
        for i in range(n):
            mates = within(i, separation_distance)
            if mates:
                v[i] += np.sum(p[i] - p[mates], axis=0) * separation_factor
        for i in range(n):
            mates = within(i, alignment_distance)
            if mates:
                v[i] += np.sum(v[mates], axis=0) / len(mates) * alignment_factor
        for i in range(n):
            mates = within(i, cohesion_distance)
            if mates:
                v[i] += (np.sum(p[mates], axis=0) / len(mates) - p[i]) * cohesion_factor
        speed = np.sqrt(v[:, 0] ** 2 + v[:, 1] ** 2)
        fast = speed > max_speed
        v[fast] = v[fast] / speed[fast, None] * max_speed
        v[p[:, 0] < margin, 0] += turn_factor
        v[p[:, 0] > border[0] - margin, 0] -= turn_factor
        v[p[:, 1] < margin, 1] += turn_factor
        v[p[:, 1] > border[1] - margin, 1] -= turn_factor
        p += v
