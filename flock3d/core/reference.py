"""The readable reference implementation of one step of the model.

Written the way the model is explained (``shared/spec/model.md``): each boid
looks around, gathers the neighbours it can see, sums its steering rules and
turns towards the result. It is slow (pure Python per boid) and exists to be
obviously right: the tests use it as the oracle for the fast kernel.

Beyond the spec, it implements every variant of :class:`~flock3d.core.params.Params`
(arena shapes, planar flocks, separation falloffs, per-rule radii and cones) and
the world features (attractors, a waypoint path, obstacles, predators, wind);
with the default parameters all of these reduce to the spec.

Turning uses pyquaternion rather than :mod:`flock3d.core.quaternion`, so the two
implementations share no quaternion code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from pyquaternion import Quaternion

from flock3d.core import noise
from flock3d.core.params import Params
from flock3d.core.state import FlockState, settle

__all__ = ["step", "couzin_step", "visible", "offsets", "ReferenceBoid", "ReferencePredator", "CouzinAgent"]

FORWARD = np.array([0.0, 0.0, 1.0])
UP = np.array([0.0, 1.0, 0.0])
RIGHT = np.array([1.0, 0.0, 0.0])


def offsets(position: np.ndarray, others: np.ndarray, params: Params) -> np.ndarray:
    """(M, 3) offsets from ``position`` to ``others``; in a periodic arena, to their nearest images."""
    d = np.asarray(others, dtype=np.float64).reshape(-1, 3) - position
    if params.arena_shape == "periodic":
        side = 2.0 * params.arena_radius
        axes = slice(0, 2) if params.dimensions == 2 else slice(0, 3)
        d[:, axes] -= side * np.round(d[:, axes] / side)
    return d


def visible(
    position: np.ndarray,
    heading: np.ndarray,
    others: np.ndarray,
    params: Params,
    distance: float | None = None,
    fov: float | None = None,
) -> np.ndarray:
    """Which of ``others`` a boid at ``position`` facing ``heading`` sees (spec step 1).

    Args:
        position: (3,) the looking boid's position.
        heading: (3,) its unit forward vector.
        others: (M, 3) positions of the candidates.
        params: supplies the perception distance and field of view (and the arena,
            for the minimum image of a periodic one).
        distance, fov: a rule's own radius and cone instead of the view's.

    Returns:
        (M,) bool: ``0 < d < distance`` and the angle between ``heading`` and
        the offset is at most ``fov / 2``. A coincident boid (d = 0), the
        looking boid itself included, is never seen.
    """
    distance = params.perception_distance if distance is None else distance
    fov = params.fov if fov is None else fov
    d = offsets(position, others, params)
    distances = np.linalg.norm(d, axis=1)
    in_range = (distances > 0.0) & (distances < distance)
    if fov >= 360.0:
        return in_range
    with np.errstate(invalid="ignore", divide="ignore"):
        cosines = d @ heading / distances
    angles = np.degrees(np.arccos(np.clip(cosines, -1.0, 1.0)))
    return in_range & (angles <= fov / 2.0)


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v)
    return v / n if n > 0.0 else np.zeros(3)


def turned(orientation: Quaternion, direction: np.ndarray, max_angle: float) -> Quaternion:
    """Spec step 9: rotate by the minimal arc towards ``direction``, at most ``max_angle`` rad."""
    f = np.asarray(orientation.rotate(FORWARD))
    axis = np.cross(f, direction)
    theta = math.atan2(np.linalg.norm(axis), np.dot(f, direction))
    if np.linalg.norm(axis) == 0.0:
        if np.dot(f, direction) >= 0.0:
            return orientation
        axis = np.asarray(orientation.rotate(UP))  # exactly opposite: turn about the boid's up
    turn = Quaternion(axis=axis, angle=min(theta, max_angle))
    return (turn * orientation).normalised


@dataclass
class ReferenceBoid:
    """One boid as the model describes it, with the rules as methods."""

    position: np.ndarray
    velocity: np.ndarray
    orientation: Quaternion
    waypoint: int = 0

    @cached_property
    def forward(self) -> np.ndarray:
        """The unit heading (a boid's orientation does not change once it is made)."""
        return np.asarray(self.orientation.rotate(FORWARD))

    def seen(
        self, flock: list[ReferenceBoid], positions: np.ndarray, params: Params, distance: float, fov: float
    ) -> list[tuple[ReferenceBoid, np.ndarray]]:
        """The boids seen within ``distance`` and the cone ``fov``, with their offsets (step 1).

        ``positions`` are the positions of ``flock``, gathered once per update.
        """
        d = offsets(self.position, positions, params)
        seen = visible(self.position, self.forward, positions, params, distance, fov)
        return [(flock[j], d[j]) for j in np.flatnonzero(seen)]

    def separation(self, close: list, params: Params) -> np.ndarray:
        """Step 2: push away from the close neighbours, by the chosen falloff."""
        pushes = []
        rs = params.separation_distance
        for _, offset in close:
            away = -offset  # p_i - p_j
            d = np.linalg.norm(away)
            push = {
                "inverse": away / d**2,
                "linear": away,
                "linear_gap": (rs - d) * away / d,
                "quadratic": (rs - d) ** 2 * away / d,
            }[params.separation_falloff]
            pushes.append(push)
        if not pushes:
            return np.zeros(3)
        total = np.mean(pushes, axis=0) if params.separation_average else np.sum(pushes, axis=0)
        return params.separation * total

    def alignment(self, neighbours: list, params: Params) -> np.ndarray:
        """Step 3: k_a times (mean neighbour velocity - own velocity)."""
        if not neighbours:
            return np.zeros(3)
        return params.alignment * (np.mean([b.velocity for b, _ in neighbours], axis=0) - self.velocity)

    def cohesion(self, neighbours: list, params: Params) -> np.ndarray:
        """Step 4: k_c times the mean offset to the neighbours."""
        if not neighbours:
            return np.zeros(3)
        return params.cohesion * np.mean([offset for _, offset in neighbours], axis=0)

    def confinement(self, params: Params) -> np.ndarray:
        """Step 5: push back towards the arena (a sphere radially, a box along each axis)."""
        r = self.position - np.asarray(params.arena_center)
        start = params.confinement_start * params.arena_radius
        if params.arena_shape == "sphere":
            distance = np.linalg.norm(r)
            return -params.confinement * r / distance if distance > start else np.zeros(3)
        if params.arena_shape == "box":
            push = np.zeros(3)
            for axis in range(params.dimensions):
                if abs(r[axis]) > start:
                    push[axis] = -params.confinement * np.sign(r[axis])
            return push
        return np.zeros(3)  # periodic and open arenas do not confine

    def seek(self, target: np.ndarray, weight: float, params: Params) -> np.ndarray:
        """Reynolds' seek: steer the velocity towards max_speed straight at ``target``."""
        offset = offsets(self.position, target[None], params)[0]
        if not np.any(offset):
            return np.zeros(3)
        return weight * (params.max_speed * _unit(offset) - self.velocity)

    def attraction(self, params: Params) -> np.ndarray:
        total = np.zeros(3)
        for a in params.attractors:
            target = np.asarray(a.position)
            if np.linalg.norm(offsets(self.position, target[None], params)[0]) < a.radius:
                total += self.seek(target, a.weight, params)
        return total

    def path_following(self, params: Params) -> tuple[np.ndarray, int]:
        """Seek the current waypoint, moving on to the next when within reach."""
        if params.path is None:
            return np.zeros(3), self.waypoint
        points = np.asarray(params.path.points)
        k = self.waypoint
        if np.linalg.norm(offsets(self.position, points[k][None], params)[0]) < params.path.reach:
            k = (k + 1) % len(points)
        return self.seek(points[k], params.path.weight, params), k

    def avoidance(self, params: Params) -> np.ndarray:
        """Steer around obstacles seen ahead within the look-ahead; push out of their margin.

        For each obstacle whose margin the heading ray enters within ``max_speed *
        avoidance_lookahead``, steer sideways, away from its centre, harder the
        closer the encounter; inside the margin, push straight out.
        """
        total = np.zeros(3)
        f = self.forward
        ahead = params.max_speed * params.avoidance_lookahead
        for o in params.obstacles:
            to_centre = offsets(self.position, np.asarray(o.center)[None], params)[0]  # nearest image
            clearance = o.radius + params.avoidance_margin
            away = -to_centre
            if np.linalg.norm(away) < clearance:
                total += params.avoidance * _unit(away) if np.any(away) else params.avoidance * f
                continue
            t = np.dot(to_centre, f)  # distance ahead of the closest approach
            if 0.0 < t < ahead:
                lateral = t * f - to_centre
                if np.dot(lateral, lateral) < clearance**2:
                    side = _unit(lateral) if np.any(lateral) else np.asarray(self.orientation.rotate(RIGHT))
                    total += params.avoidance * (1.0 - t / ahead) * side
        return total

    def flight(self, predators: list[ReferencePredator], params: Params) -> np.ndarray:
        """Flee from each predator seen within the flee distance."""
        if not predators:
            return np.zeros(3)
        positions = np.array([p.position for p in predators])
        d = offsets(self.position, positions, params)
        seen = visible(self.position, self.forward, positions, params, params.flee_distance, params.fov)
        return sum((-params.flee * _unit(d[j]) for j in np.flatnonzero(seen)), np.zeros(3))

    def wind(self, params: Params) -> np.ndarray:
        r = self.position - np.asarray(params.arena_center)
        return np.asarray(params.wind) + np.asarray(params.wind_gradient) @ r

    def updated(self, flock: list[ReferenceBoid], predators: list, params: Params) -> ReferenceBoid:
        """This boid after one step, computed from the world as it was (steps 1 to 10)."""
        (rs, ra, rc), (fs, fa, fc) = params.rule_distances, params.rule_fovs
        positions = np.array([b.position for b in flock]).reshape(-1, 3)
        close = self.seen(flock, positions, params, rs, fs)
        aligned = self.seen(flock, positions, params, ra, fa)
        centred = self.seen(flock, positions, params, rc, fc)
        seek_path, waypoint = self.path_following(params)
        acceleration = (
            self.separation(close, params)
            + self.alignment(aligned, params)
            + self.cohesion(centred, params)
            + self.confinement(params)
            + self.attraction(params)  # step 6: the extra forces
            + seek_path
            + self.avoidance(params)
            + self.flight(predators, params)
            + self.wind(params)
        )
        if params.dimensions == 2:
            acceleration[2] = 0.0
        desired = self.velocity + params.dt * acceleration  # step 7
        magnitude = np.linalg.norm(desired)
        speed = min(max(magnitude, params.min_speed), params.max_speed)  # step 8
        direction = desired / magnitude if magnitude > 0.0 else self.forward
        orientation = turned(self.orientation, direction, math.radians(params.max_turn_rate) * params.dt)
        velocity = speed * np.asarray(orientation.rotate(FORWARD))  # step 10
        position, velocity = settle(self.position + params.dt * velocity, velocity, params)
        return ReferenceBoid(position, velocity, orientation, waypoint)


@dataclass
class ReferencePredator:
    """A predator: flies at constant speed and turns, at its own limited rate, towards the nearest boid."""

    position: np.ndarray
    velocity: np.ndarray
    orientation: Quaternion

    def updated(self, flock: list[ReferenceBoid], params: Params) -> ReferencePredator:
        direction = np.asarray(self.orientation.rotate(FORWARD))
        if flock:
            d = offsets(self.position, np.array([b.position for b in flock]), params)
            nearest = d[int(np.argmin(np.linalg.norm(d, axis=1)))]
            if params.dimensions == 2:
                nearest[2] = 0.0
            if np.any(nearest):
                direction = _unit(nearest)
        max_angle = math.radians(params.predator_turn_rate) * params.dt
        orientation = turned(self.orientation, direction, max_angle)
        velocity = params.predator_speed * np.asarray(orientation.rotate(FORWARD))
        position, velocity = settle(self.position + params.dt * velocity, velocity, params)
        return ReferencePredator(position, velocity, orientation)


def perturbed(direction: np.ndarray, params: Params, seed: int, step_count: int, index: int) -> np.ndarray:
    """The Couzin model's noise: ``direction`` rotated by a random angle of spread sigma.

    The angle phi is Gaussian (sd sigma) and the axis, perpendicular to the direction,
    uniform around it: ``cos(phi) d + sin(phi) (cos(psi) e1 + sin(psi) e2)``. A planar
    flock keeps the turn in its plane. The random numbers come from
    :mod:`flock3d.core.noise`, shared with the fast kernel.
    """
    phi = params.noise_sigma * noise.gaussian(seed, step_count, index, 0)
    d = direction
    if params.dimensions == 2:
        side = np.array([-d[1], d[0], 0.0])
        return math.cos(phi) * d + math.sin(phi) * side / np.linalg.norm(side)
    psi = 2.0 * math.pi * noise.uniform(seed, step_count, index, 2)
    helper = np.array([1.0, 0.0, 0.0]) if abs(d[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(d, helper)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(d, e1)
    return math.cos(phi) * d + math.sin(phi) * (math.cos(psi) * e1 + math.sin(psi) * e2)


@dataclass
class CouzinAgent:
    """One individual of Couzin et al. (2002): zones of repulsion, orientation and attraction."""

    position: np.ndarray
    orientation: Quaternion

    @cached_property
    def heading(self) -> np.ndarray:
        """The unit heading (an agent's orientation does not change once it is made)."""
        return np.asarray(self.orientation.rotate(FORWARD))

    def desired_direction(self, group: list[CouzinAgent], params: Params) -> np.ndarray:
        """Repulsion first; else orientation and attraction, averaged when both act."""
        r_r, r_o, _ = params.zone_radii
        positions = np.array([a.position for a in group]).reshape(-1, 3)
        d = offsets(self.position, positions, params)
        seen = visible(self.position, self.heading, positions, params)  # within r_a, in the cone
        repel, orient, attract = [], [], []
        for j in np.flatnonzero(seen):
            distance = np.linalg.norm(d[j])
            unit = d[j] / distance
            if distance < r_r:
                repel.append(unit)
            elif distance < r_o:
                orient.append(group[j].heading)
            else:
                attract.append(unit)
        if repel:
            desired = -np.sum(repel, axis=0)
        elif orient or attract:
            d_o = _unit(self.heading + np.sum(orient, axis=0)) if orient else None  # its own heading counts
            d_a = _unit(np.sum(attract, axis=0)) if attract else None
            desired = d_o if d_a is None else d_a if d_o is None else 0.5 * (d_o + d_a)
        else:
            desired = self.heading  # nobody in sight: keep going
        if params.dimensions == 2:  # headings carry rounding out of the plane; drop it
            desired = desired * np.array([1.0, 1.0, 0.0])
        return _unit(desired) if np.any(desired) else self.heading

    def updated(self, group: list[CouzinAgent], params: Params, seed: int, step_count: int, index: int):
        desired = perturbed(self.desired_direction(group, params), params, seed, step_count, index)
        orientation = turned(self.orientation, desired, math.radians(params.max_turn_rate) * params.dt)
        velocity = params.speed * np.asarray(orientation.rotate(FORWARD))
        position, velocity = settle(self.position + params.dt * velocity, velocity, params)
        return CouzinAgent(position, orientation), velocity


def couzin_step(state: FlockState, params: Params, seed: int) -> FlockState:
    """One synchronous update of the Couzin model; ``seed`` keys its noise."""
    group = [
        CouzinAgent(p.copy(), Quaternion(q)) for p, q in zip(state.positions, state.orientations, strict=True)
    ]
    moved = [a.updated(group, params, seed, state.step_count, i) for i, a in enumerate(group)]
    n = len(moved)
    new = state.copy()
    new.positions = np.array([a.position for a, _ in moved]).reshape(n, 3)
    new.velocities = np.array([v for _, v in moved]).reshape(n, 3)
    new.orientations = np.array([a.orientation.elements for a, _ in moved]).reshape(n, 4)
    new.time, new.step_count = state.time + params.dt, state.step_count + 1
    return new


def step(state: FlockState, params: Params) -> FlockState:
    """One synchronous update of the whole world (boids and predators); returns a new state."""
    flock = [
        ReferenceBoid(p.copy(), v.copy(), Quaternion(q), int(k))
        for p, v, q, k in zip(
            state.positions, state.velocities, state.orientations, state.waypoints, strict=True
        )
    ]
    predators = [
        ReferencePredator(p.copy(), v.copy(), Quaternion(q))
        for p, v, q in zip(
            state.predator_positions, state.predator_velocities, state.predator_orientations, strict=True
        )
    ]
    moved = [boid.updated(flock, predators, params) for boid in flock]
    hunted = [predator.updated(flock, params) for predator in predators]
    n, m = len(moved), len(hunted)
    return FlockState(
        np.array([b.position for b in moved]).reshape(n, 3),
        np.array([b.velocity for b in moved]).reshape(n, 3),
        np.array([b.orientation.elements for b in moved]).reshape(n, 4),
        state.time + params.dt,
        state.step_count + 1,
        np.array([b.waypoint for b in moved], dtype=np.int64).reshape(n),
        np.array([p.position for p in hunted]).reshape(m, 3),
        np.array([p.velocity for p in hunted]).reshape(m, 3),
        np.array([p.orientation.elements for p in hunted]).reshape(m, 4),
    )
