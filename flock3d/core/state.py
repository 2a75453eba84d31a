"""The flock's state: a plain record of arrays, and how a first state is made."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from flock3d.core import quaternion
from flock3d.core.params import Params

__all__ = ["FlockState", "random_state", "state_from_arrays"]


@dataclass
class FlockState:
    """Everything that changes as a flock moves.

    Invariant (spec): ``velocities[i] == |velocities[i]| * forward(orientations[i])``.
    """

    positions: np.ndarray
    """(N, 3) float64, world units."""
    velocities: np.ndarray
    """(N, 3) float64, units/s."""
    orientations: np.ndarray
    """(N, 4) float64 unit quaternions (w, x, y, z)."""
    time: float = 0.0
    """Simulated seconds since the start."""
    step_count: int = 0
    """Steps taken since the start."""

    def __len__(self) -> int:
        return self.positions.shape[0]

    def copy(self) -> FlockState:
        """A deep copy (the arrays are copied)."""
        return FlockState(
            self.positions.copy(),
            self.velocities.copy(),
            self.orientations.copy(),
            self.time,
            self.step_count,
        )


def random_state(params: Params, seed: int | np.random.Generator | None = 0) -> FlockState:
    """The spec's initial state for ``params.count`` boids.

    With ``numpy.random.default_rng(seed)``: positions uniform in the ball of
    radius ``params.initial_radius`` around the arena centre, directions uniform
    on the sphere, speeds uniform in [min_speed, max_speed]; orientations are
    the look rotations of the directions. Draws are made in that order, so one
    seed always gives the same flock.
    """
    rng = np.random.default_rng(seed)
    n = params.count
    offsets = _unit_vectors(rng, n) * (params.initial_radius * np.cbrt(rng.random(n)))[:, None]
    positions = np.asarray(params.arena_center) + offsets
    directions = _unit_vectors(rng, n)
    speeds = rng.uniform(params.min_speed, params.max_speed, n)
    return FlockState(positions, directions * speeds[:, None], quaternion.look_rotation(directions))


def _unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 3) directions uniform on the unit sphere (normalised Gaussian draws)."""
    v = rng.standard_normal((n, 3))
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    # A zero draw has probability 0 but would give NaN; point it along +Z instead.
    zero = norms[:, 0] == 0.0
    v[zero], norms[zero] = (0.0, 0.0, 1.0), 1.0
    return v / norms


def state_from_arrays(
    positions: np.ndarray,
    velocities: np.ndarray,
    orientations: np.ndarray | None = None,
) -> FlockState:
    """A state from given arrays (copied), checked for shape and finiteness.

    Without ``orientations`` each boid faces along its velocity (the look
    rotation; identity for a zero velocity). With them, velocities are
    re-projected onto the orientations' forward axes (keeping their speeds) so
    that the spec's invariant holds.
    """
    p = _checked(positions, 3, "positions")
    v = _checked(velocities, 3, "velocities")
    if v.shape != p.shape:
        raise ValueError(f"velocities has shape {v.shape} but positions has shape {p.shape}")
    if orientations is None:
        q = quaternion.look_rotation(v)
    else:
        q = _checked(orientations, 4, "orientations")
        if q.shape[0] != p.shape[0]:
            raise ValueError(f"orientations has {q.shape[0]} rows but positions has {p.shape[0]}")
        norms = np.linalg.norm(q, axis=1)
        if np.any(norms == 0.0):
            raise ValueError("orientations must be non-zero quaternions")
        q = q / norms[:, None]
        v = quaternion.forward(q) * np.linalg.norm(v, axis=1)[:, None]
    return FlockState(p, v, q)


def _checked(a: np.ndarray, width: int, name: str) -> np.ndarray:
    out = np.array(a, dtype=np.float64, copy=True)
    if out.ndim == 1 and out.size == 0:
        out = out.reshape(0, width)
    if out.ndim != 2 or out.shape[1] != width:
        raise ValueError(f"{name} must have shape (N, {width}), got {out.shape}")
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return out
