"""How a drawn boid moves beyond its position and heading: its bank into a turn and the beat of
its wings (numpy only). Drawn only: neither ever changes the model.

Banking: a boid rolls into a turn as an aircraft does, by ``atan(a_lat / g)`` where ``a_lat`` is
its acceleration across its heading in the last step (smoothed over about :data:`BANK_SECONDS`).
In aerodynamic flight (``flock.flight = "aerodynamic"``) the model banks the birds itself: the
drawn roll is the one their orientations carry.
"""

from __future__ import annotations

import math

import numpy as np

from flock3d.core import quaternion
from flock3d.core.params import Params
from flock3d.core.space import up_axis
from flock3d.core.terms.flight import bank_angles

__all__ = [
    "BoidMotion", "beat", "flap", "GRAVITY", "MAX_BANK", "BANK_SECONDS", "WING_BEATS_PER_SECOND", "WING_BEAT",
]  # fmt: skip

GRAVITY = 9.81
"""For banking, world units/s^2."""
MAX_BANK = math.radians(70.0)
BANK_SECONDS = 0.15
"""Banking follows the lateral acceleration with this time constant (simulated seconds)."""
WING_BEATS_PER_SECOND = 3.0
WING_BEAT = 0.3
"""The bird's wing tips move this many body lengths up and down."""


def flap(name: str) -> float:
    """How far the wing tips of mesh ``name`` beat, body lengths: only the bird has wings."""
    return WING_BEAT if name == "bird" else 0.0


class BoidMotion:
    """The smoothed bank angles and the wing phases of a flock drawn frame after frame.

    It remembers the last frame's banks and simulated time: a frame at an earlier time, or of
    another number of boids, is a new flock (a reset) and starts level.
    """

    def __init__(self) -> None:
        self._bank = np.zeros(0)
        self._time: float | None = None
        self._phases = np.zeros(0)

    def banks(
        self, params: Params, orientations: np.ndarray, acceleration: np.ndarray | None, time: float
    ) -> np.ndarray:
        """(N,) smoothed bank angles [radians] from the lateral acceleration (N, 3) [units/s^2] of
        the last step across the headings of ``orientations`` (N, 4 wxyz); in aerodynamic flight,
        the roll of each orientation. ``time``: the simulated time of the frame [s]."""
        n = len(orientations)
        elapsed = 0.0 if self._time is None else time - self._time
        if len(self._bank) != n or elapsed < 0:
            self._bank = np.zeros(n)  # a new flock (or a reset)
        self._time = time
        if params.flight == "aerodynamic":
            self._bank = bank_angles(orientations, up_axis(params))
            return self._bank
        if acceleration is None or len(acceleration) != n or n == 0 or elapsed == 0:
            return self._bank  # paused, the boids hold their roll
        # The acceleration along the level right, up x f / |up x f|, as a . (up x f) = f . (a x up)
        # and |up x f|^2 = 1 - (up . f)^2: no (N, 3) cross product (np.cross was half the frame's
        # CPU time at 1,000,000 boids).
        ux, uy, uz = up = np.asarray(up_axis(params), np.float64)
        forwards = quaternion.forward(orientations)
        across = acceleration @ np.array([[0.0, -uz, uy], [uz, 0.0, -ux], [-uy, ux, 0.0]])  # a x up
        level = 1.0 - (forwards @ up) ** 2
        lateral = np.einsum("ij,ij->i", forwards, across) / np.sqrt(np.where(level > 1e-18, level, np.inf))
        target = np.clip(np.arctan(lateral / GRAVITY), -MAX_BANK, MAX_BANK)
        self._bank += (target - self._bank) * (1.0 - math.exp(-elapsed / BANK_SECONDS))
        return self._bank

    def phases(self, n: int) -> np.ndarray:
        """(N,) where each of ``n`` boids' wings are in their beat at time 0 [rad]: each boid beats
        at a phase of its own (fixed while the flock keeps its size); see :func:`beat`."""
        if len(self._phases) != n:
            self._phases = np.random.default_rng(7).uniform(0.0, 2.0 * np.pi, n)
        return self._phases


def beat(time: float) -> float:
    """The wing beat's phase [rad] at simulated ``time`` [s]: a boid's wings are at
    ``sin(beat(time) + phase)`` of their travel (-1 to 1), its ``phase`` from :meth:`BoidMotion.phases`."""
    return 2.0 * math.pi * WING_BEATS_PER_SECOND * (time % 3600.0)
