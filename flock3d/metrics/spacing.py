"""Spacing and groups: nearest-neighbour distances, the mean distance between two boids,
the groups linked within a distance and the order within each."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from flock3d.core import neighbors
from flock3d.core.fields import checked_number
from flock3d.metrics.periodic import minimum_image, nearest_k, period_of, with_images
from flock3d.metrics.values import array3, pair3, unit_rows, whole_number

#: Pairs the per-frame table visits exactly; beyond it the mean pair distance is
#: estimated from that many seeded random pairs (see :func:`mean_pair_distance`).
MAX_PAIRS = 2_000_000


def nearest_neighbour_distances(positions: np.ndarray, period=None) -> np.ndarray:
    """The distance from each boid to its nearest other boid.

    Args:
        positions: (N, 3) positions [units].
        period: (3,) box sides for the minimum image [units] (see :func:`periodic_box`), or None.

    Returns:
        (N,) float64 distances [units]; inf when N < 2.
    """
    return nearest_k(array3(positions), 1, period_of(period))[1][:, 0]


def nearest_search(n: int) -> tuple[Any, tuple]:
    """The compiled search :func:`nearest_neighbour_distances` runs for ``n`` boids (in a
    periodic box, over them and their images), with arguments of the types it passes: what a
    caller may compile or load beforehand (``flock3d run``'s closing summary, beside the steps).

    Returns:
        ``(function, example)``: a numba dispatcher and a tuple of arguments for it.
    """
    return neighbors.nearest_k_search(max(n, 2)), (np.zeros((2, 3)), 1)


class NearestNeighbourStats(NamedTuple):
    """Summary of the nearest-neighbour distances, each NaN when N < 2.

    Attributes:
        mean: the mean distance [units].
        std: their standard deviation [units].
        min: the smallest [units].
        median: the median [units].
        max: the largest [units].
    """

    mean: float
    std: float
    min: float
    median: float
    max: float


def nearest_neighbour_stats(positions: np.ndarray, period=None) -> NearestNeighbourStats:
    """Mean, standard deviation, min, median and max of the nearest-neighbour distances.

    Args:
        positions: (N, 3) positions [units].
        period: (3,) box sides for the minimum image [units], or None.

    Returns:
        A :class:`NearestNeighbourStats`.
    """
    d = nearest_neighbour_distances(positions, period)
    if len(d) < 2:
        return NearestNeighbourStats(*([float("nan")] * 5))
    return NearestNeighbourStats(
        float(d.mean()), float(d.std()), float(d.min()), float(np.median(d)), float(d.max())
    )


def mean_pair_distance(
    positions: np.ndarray, max_pairs: int = MAX_PAIRS, seed: int = 0, period=None
) -> float:
    """Mean distance between two distinct boids.

    Args:
        positions: (N, 3) positions [units].
        max_pairs: up to this many pairs the mean is exact; beyond it, estimated from this
            many random pairs.
        seed: seed of the random pairs (so that an estimate is reproducible).
        period: (3,) box sides for the minimum image [units], or None.

    Returns:
        The mean distance [units]; NaN when N < 2.

    Raises:
        ValueError: ``max_pairs`` is not a whole number >= 1.
    """
    max_pairs = whole_number("max_pairs", max_pairs, 1)
    p = array3(positions)
    n = len(p)
    if n < 2:
        return float("nan")
    if n * (n - 1) // 2 <= max_pairs:
        i, j = np.triu_indices(n, k=1)
    else:
        rng = np.random.default_rng(seed)
        i = rng.integers(0, n, max_pairs)
        j = (i + rng.integers(1, n, max_pairs)) % n  # never equal to i
    return float(np.linalg.norm(minimum_image(p[i] - p[j], period_of(period)), axis=1).mean())


def _merge_labels(labels: np.ndarray, owner: np.ndarray, n: int) -> tuple[int, np.ndarray]:
    """Join the components of image copies with their boids' components; number by lowest boid."""
    root = np.arange(labels.max() + 1 if len(labels) else 0)
    a, b = labels[owner[n:]], labels[n:]
    while True:  # label propagation with pointer jumping: a handful of rounds
        low = np.minimum(root[a], root[b])
        new = root.copy()
        np.minimum.at(new, a, low)
        np.minimum.at(new, b, low)
        new = new[new]
        if np.array_equal(new, root):
            break
        root = new
    merged = root[labels[:n]]
    _, first, inverse = np.unique(merged, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    return len(first), rank[inverse]


def groups(positions: np.ndarray, distance: float, period=None) -> tuple[int, np.ndarray]:
    """Groups: connected components of the graph linking boids within ``distance`` of each other.

    Args:
        positions: (N, 3) positions [units].
        distance: link distance [units] (>= 0, may be inf).
        period: (3,) box sides for the minimum image [units], or None.

    Returns:
        ``(count, labels)`` with labels (N,) int64 in [0, count), numbered in
        order of each group's lowest boid index.

    Raises:
        ValueError: ``distance`` is NaN or negative, or ``positions`` no (N, 3) array.
    """
    distance = checked_number(distance, "distance", 0.0)
    p = array3(positions)
    if len(p) == 0:
        return 0, np.zeros(0, dtype=np.int64)
    if not np.isfinite(distance):
        return 1, np.zeros(len(p), dtype=np.int64)
    box = period_of(period)
    if box is None:
        count, labels = neighbors.components(p, float(distance))
        return int(count), labels
    copies, owner = with_images(p, box, float(distance))
    _, labels = neighbors.components(copies, float(distance))
    return _merge_labels(labels, owner, len(p))


def group_polarization(positions: np.ndarray, velocities: np.ndarray, distance: float, period=None) -> float:
    """Local order: the polarization of each group (see :func:`groups`), weighted by its size.

    Equals ``sum_g |sum_{i in g} v_i/|v_i|| / N``. Unlike :func:`polarization` it
    stays near 1 when several well-ordered flocks fly in different directions.

    Args:
        positions: (N, 3) positions [units].
        velocities: (N, 3) velocities [units/s].
        distance: link distance of the groups [units].
        period: (3,) box sides for the minimum image [units], or None.

    Returns:
        The group polarization in [0, 1]; NaN for an empty flock.
    """
    p, v = pair3(positions, velocities)
    u = unit_rows(v)
    if len(u) == 0:
        return float("nan")
    count, labels = groups(p, distance, period)
    sums = np.zeros((count, 3))
    np.add.at(sums, labels, u)
    return float(np.linalg.norm(sums, axis=1).sum() / len(u))
