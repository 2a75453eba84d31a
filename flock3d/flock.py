"""``Flock``: the public face of a simulation (state + parameters + a stepper)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Literal, overload

import numpy as np

from flock3d.boid import Boid
from flock3d.core import kernel, reference
from flock3d.core.params import Params
from flock3d.core.state import (
    FlockState,
    nearest_waypoints,
    random_state,
    settled_positions,
    state_from_arrays,
    up_axis,
)

if TYPE_CHECKING:
    from flock3d.scene import Scene

__all__ = ["Flock", "Engine"]

Engine = Literal["fast", "reference"]


class Flock:
    """A flock of boids in a spherical arena.

    Args:
        params: model parameters; ``params.count`` boids are made unless
            ``positions`` is given.
        seed: seed of ``numpy.random.default_rng`` for the spec's random
            initial state (positions in a ball, random headings and speeds).
        positions: optional (N, 3) starting positions; N then overrides
            ``params.count``.
        velocities: optional (N, 3) starting velocities; each boid faces along
            its velocity, with no roll.
        orientations: optional (N, 4) unit quaternions (w, x, y, z); velocities
            are then re-aimed along them, keeping their speeds.
        engine: ``"fast"`` (the parallel numba kernel) or ``"reference"`` (the
            readable per-boid implementation; slow, for checking).

    Whatever is not given is drawn as the spec says, so ``positions`` alone
    gives random headings and speeds from ``seed``.

    ``positions``, ``velocities`` and ``orientations`` are the live arrays: the
    flock updates them in place at each step, and :class:`Boid` objects are views
    into them. Copy them to keep a snapshot.

    Examples:
        >>> flock = Flock(Params(count=300), seed=1)
        >>> flock.step(60)
        >>> flock.params = flock.params.replace(fov=180)  # live tweak, no reset
        >>> flock.boids[0].neighbours()  # doctest: +SKIP
    """

    def __init__(
        self,
        params: Params | None = None,
        seed: int | None = 0,
        *,
        positions: np.ndarray | None = None,
        velocities: np.ndarray | None = None,
        orientations: np.ndarray | None = None,
        engine: Engine = "fast",
    ) -> None:
        params = Params() if params is None else params
        if not isinstance(params, Params):
            raise TypeError(f"params must be a flock3d.Params, got {type(params).__name__}")
        if engine not in ("fast", "reference"):
            raise ValueError(f"engine must be 'fast' or 'reference' (got {engine!r})")
        given = next((a for a in (positions, velocities, orientations) if a is not None), None)
        if given is not None:
            params = params.replace(count=len(np.asarray(given)))
        drawn = random_state(params, seed)
        state = state_from_arrays(
            drawn.positions if positions is None else positions,
            drawn.velocities if velocities is None else velocities,
            orientations,
            up=up_axis(params),
        )
        state.positions = settled_positions(state.positions, params)
        state.waypoints = nearest_waypoints(state.positions, params)
        state.predator_positions = settled_positions(drawn.predator_positions, params)
        state.predator_velocities = drawn.predator_velocities
        state.predator_orientations = drawn.predator_orientations
        self._state = state
        self._params = params
        self._seed = seed
        self._engine: Engine = engine

    @classmethod
    def from_scene(cls, scene: Scene, seed: int | None = None, **kwargs) -> Flock:
        """A flock made from a scene: its params and its seed (unless ``seed`` is given)."""
        return cls(scene.params, scene.seed if seed is None else seed, **kwargs)

    # -- stepping ---------------------------------------------------------------------

    def step(self, n: int = 1) -> None:
        """Advance the flock by ``n`` steps of ``params.dt`` seconds."""
        n = int(n)
        if n < 0:
            raise ValueError(f"n must be >= 0 (got {n})")
        couzin = self._params.model == "couzin"
        if self._engine == "fast":
            if couzin:
                kernel.advance_couzin(self._state, self._params, n, self.noise_seed)
            else:
                kernel.advance(self._state, self._params, n)
            return
        state = self._state
        time, count = state.time, state.step_count
        for _ in range(n):
            if couzin:
                new = reference.couzin_step(state, self._params, self.noise_seed)
            else:
                new = reference.step(state, self._params)
            state.step_count += 1  # the step index keys the Couzin model's noise
            # Keep the live arrays (Boid views and user references stay valid).
            for name in ("positions", "velocities", "orientations", "waypoints", "predator_positions",
                         "predator_velocities", "predator_orientations"):  # fmt: skip
                getattr(state, name)[...] = getattr(new, name)
        # The clock advances as in the fast kernel, so both engines report the same time.
        state.time, state.step_count = time + n * self._params.dt, count + n

    # -- state ------------------------------------------------------------------------

    @property
    def params(self) -> Params:
        """The model parameters. Assign new ones between steps to re-tune the live flock."""
        return self._params

    @params.setter
    def params(self, params: Params) -> None:
        if not isinstance(params, Params):
            raise TypeError(f"params must be a flock3d.Params, got {type(params).__name__}")
        if params.count != len(self):
            raise ValueError(
                f"params.count is {params.count} but the flock has {len(self)} boids; "
                "make a new Flock to change the number of boids"
            )
        old, state = self._params, self._state
        state.positions[...] = settled_positions(state.positions, params)  # e.g. a smaller periodic box
        state.predator_positions[...] = settled_positions(state.predator_positions, params)
        if params.path != old.path:
            state.waypoints = nearest_waypoints(state.positions, params)
        if params.predator_count != state.n_predators:
            self._set_predators(params)
        self._params = params

    def _set_predators(self, params: Params) -> None:
        """Keep the first predators and draw any new ones (reproducibly, from the seed and step)."""
        state, m = self._state, params.predator_count
        keep = min(m, state.n_predators)
        drawn = random_state(
            params.replace(count=0), np.random.default_rng([self._seed or 0, state.step_count])
        )
        for name in ("predator_positions", "predator_velocities", "predator_orientations"):
            setattr(state, name, np.concatenate([getattr(state, name)[:keep], getattr(drawn, name)[keep:m]]))

    @property
    def state(self) -> FlockState:
        """The live state record (arrays, time, step count)."""
        return self._state

    @property
    def positions(self) -> np.ndarray:
        """(N, 3) float64 positions, world units (live array)."""
        return self._state.positions

    @property
    def velocities(self) -> np.ndarray:
        """(N, 3) float64 velocities, units/s (live array)."""
        return self._state.velocities

    @property
    def orientations(self) -> np.ndarray:
        """(N, 4) float64 unit quaternions (w, x, y, z), forward = +Z (live array)."""
        return self._state.orientations

    @property
    def time(self) -> float:
        """Simulated seconds since the start."""
        return self._state.time

    @property
    def step_count(self) -> int:
        """Steps taken since the start."""
        return self._state.step_count

    @property
    def predator_positions(self) -> np.ndarray:
        """(M, 3) float64 positions of the predators (live array)."""
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
        """Which implementation steps the flock: ``"fast"`` or ``"reference"``."""
        return self._engine

    def __len__(self) -> int:
        return len(self._state)

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

    def __init__(self, flock: Flock) -> None:
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
