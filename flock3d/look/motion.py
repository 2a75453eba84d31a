"""How a drawn boid moves beyond its position and heading: its bank into a turn and the beat of
its wings. Drawn only: neither ever changes the model.

Banking: a boid rolls into a turn as an aircraft does, by ``atan(a_lat / g)`` where ``a_lat`` is
its acceleration across its heading in the last step (smoothed over about :data:`BANK_SECONDS`).
:func:`follow_banks` is compiled and fused, not numpy: numpy's dozen passes over (N, 3) arrays were
60 ms a frame at 1,000,000 boids, the most of the CPU's per-boid work in a frame once the GPU took
the rest (``benchmarks/NOTES.md``).
In aerodynamic flight (``flock.flight = "aerodynamic"``) the model banks the birds itself: the
drawn roll is the one their orientations carry.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from flock3d.core.params import Params
from flock3d.core.quaternion import forward_of
from flock3d.core.space import up_axis
from flock3d.core.terms.flight import bank_angles

__all__ = [
    "BoidMotion", "FrameAcceleration", "beat", "flap", "follow_banks",
    "GRAVITY", "MAX_BANK", "BANK_SECONDS", "WING_BEATS_PER_SECOND", "WING_BEAT",
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


@numba.njit(cache=True, nogil=True)
def follow_banks(orientations, acceleration, up, keep, gravity, limit, banks):
    """Move each boid's ``banks`` [rad] (N,) in place ``keep`` (0 to 1) of the way towards the
    bank of a coordinated turn, ``atan(a_lat / gravity)`` within +-``limit`` [rad], for the
    ``acceleration`` (N, 3) [units/s^2] of boids facing ``orientations`` (N, 4 wxyz), the world's
    ``up`` (3,) a unit vector. A boid flying along ``up`` has no level right: its target is 0."""
    ux, uy, uz = up[0], up[1], up[2]
    for i in range(orientations.shape[0]):
        q = orientations[i]
        fx, fy, fz = forward_of(q[0], q[1], q[2], q[3])
        rx, ry, rz = uy * fz - uz * fy, uz * fx - ux * fz, ux * fy - uy * fx
        norm = math.sqrt(rx * rx + ry * ry + rz * rz)
        target = 0.0
        if norm > 1e-9:
            lateral = (acceleration[i, 0] * rx + acceleration[i, 1] * ry + acceleration[i, 2] * rz) / norm
            target = min(max(math.atan(lateral / gravity), -limit), limit)
        banks[i] += (target - banks[i]) * keep


class FrameAcceleration:
    """The boids' mean acceleration between two reads of their velocities: what banks them in a
    picture drawn once every few steps (a window's frame, a video's). Each read copies the
    velocities once: a GPU flock's read downloads its whole state, so a picture reads them after
    its steps only, never before its last step too."""

    def __init__(self) -> None:
        self._last: tuple[np.ndarray, float] | None = None  # the velocities and when they were read

    @property
    def read_once(self) -> bool:
        """Whether velocities were read since it was made or :meth:`forget` was called."""
        return self._last is not None

    def forget(self) -> None:
        """Start again: the next read has nothing to compare with (a new flock)."""
        self._last = None

    def read(self, velocities: np.ndarray, time: float) -> np.ndarray | None:
        """Copy ``velocities`` (N, 3), read at simulated ``time`` [s]; return their change since
        the last read over the time between, units/s^2. None at the first read, and after a read
        of another count of boids or at a time not after the last read's (a flock started over)."""
        now = np.array(velocities, dtype=np.float64, copy=True)
        last, self._last = self._last, (now, time)
        if last is None or last[0].shape != now.shape or time <= last[1]:
            return None
        return (now - last[0]) / (time - last[1])


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
        keep = 1.0 - math.exp(-elapsed / BANK_SECONDS)
        # The one signature follow_banks is compiled for: float64, C-contiguous, writeable.
        q, a = (np.require(x, np.float64, ["C", "W"]) for x in (orientations, acceleration))
        follow_banks(q, a, np.asarray(up_axis(params), np.float64), keep, GRAVITY, MAX_BANK, self._bank)
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
