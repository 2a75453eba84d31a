"""Size and shape: the flock's largest extent L and its principal axes (thickness, width, length)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from flock3d.metrics.values import array3, measurable


@numba.njit(cache=True)
def _diameter(p):
    """Largest distance between two rows of p (N, 3); 0 for N < 2.

    Boids are visited from the centroid outwards in reverse: a pair cannot be
    farther apart than the sum of their distances to the centroid, so the search
    stops as soon as that bound falls below the best pair found. Exact; for the
    usual compact flock it visits a thin outer shell only.
    """
    n = p.shape[0]
    if n < 2:
        return 0.0
    cx, cy, cz = p[:, 0].mean(), p[:, 1].mean(), p[:, 2].mean()
    r = np.sqrt((p[:, 0] - cx) ** 2 + (p[:, 1] - cy) ** 2 + (p[:, 2] - cz) ** 2)
    order = np.argsort(-r)
    best2 = 0.0
    for a in range(n):
        i = order[a]
        if (r[i] + r[order[0]]) ** 2 <= best2:
            break
        for b in range(a + 1, n):
            j = order[b]
            if (r[i] + r[j]) ** 2 <= best2:
                break
            dx, dy, dz = p[j, 0] - p[i, 0], p[j, 1] - p[i, 1], p[j, 2] - p[i, 2]
            best2 = max(best2, dx * dx + dy * dy + dz * dz)
    return math.sqrt(best2)


def flock_size(positions: np.ndarray) -> float:
    """L: the largest distance between two boids, the flock's linear size of Cavagna et al. (2010).

    Args:
        positions: (N, 3) positions [units].

    Returns:
        L [units]; 0 for N = 1, NaN for an empty flock or positions that cannot be measured
        (NaN, infinite or beyond :data:`MAX_MEASURED`).
    """
    p = array3(positions)
    if len(p) == 0 or not measurable(p):
        return float("nan")
    return float(_diameter(p))


class Shape(NamedTuple):
    """A flock's principal axes, thinnest first (thickness, width, length).

    Attributes:
        extents: (3,) size along each axis (largest minus smallest projection) [units].
        semi_axes: (3,) semi-axes of the uniform solid ellipsoid with the same second
            moments (sqrt(5 lambda) for the covariance eigenvalues lambda) [units].
        axes: (3, 3) unit axes as rows, in the same order (each sign arbitrary).
        centroid: (3,) the mean position [units].
    """

    extents: np.ndarray
    semi_axes: np.ndarray
    axes: np.ndarray
    centroid: np.ndarray


def principal(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Batched principal axes of p (T, N, 3): extents, semi-axes (T, 3), axes (T, 3, 3), centroids."""
    centroid = p.mean(axis=1)
    centred = p - centroid[:, None, :]
    cov = np.einsum("tni,tnj->tij", centred, centred) / p.shape[1]
    values, vectors = np.linalg.eigh(cov)  # ascending: thickness, width, length
    projections = np.einsum("tni,tij->tnj", centred, vectors)
    extents = projections.max(axis=1) - projections.min(axis=1)
    semi = np.sqrt(5.0 * np.clip(values, 0.0, None))
    return extents, semi, np.swapaxes(vectors, 1, 2), centroid


def principal_axes(positions: np.ndarray) -> Shape:
    """Shape of the flock by the principal axes of its positions (thickness : width : length).

    Ballerini et al. (2008) describe starling flocks this way: thin along one axis,
    wider along the next, longest along the third.

    Args:
        positions: (N, 3) positions [units].

    Returns:
        A :class:`Shape`; NaN throughout for an empty flock, or positions that cannot be
        measured (NaN, infinite or beyond :data:`MAX_MEASURED`).
    """
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    if len(p) == 0 or not measurable(p):
        nan = np.full(3, np.nan)
        return Shape(nan, nan.copy(), np.full((3, 3), np.nan), nan.copy())
    extents, semi, axes, centroid = principal(p[None])
    return Shape(extents[0], semi[0], axes[0], centroid[0])
