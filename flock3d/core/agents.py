"""How the readable (reference) steps move an individual: turn it by at most an angle, find the
level frame it banks in, tilt a direction, carry a constant-speed agent, and gather the moved
individuals into the next state.

Shared by the reference engine (:mod:`flock3d.core.reference`), the models' own reference steps
(:mod:`flock3d.core.models`) and the terms' reference computations, below them all: it imports
none of them, so a model's readable step needs nothing of the engine that dispatches to it.
numpy and pyquaternion, one individual at a time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from pyquaternion import Quaternion

from flock3d.core.space import settle

if TYPE_CHECKING:
    from flock3d.core.params import Params
    from flock3d.core.state import FlockState

__all__ = [
    "FORWARD",
    "UP",
    "turned",
    "level_frame",
    "tilted",
    "Agent",
    "agents",
    "constant_speed_move",
    "moved_state",
]

FORWARD = np.array([0.0, 0.0, 1.0])
UP = np.array([0.0, 1.0, 0.0])


def turned(orientation: Quaternion, direction: np.ndarray, max_angle: float) -> Quaternion:
    """Step 9: rotate by the minimal arc towards ``direction``, at most ``max_angle`` rad."""
    f = np.asarray(orientation.rotate(FORWARD))
    axis = np.cross(f, direction)
    theta = math.atan2(np.linalg.norm(axis), np.dot(f, direction))
    if np.linalg.norm(axis) == 0.0:
        if np.dot(f, direction) >= 0.0:
            return orientation
        axis = np.asarray(orientation.rotate(UP))  # exactly opposite: turn about the boid's up
    turn = Quaternion(axis=axis, angle=min(theta, max_angle))
    return (turn * orientation).normalised


def level_frame(heading: np.ndarray, up: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The level up (the world's up across the unit ``heading``; ``up``, the bird's own, across it
    for a vertical heading) and the level right, up x heading: the frame a bird banks in."""
    level = UP - (UP @ heading) * heading
    if np.linalg.norm(level) < 1e-9:
        level = up - (up @ heading) * heading
    level = level / np.linalg.norm(level)
    return level, np.cross(level, heading)


def tilted(d: np.ndarray, phi: float, psi: float, planar: bool) -> np.ndarray:
    """The unit direction ``d`` tilted by the angle ``phi`` towards the perpendicular at azimuth
    ``psi`` around it: ``cos(phi) d + sin(phi) (cos(psi) e1 + sin(psi) e2)``; in a plane, turned
    by phi counterclockwise (psi unused)."""
    if planar:
        side = np.array([-d[1], d[0], 0.0])
        return math.cos(phi) * d + math.sin(phi) * side / np.linalg.norm(side)
    helper = np.array([1.0, 0.0, 0.0]) if abs(d[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(d, helper)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(d, e1)
    return math.cos(phi) * d + math.sin(phi) * (math.cos(psi) * e1 + math.sin(psi) * e2)


@dataclass
class Agent:
    """One individual of a constant-speed model (:mod:`flock3d.core.models`): where it is and
    which way it faces."""

    position: np.ndarray
    orientation: Quaternion

    @cached_property
    def heading(self) -> np.ndarray:
        """The unit heading (an agent's orientation does not change once it is made)."""
        return np.asarray(self.orientation.rotate(FORWARD))


def agents(state: FlockState) -> list[Agent]:
    """The individuals of ``state``, as agents."""
    return [Agent(p.copy(), Quaternion(q)) for p, q in zip(state.positions, state.orientations, strict=True)]


def constant_speed_move(agent: Agent, desired: np.ndarray, params: Params, old: bool = False) -> tuple:
    """``agent`` turned towards the unit direction ``desired`` (at most the turn limit) and moved at
    the constant speed for dt: along its new heading, or with ``old`` along the one it had. Returns
    (the moved agent, its velocity)."""
    orientation = turned(agent.orientation, desired, math.radians(params.max_turn_rate) * params.dt)
    velocity = params.speed * np.asarray(orientation.rotate(FORWARD))
    moving = params.speed * agent.heading if old else velocity
    position, velocity = settle(agent.position + params.dt * moving, velocity, params)
    return Agent(position, orientation), velocity


def moved_state(state: FlockState, params: Params, moved: list, radii: list | None = None) -> FlockState:
    """The state after a step of a constant-speed model: (agent, velocity) per individual."""
    n = len(moved)
    new = state.copy()
    new.positions = np.array([a.position for a, _ in moved]).reshape(n, 3)
    new.velocities = np.array([v for _, v in moved]).reshape(n, 3)
    new.orientations = np.array([a.orientation.elements for a, _ in moved]).reshape(n, 4)
    if radii is not None:
        new.radii = np.array(radii, dtype=np.float64).reshape(n)
    new.time, new.step_count = state.time + params.dt, state.step_count + 1
    return new
