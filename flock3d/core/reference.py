"""The readable reference implementation of one step of the model.

Written the way the model is explained (``shared/spec/model.md``): each boid
looks around, gathers the neighbours it can see, sums its steering rules and
turns towards the result. It is slow (pure Python per boid) and exists to be
obviously right: the tests use it as the oracle for the fast kernel.

Turning uses pyquaternion rather than :mod:`flock3d.core.quaternion`, so the two
implementations share no quaternion code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from pyquaternion import Quaternion

from flock3d.core.params import Params
from flock3d.core.state import FlockState

__all__ = ["step", "visible", "ReferenceBoid"]

FORWARD = np.array([0.0, 0.0, 1.0])
UP = np.array([0.0, 1.0, 0.0])


def visible(position: np.ndarray, heading: np.ndarray, others: np.ndarray, params: Params) -> np.ndarray:
    """Which of ``others`` a boid at ``position`` facing ``heading`` sees (spec step 1).

    Args:
        position: (3,) the looking boid's position.
        heading: (3,) its unit forward vector.
        others: (M, 3) positions of the candidates.
        params: supplies ``view_distance`` and ``fov``.

    Returns:
        (M,) bool: ``0 < d < view_distance`` and the angle between ``heading``
        and the offset is at most ``fov / 2``. A coincident boid (d = 0),
        the looking boid itself included, is never seen.
    """
    offsets = np.asarray(others, dtype=np.float64).reshape(-1, 3) - position
    distances = np.linalg.norm(offsets, axis=1)
    in_range = (distances > 0.0) & (distances < params.view_distance)
    if params.fov >= 360.0:
        return in_range
    with np.errstate(invalid="ignore", divide="ignore"):
        cosines = offsets @ heading / distances
    angles = np.degrees(np.arccos(np.clip(cosines, -1.0, 1.0)))
    return in_range & (angles <= params.fov / 2.0)


@dataclass
class ReferenceBoid:
    """One boid as the spec describes it, with the rules as methods."""

    position: np.ndarray
    velocity: np.ndarray
    orientation: Quaternion

    @property
    def forward(self) -> np.ndarray:
        return np.asarray(self.orientation.rotate(FORWARD))

    def neighbours(self, flock: list[ReferenceBoid], params: Params) -> list[ReferenceBoid]:
        """Step 1: the boids within view distance and inside the field-of-view cone."""
        seen = visible(self.position, self.forward, np.array([b.position for b in flock]), params)
        return [b for b, s in zip(flock, seen, strict=True) if s]

    def separation(self, neighbours: list[ReferenceBoid], params: Params) -> np.ndarray:
        """Step 2: mean of (p_i - p_j) / d^2 over neighbours closer than r_s, times k_s."""
        pushes = []
        for other in neighbours:
            away = self.position - other.position
            d = np.linalg.norm(away)
            if d < params.separation_distance:
                pushes.append(away / d**2)
        if not pushes:
            return np.zeros(3)
        return params.separation * np.mean(pushes, axis=0)

    def alignment(self, neighbours: list[ReferenceBoid], params: Params) -> np.ndarray:
        """Step 3: k_a times (mean neighbour velocity - own velocity)."""
        if not neighbours:
            return np.zeros(3)
        return params.alignment * (np.mean([b.velocity for b in neighbours], axis=0) - self.velocity)

    def cohesion(self, neighbours: list[ReferenceBoid], params: Params) -> np.ndarray:
        """Step 4: k_c times the mean offset to the neighbours."""
        if not neighbours:
            return np.zeros(3)
        return params.cohesion * np.mean([b.position - self.position for b in neighbours], axis=0)

    def confinement(self, params: Params) -> np.ndarray:
        """Step 5: -k_b along the outward radius once beyond f_b * R from the centre."""
        r = self.position - np.asarray(params.arena_center)
        distance = np.linalg.norm(r)
        if distance > params.confinement_start * params.arena_radius:
            return -params.confinement * r / distance
        return np.zeros(3)

    def turned_towards(self, direction: np.ndarray, max_angle: float) -> Quaternion:
        """Step 9: rotate by the minimal arc towards ``direction``, at most ``max_angle`` rad."""
        f = self.forward
        axis = np.cross(f, direction)
        theta = math.atan2(np.linalg.norm(axis), np.dot(f, direction))
        if np.linalg.norm(axis) == 0.0:
            if np.dot(f, direction) >= 0.0:
                return self.orientation
            axis = np.asarray(self.orientation.rotate(UP))  # exactly opposite: turn about up
        turn = Quaternion(axis=axis, angle=min(theta, max_angle))
        return (turn * self.orientation).normalised

    def updated(self, flock: list[ReferenceBoid], params: Params) -> ReferenceBoid:
        """This boid after one step, computed from the flock as it was (steps 1 to 10)."""
        neighbours = self.neighbours(flock, params)
        acceleration = (
            self.separation(neighbours, params)
            + self.alignment(neighbours, params)
            + self.cohesion(neighbours, params)
            + self.confinement(params)
        )
        desired = self.velocity + params.dt * acceleration  # step 7
        magnitude = np.linalg.norm(desired)
        speed = min(max(magnitude, params.min_speed), params.max_speed)  # step 8
        direction = desired / magnitude if magnitude > 0.0 else self.forward
        orientation = self.turned_towards(direction, math.radians(params.max_turn_rate) * params.dt)
        velocity = speed * np.asarray(orientation.rotate(FORWARD))  # step 10
        return ReferenceBoid(self.position + params.dt * velocity, velocity, orientation)


def step(state: FlockState, params: Params) -> FlockState:
    """One synchronous update of the whole flock; returns a new state."""
    flock = [
        ReferenceBoid(p.copy(), v.copy(), Quaternion(q))
        for p, v, q in zip(state.positions, state.velocities, state.orientations, strict=True)
    ]
    moved = [boid.updated(flock, params) for boid in flock]
    n = len(moved)
    return FlockState(
        np.array([b.position for b in moved]).reshape(n, 3),
        np.array([b.velocity for b in moved]).reshape(n, 3),
        np.array([b.orientation.elements for b in moved]).reshape(n, 4),
        state.time + params.dt,
        state.step_count + 1,
    )
