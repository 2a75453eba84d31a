"""The geometry of seeing that the terms, the models and the reference engine share: offsets to
other boids (the nearest image in a periodic arena), what a boid sees (distance and cone), its k
nearest, its neighbours with every option of perception, and its adaptive radius (the per-boid
state :data:`RADII` declares).

Readable numpy, one boid at a time: the reference engine's definitions, which the terms' and
models' reference methods use too. The fast engine computes the same with its own compiled
code (:mod:`flock3d.core.components`, :mod:`flock3d.core.kernel`); this module imports nothing
of it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from flock3d.core.carried import Carried

if TYPE_CHECKING:
    from flock3d.core.params import Params

__all__ = [
    "offsets",
    "visible",
    "cone_threshold",
    "CONE_EDGE",
    "nearest_of",
    "neighbours",
    "adapted_radius",
    "initial_radii",
    "RADII",
    "unit",
    "UP_OF_PLANE",
    "up_axis",
    "settle",
    "settled_positions",
]


#: How far past the cone's edge a neighbour is still seen, relative to the squared cosine both
#: engines compare: one placed exactly on the edge (the offset (0, 1, 1) of a boid heading +z, with
#: a fov of 90) is seen by both, as ``angle <= fov/2`` says, however each rounds its products. About
#: 1e-12 radians of angle at any fov.
CONE_EDGE = 1e-12


def cone_threshold(fov_degrees: float) -> float:
    """The cone test's threshold: a boid sees an offset d (its heading f) when ``(f.d)|f.d| >=
    threshold |d|^2``, that is cos(angle)|cos(angle)| >= cos(fov/2)|cos(fov/2)| less
    :data:`CONE_EDGE` of it (and of 1e-12 besides, where cos(fov/2) is 0); -inf when nothing is
    hidden (fov 360). Both engines test this one comparison: the fast step without a square root,
    the reference with the cosine itself.

    cos(fov/2) is computed as sin((180 - fov)/2), which is exactly 0 at fov = 180 (cos(pi/2)
    would give 6e-17)."""
    if fov_degrees >= 360.0:
        return -math.inf
    c = math.sin(math.radians(180.0 - fov_degrees) / 2.0)
    return c * abs(c) - CONE_EDGE * (c * c + CONE_EDGE)


def offsets(position: np.ndarray, others: np.ndarray, params: Params) -> np.ndarray:
    """(M, 3) offsets from ``position`` to ``others``; in a periodic arena, to their nearest images."""
    d = np.asarray(others, dtype=np.float64).reshape(-1, 3) - position
    if params.arena_shape == "periodic":
        sides = 2.0 * np.asarray(params.half_extents)
        axes = slice(0, 2) if params.dimensions == 2 else slice(0, 3)
        d[:, axes] -= sides[axes] * np.round(d[:, axes] / sides[axes])
    return d


def visible(
    position: np.ndarray,
    heading: np.ndarray,
    others: np.ndarray,
    params: Params,
    distance: float | None = None,
    fov: float | None = None,
) -> np.ndarray:
    """Which of ``others`` a boid at ``position`` facing ``heading`` sees (step 1 of the model).

    Args:
        position: (3,) the looking boid's position.
        heading: (3,) its unit heading.
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
    return in_range & (cosines * np.abs(cosines) >= cone_threshold(fov))  # angle <= fov / 2


def nearest_of(seen: np.ndarray, distances: np.ndarray, k: int | None) -> np.ndarray:
    """(M,) bool: the k nearest of the boids ``seen`` (all of them when k is None); at equal
    distances the lower index comes first."""
    if k is None:
        return seen
    candidates = np.flatnonzero(seen)
    nearest = candidates[np.lexsort((candidates, distances[candidates]))[:k]]
    keep = np.zeros_like(seen)
    keep[nearest] = True
    return keep


def neighbours(
    position: np.ndarray,
    heading: np.ndarray,
    positions: np.ndarray,
    params: Params,
    species: int = 0,
    radius: float | None = None,
) -> np.ndarray:
    """Which of a flock's boids a boid interacts with: step 1 with the options of perception.

    Args:
        position, heading: (3,) the boid's position and unit heading.
        positions: (N, 3) the whole flock (the boid itself included: it is never its own neighbour).
        params: the flock's parameters.
        species: the boid's species (``Params.species``), 0 without species.
        radius: its adaptive radius (``Params.adaptive``) instead of its view distance.

    Returns:
        (N,) bool: the boids it sees (within its species' view distance, or ``radius``, and
        cone; for the Couzin model within r_a) of the species it sees, and with
        ``params.neighbours = k`` only the k nearest of those, the lower index first at
        equal distances.
    """
    seen = visible(position, heading, positions, params.of_species(species), radius)
    if params.species:
        kinds = params.species_of_boids
        seen &= np.array([params.interacts(species, b)[0] for b in range(len(params.species))])[kinds]
    distances = np.linalg.norm(offsets(position, positions, params), axis=1)
    return nearest_of(seen, distances, params.neighbours)


def adapted_radius(radius: float, position, heading, positions, params: Params, species: int = 0) -> float:
    """An adaptive radius after one step: nudged by ``params.adaptation`` of the gap towards the
    distance of the k-th nearest boid seen within the view distance (the view distance when
    fewer than k are seen there): StarDisplay's radius that holds k neighbours."""
    seen = neighbours(position, heading, positions, params, species)
    distances = np.linalg.norm(offsets(position, positions, params), axis=1)[seen]
    own = params.of_species(species).view_distance
    target = float(np.max(distances)) if len(distances) == params.neighbours else own
    return radius + params.adaptation * (target - radius)


def initial_radii(params: Params) -> np.ndarray:
    """(count,) the adaptive radii a flock starts with: each boid's view distance (its species')."""
    if not params.species:
        return np.full(params.count, float(params.view_distance))
    return np.array([params.of_species(k).view_distance for k in range(len(params.species))])[
        params.species_of_boids
    ]


def _radii_restart(old: Params, new: Params) -> bool:
    """A retuned flock's radii start again at the view distances when it takes up the adaptive
    radius, or changes its species with it (whose view distances they start at)."""
    return new.adaptive and not (old.adaptive and old.species == new.species)


RADII = Carried(
    "radii",
    1,
    "each boid's adaptive radius (``Params.adaptive``; unused otherwise), world units",
    initial=initial_radii,
    restart=_radii_restart,
)
"""The adaptive radius, per boid: the perception's state, which the fast step carries last in pv."""


def unit(v: np.ndarray) -> np.ndarray:
    """``v`` over its length; the zero vector stays zero."""
    n = np.linalg.norm(v)
    return v / n if n > 0.0 else np.zeros(3)


UP_OF_PLANE = (0.0, 0.0, 1.0)
"""The up axis of boids in a planar flock (which lives in a z = const plane)."""


def up_axis(params: Params) -> tuple[float, float, float]:
    """The world axis a boid's up points to when it faces along its velocity with no roll."""
    return UP_OF_PLANE if params.dimensions == 2 else (0.0, 1.0, 0.0)


def settle(positions: np.ndarray, velocities: np.ndarray, params: Params) -> tuple[np.ndarray, np.ndarray]:
    """Where boids may be: a planar flock in its plane, a wrapping arena's boids inside its box.

    Takes (..., 3) positions and velocities and returns settled copies: in a planar
    flock z = c_z and v_z = 0; in a periodic or wrap arena each wrapped coordinate is
    brought into ``[c - h, c + h)`` (h: the half side). The reference applies it after
    every move (the fast kernel's ``settle`` is its twin), and a flock to positions it
    is given.
    """
    p = np.array(positions, dtype=np.float64)
    v = np.array(velocities, dtype=np.float64)
    c = np.asarray(params.arena_center)
    if params.dimensions == 2:
        p[..., 2], v[..., 2] = c[2], 0.0
    if params.arena_shape in ("periodic", "wrap"):
        axes = slice(0, 2) if params.dimensions == 2 else slice(0, 3)
        half = np.asarray(params.half_extents)[axes]
        low = c[axes] - half
        p[..., axes] = low + np.mod(p[..., axes] - low, 2.0 * half)
    return p, v


def settled_positions(positions: np.ndarray, params: Params) -> np.ndarray:
    """:func:`settle` for positions alone: in the plane of a planar flock, inside a wrapping box."""
    return settle(positions, np.zeros_like(positions, dtype=np.float64), params)[0]
