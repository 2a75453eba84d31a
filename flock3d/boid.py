"""``Boid``: one boid of a flock, as an object backed by the flock's arrays."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from pyquaternion import Quaternion

from flock3d.core import quaternion
from flock3d.core.space import neighbours, settled_positions, up_axis, visible

if TYPE_CHECKING:
    from flock3d.flock import Flock

__all__ = ["Boid"]


class Boid:
    """A view of boid ``index`` of ``flock``: reads and writes go to the flock's arrays.

    ``position`` and ``velocity`` return live (3,) rows of the flock's arrays;
    assigning them changes the flock. An assigned position is settled where the
    arena allows it (wrapped into a periodic box, put in the plane of a planar
    flock). Assigning a velocity also turns the boid
    to face along it (no roll), and assigning an orientation re-aims the
    velocity, so that the setters keep the spec's invariant ``velocity == speed *
    forward``. Writing into the arrays themselves (``boid.velocity[0] = 1``,
    ``flock.velocities[...] = ...``) changes the velocity alone; the next step
    then turns the boid from its current orientation.

    Args:
        flock: the flock it belongs to.
        index: its row in the flock's arrays.
    """

    __slots__ = ("_flock", "_index")

    def __init__(self, flock: Flock, index: int) -> None:
        self._flock = flock
        self._index = index

    @property
    def index(self) -> int:
        """This boid's row in the flock's arrays."""
        return self._index

    @property
    def flock(self) -> Flock:
        """The flock it belongs to."""
        return self._flock

    @property
    def position(self) -> np.ndarray:
        """(3,) position [units] (a live view)."""
        return self._flock.positions[self._index]

    @position.setter
    def position(self, value) -> None:
        p = np.asarray(value, dtype=np.float64)
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            raise ValueError(f"position must be 3 finite numbers (got {value!r})")
        self._flock.positions[self._index] = settled_positions(p, self._flock.params)

    @property
    def velocity(self) -> np.ndarray:
        """(3,) velocity [units/s] (a live view)."""
        return self._flock.velocities[self._index]

    @velocity.setter
    def velocity(self, value) -> None:
        v = np.asarray(value, dtype=np.float64)
        if v.shape != (3,) or not np.all(np.isfinite(v)):
            raise ValueError(f"velocity must be 3 finite numbers (got {value!r})")
        self._flock.velocities[self._index] = v
        if np.any(v != 0.0):
            up = up_axis(self._flock.params)
            self._flock.orientations[self._index] = quaternion.look_rotation(v[None], up)[0]

    @property
    def orientation(self) -> Quaternion:
        """Orientation as a ``pyquaternion.Quaternion`` (a copy; assign to change it)."""
        return Quaternion(self._flock.orientations[self._index])

    @orientation.setter
    def orientation(self, value) -> None:
        q = np.asarray(value.elements if isinstance(value, Quaternion) else value, dtype=np.float64)
        norm = np.linalg.norm(q) if q.shape == (4,) else 0.0
        if not np.isfinite(norm) or norm == 0.0:
            raise ValueError(f"orientation must be a non-zero quaternion (w, x, y, z) (got {value!r})")
        q = q / norm
        self._flock.orientations[self._index] = q
        self._flock.velocities[self._index] = self.speed * quaternion.forward(q[None])[0]

    @property
    def forward(self) -> np.ndarray:
        """(3,) unit heading: the orientation applied to +Z."""
        return quaternion.forward(self._flock.orientations[self._index][None])[0]

    @property
    def speed(self) -> float:
        """|velocity| [units/s]."""
        return float(np.linalg.norm(self.velocity))

    @property
    def species(self) -> int:
        """Its species: an index into ``flock.params.species`` (0 without species)."""
        return int(self._flock.species[self._index])

    def can_see(self, other: Boid) -> bool:
        """Whether ``other`` is inside this boid's field of view and perception distance.

        The perception distance is its species' view distance (r_a for the Couzin model).

        Args:
            other: a boid of the same flock.

        Returns:
            True when this boid sees ``other``.
        """
        own = self._flock.params.of_species(self.species)
        return bool(visible(self.position, self.forward, other.position[None], own)[0])

    def neighbours(self) -> list[Boid]:
        """The boids this one interacts with now, in index order.

        Those it sees (spec step 1) of the species it sees, within its adaptive radius, and
        with topological neighbours only the k nearest (:func:`flock3d.core.space.neighbours`).

        Returns:
            The neighbours, as :class:`Boid` objects.
        """
        params = self._flock.params
        radius = self._flock.state.radii[self._index] if params.adaptive else None
        seen = neighbours(self.position, self.forward, self._flock.positions, params, self.species, radius)
        return [Boid(self._flock, int(j)) for j in np.flatnonzero(seen)]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Boid) and other._flock is self._flock and other._index == self._index

    def __hash__(self) -> int:
        return hash((id(self._flock), self._index))

    def __repr__(self) -> str:
        p, v = self.position, self.velocity
        return (
            f"Boid({self._index}, position=({p[0]:.3g}, {p[1]:.3g}, {p[2]:.3g}), "
            f"velocity=({v[0]:.3g}, {v[1]:.3g}, {v[2]:.3g}))"
        )
