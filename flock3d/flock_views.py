"""What a flock shows: the read-only views of its state (:class:`FlockViews`, which
:class:`~flock3d.flock.Flock` is made from), and its boids as a sequence (:class:`Boids`).

A flock's own jobs (making its state, stepping it, retuning it, exporting it) are in
:mod:`flock3d.flock`; these only read what it holds.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Literal, overload

import numpy as np

from flock3d.boid import Boid
from flock3d.core.state import FlockState

if TYPE_CHECKING:
    from flock3d.core.params import Params

__all__ = ["FlockViews", "Boids", "Engine"]

Engine = Literal["fast", "reference", "gpu"]


class FlockViews:
    """The views of a flock's state: its live arrays, clock, species, seed and engine, its boids."""

    # what the flock keeps and these read
    _state: FlockState  # its live state
    _params: Params
    _seed: int | None  # what its initial state was drawn with
    _engine: Engine

    @property
    def state(self) -> FlockState:
        """The live state record (arrays, time, step count)."""
        return self._state

    @property
    def positions(self) -> np.ndarray:
        """(N, 3) float64 positions [units] (live array)."""
        return self._state.positions

    @property
    def velocities(self) -> np.ndarray:
        """(N, 3) float64 velocities [units/s] (live array)."""
        return self._state.velocities

    @property
    def orientations(self) -> np.ndarray:
        """(N, 4) float64 unit quaternions (w, x, y, z), forward = +Z (live array)."""
        return self._state.orientations

    @property
    def time(self) -> float:
        """Simulated time since the start [s]."""
        return self._state.time

    @property
    def step_count(self) -> int:
        """Steps taken since the start."""
        return self._state.step_count

    @property
    def species(self) -> np.ndarray:
        """(N,) int32: each boid's species, an index into ``params.species`` (all 0 without species)."""
        return self._params.species_of_boids

    @property
    def predator_positions(self) -> np.ndarray:
        """(M, 3) float64 positions of the predators [units] (live array)."""
        return self._state.predator_positions

    @property
    def seed(self) -> int | None:
        """The seed the initial state was drawn with."""
        return self._seed

    @property
    def noise_seed(self) -> int:
        """What keys a stochastic model's noise: the seed (0 when the flock was given no seed)."""
        return 0 if self._seed is None else int(self._seed)

    @property
    def engine(self) -> Engine:
        """Which implementation steps the flock: ``"fast"``, ``"reference"`` or ``"gpu"``."""
        return self._engine

    def __len__(self) -> int:
        return self._params.count

    def _repr_png_(self) -> bytes | None:
        """A picture of the flock as it is now, for notebooks (drawn offscreen with the viewer's
        look); None where offscreen OpenGL is not available."""
        from flock3d.viewer.offscreen import flock_png

        return flock_png(self)

    def __repr__(self) -> str:
        return (
            f"Flock({len(self)} boids, t={self.time:.3f} s, step {self.step_count}, engine={self._engine!r})"
        )

    # -- boids ------------------------------------------------------------------------

    @property
    def boids(self) -> Boids:
        """The boids as :class:`Boid` objects (views of the flock's arrays)."""
        return Boids(self)

    def __iter__(self) -> Iterator[Boid]:
        return iter(self.boids)


class Boids(Sequence[Boid]):
    """A sequence view of a flock's boids: ``flock.boids[i]``, slicing, iteration."""

    def __init__(self, flock: FlockViews) -> None:
        self._flock = flock

    def __len__(self) -> int:
        return len(self._flock)

    @overload
    def __getitem__(self, index: int) -> Boid: ...
    @overload
    def __getitem__(self, index: slice) -> list[Boid]: ...
    def __getitem__(self, index):
        n = len(self)
        if isinstance(index, slice):
            return [Boid(self._flock, i) for i in range(*index.indices(n))]
        i = int(index)
        if not -n <= i < n:
            raise IndexError(f"boid index {index} out of range for a flock of {n}")
        return Boid(self._flock, i % n)
