"""Periodic boxes: the box of a periodic arena, the minimum image, and nearest neighbours
found through the faces (plain grid queries on the boids and their images near a face)."""

from __future__ import annotations

import numba
import numpy as np

from flock3d.core import neighbors


def periodic_box(params) -> np.ndarray | None:
    """The ``period`` argument of the measurements for a flock with these parameters.

    Args:
        params: the flock's :class:`flock3d.Params`.

    Returns:
        (3,) float64 side of the box per axis [units] (2R; 0 for z in a planar flock, which
        does not wrap), or None when the arena is not periodic.
    """
    if params.arena_shape != "periodic":
        return None
    side = 2.0 * params.arena_radius
    return np.array([side, side, side if params.dimensions == 3 else 0.0])


def period_of(period) -> np.ndarray | None:
    """``period`` as (3,) float64, or None when no axis wraps."""
    if period is None:
        return None
    box = np.asarray(period, dtype=np.float64).reshape(3)
    if not np.all(np.isfinite(box) & (box >= 0.0)):
        raise ValueError(f"period must hold three finite sides >= 0 (0: not periodic), got {box}")
    return box if np.any(box > 0.0) else None


def minimum_image(d: np.ndarray, box: np.ndarray | None) -> np.ndarray:
    """Coordinate differences (..., 3) reduced to the nearest image (in place, returned)."""
    if box is not None:
        for a in np.flatnonzero(box > 0.0):
            d[..., a] -= box[a] * np.rint(d[..., a] / box[a])
    return d


def with_images(p: np.ndarray, box: np.ndarray, width: float) -> tuple[np.ndarray, np.ndarray]:
    """Positions wrapped into the box, followed by images of those within ``width`` of a face.

    Any two boids whose minimum-image distance is at most ``width`` (< half the
    side) then have a pair of copies at that plain distance, so the plain grid
    queries of :mod:`flock3d.core.neighbors` see through the faces.

    Returns:
        ``(copies, owner)``: (M, 3) positions, the N originals first, and (M,)
        int64 the boid each copy shows.
    """
    q = p.copy()
    owner = np.arange(len(p))
    for a in np.flatnonzero(box > 0.0):
        side = box[a]
        q[:, a] = np.mod(q[:, a], side)
    for a in np.flatnonzero(box > 0.0):
        side = box[a]
        w = min(width, 0.5 * side)
        low, high = q[:, a] < w, q[:, a] >= side - w
        shifted = []
        for mask, shift in ((low, side), (high, -side)):
            extra = q[mask].copy()
            extra[:, a] += shift
            shifted.append(extra)
        owner = np.concatenate([owner, owner[low], owner[high]])
        q = np.concatenate([q, *shifted])
    return np.ascontiguousarray(q), owner


def _image_width(n: int, box: np.ndarray) -> float:
    """A first guess for the image layer: a few typical spacings."""
    sides = box[box > 0.0]
    return float(3.0 * (np.prod(sides) / max(n, 1)) ** (1.0 / len(sides)))


def nearest_k(p: np.ndarray, k: int, box: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(N, k) indices and distances of the k nearest others, by minimum image when ``box``."""
    if box is None:
        return neighbors.nearest_k(p, k)
    width = _image_width(len(p), box)
    half = 0.5 * box[box > 0.0].min()
    while True:
        copies, owner = with_images(p, box, width)
        idx, dist = neighbors.nearest_k(copies, k)
        idx, dist = idx[: len(p)], dist[: len(p)]
        # Exact once every k-th neighbour lies within the image layer (or the layer is half the box).
        if width >= half or not np.any(dist[:, -1] > width):
            return np.where(idx >= 0, owner[np.maximum(idx, 0)], -1), dist
        width *= 2.0


@numba.njit(cache=True, inline="always")
def nearest_image(dx, dy, dz, box):
    """A coordinate difference reduced to its nearest image; box (3,) sides, 0: that axis is open."""
    if box[0] > 0.0:
        dx -= box[0] * np.rint(dx / box[0])
    if box[1] > 0.0:
        dy -= box[1] * np.rint(dy / box[1])
    if box[2] > 0.0:
        dz -= box[2] * np.rint(dz / box[2])
    return dx, dy, dz
