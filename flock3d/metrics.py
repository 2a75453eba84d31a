"""Order parameters and spacing statistics of a flock.

All functions take plain arrays, so they work on a live flock
(``polarization(flock.velocities)``) and on recorded frames alike.

Distances are plain Euclidean ones: in a periodic arena a group that straddles a
face counts as two groups, and milling and the spacing statistics measure across
the box rather than through its faces. Polarization needs no positions and is exact.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from flock3d.core import neighbors

__all__ = [
    "polarization",
    "milling",
    "nearest_neighbour_distances",
    "NearestNeighbourStats",
    "nearest_neighbour_stats",
    "mean_pair_distance",
    "groups",
    "group_polarization",
    "summary",
    "table",
    "COLUMNS",
]


def _unit(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; zero rows stay zero (they carry no direction)."""
    v = np.asarray(vectors, dtype=np.float64).reshape(-1, 3)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return np.divide(v, norms, out=np.zeros_like(v), where=norms > 0.0)


def polarization(velocities: np.ndarray) -> float:
    """Polarization P = |sum_i v_i / |v_i|| / N: 1 when all boids fly parallel, ~0 when disordered.

    Args:
        velocities: (N, 3). A boid at rest counts in N but adds no direction.

    Returns:
        P in [0, 1]; NaN for an empty flock.
    """
    u = _unit(velocities)
    if len(u) == 0:
        return float("nan")
    return float(np.linalg.norm(u.sum(axis=0)) / len(u))


def milling(positions: np.ndarray, velocities: np.ndarray) -> float:
    """Milling M = |sum_i (r_i/|r_i|) x (v_i/|v_i|)| / N with r_i from the flock's centroid.

    The normalised angular momentum: 1 for a perfect rotating torus (mill),
    ~0 for a polarized or disordered flock.

    Args:
        positions: (N, 3).
        velocities: (N, 3).

    Returns:
        M in [0, 1]; NaN for an empty flock.
    """
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    if len(p) == 0:
        return float("nan")
    r = _unit(p - p.mean(axis=0))
    return float(np.linalg.norm(np.cross(r, _unit(velocities)).sum(axis=0)) / len(p))


def nearest_neighbour_distances(positions: np.ndarray) -> np.ndarray:
    """(N,) distance from each boid to its nearest other boid (inf when N < 2)."""
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    return neighbors.nearest_distances(np.ascontiguousarray(p))


class NearestNeighbourStats(NamedTuple):
    """Summary of nearest-neighbour distances (world units); NaN when N < 2."""

    mean: float
    std: float
    min: float
    median: float
    max: float


def nearest_neighbour_stats(positions: np.ndarray) -> NearestNeighbourStats:
    """Mean, standard deviation, min, median and max of the nearest-neighbour distances."""
    d = nearest_neighbour_distances(positions)
    if len(d) < 2:
        return NearestNeighbourStats(*([float("nan")] * 5))
    return NearestNeighbourStats(
        float(d.mean()), float(d.std()), float(d.min()), float(np.median(d)), float(d.max())
    )


def mean_pair_distance(positions: np.ndarray, max_pairs: int = 2_000_000, seed: int = 0) -> float:
    """Mean distance between two distinct boids (NaN when N < 2).

    Exact up to ``max_pairs`` pairs; beyond that, estimated from that many
    random pairs drawn with ``seed`` (so the result is reproducible).
    """
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    n = len(p)
    if n < 2:
        return float("nan")
    if n * (n - 1) // 2 <= max_pairs:
        i, j = np.triu_indices(n, k=1)
    else:
        rng = np.random.default_rng(seed)
        i = rng.integers(0, n, max_pairs)
        j = (i + rng.integers(1, n, max_pairs)) % n  # never equal to i
    return float(np.linalg.norm(p[i] - p[j], axis=1).mean())


def groups(positions: np.ndarray, distance: float) -> tuple[int, np.ndarray]:
    """Groups: connected components of the graph linking boids within ``distance`` of each other.

    Returns:
        ``(count, labels)`` with labels (N,) int64 in [0, count), numbered in
        order of each group's lowest boid index.
    """
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    if len(p) == 0:
        return 0, np.zeros(0, dtype=np.int64)
    if not np.isfinite(distance):
        return 1, np.zeros(len(p), dtype=np.int64)
    count, labels = neighbors.components(np.ascontiguousarray(p), float(distance))
    return int(count), labels


def group_polarization(positions: np.ndarray, velocities: np.ndarray, distance: float) -> float:
    """Local order: the polarization of each group (see :func:`groups`), weighted by its size.

    Equals ``sum_g |sum_{i in g} v_i/|v_i|| / N``. Unlike :func:`polarization` it
    stays near 1 when several well-ordered flocks fly in different directions.
    NaN for an empty flock.
    """
    u = _unit(velocities)
    if len(u) == 0:
        return float("nan")
    count, labels = groups(positions, distance)
    sums = np.zeros((count, 3))
    np.add.at(sums, labels, u)
    return float(np.linalg.norm(sums, axis=1).sum() / len(u))


#: Columns of :func:`table`, after ``step`` and ``time``, with what they mean.
COLUMNS = {
    "polarization": "polarization P (1 = all parallel)",
    "milling": "milling M (1 = perfect torus)",
    "group_polarization": "polarization within groups, size-weighted",
    "mean_distance": "mean distance between two boids",
    "nn_mean": "mean nearest-neighbour distance",
    "nn_min": "smallest nearest-neighbour distance",
    "groups": "groups (connected at perception distance)",
}


def summary(positions: np.ndarray, velocities: np.ndarray, group_distance: float) -> dict[str, float]:
    """The standard per-frame measurements (:data:`COLUMNS`), as one flat dictionary.

    ``group_distance`` links boids into groups; use ``Params.perception_distance``.
    """
    nn = nearest_neighbour_stats(positions)
    return {
        "polarization": polarization(velocities),
        "milling": milling(positions, velocities),
        "group_polarization": group_polarization(positions, velocities, group_distance),
        "mean_distance": mean_pair_distance(positions),
        "nn_mean": nn.mean,
        "nn_min": nn.min,
        "groups": float(groups(positions, group_distance)[0]),
    }


def table(frames: Iterable, group_distance: float) -> dict[str, np.ndarray]:
    """:func:`summary` of every frame, as columns: ``step``, ``time`` and :data:`COLUMNS`.

    Args:
        frames: states with ``positions``, ``velocities``, ``time`` and
            ``step_count`` (a :class:`flock3d.FlockState`, a live flock).
    """
    rows = []
    for state in frames:
        row = {"step": state.step_count, "time": state.time}
        row.update(summary(state.positions, state.velocities, group_distance))
        rows.append(row)
    names = ["step", "time", *COLUMNS]
    return {
        name: np.array([r[name] for r in rows], dtype=np.int64 if name == "step" else np.float64)
        for name in names
    }
