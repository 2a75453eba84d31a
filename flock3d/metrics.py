"""Measurements of a flock: order, spacing, groups, shape, correlations and neighbour anisotropy.

All functions take plain arrays, so they work on a live flock
(``polarization(flock.velocities)``) and on recorded frames alike. Positions are
(N, 3) float64 in world units, velocities (N, 3) float64 in units/s.

Periodic arenas: the functions that measure distances between boids take
``period``, the box's side per axis (0 for an axis that does not wrap, see
:func:`periodic_box`), and then use the minimum image: a group that straddles a
face is one group and nearest neighbours are found through the faces. Milling,
the flock's size and its principal axes need a centre and an outline, which a
flock spread through a periodic box has not: milling is measured on the wrapped
coordinates, size and shape are NaN in :func:`summary` and :func:`table`.

The analyses of collective-motion studies:

- :func:`velocity_correlation`, :func:`correlation_length`: the connected
  correlation function C(r) of velocity, direction and speed fluctuations and its
  first zero xi (Cavagna et al. 2010, PNAS 107:11865).
- :func:`neighbour_anisotropy`, :func:`topological_range`: the anisotropy factor
  gamma(n) of the n-th nearest neighbour and the range n_c where it falls to the
  isotropic value (Ballerini et al. 2008, PNAS 105:1232).
- :func:`principal_axes`, :func:`flock_size`: thickness, width and length along the
  principal axes, and the largest distance between two boids.

:func:`table` measures every frame of a recording at once (compiled, parallel over
frames); :func:`correlation_table` and :func:`anisotropy_table` add the analyses.
:func:`finite_mean` averages a column over frames, :func:`mean_anisotropy` averages
gamma(n) over frames before reading n_c off it.

A frame holding a NaN or infinite value, or one larger than :data:`MAX_MEASURED` in
size, cannot be measured (its squared distances would overflow): it measures NaN
throughout, and :func:`table` says how many such frames it met in one
:class:`MeasurementWarning`.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import numba
import numpy as np

from flock3d.core import neighbors
from flock3d.core.neighbors import _find  # the union-find of neighbors.components
from flock3d.core.params import short_repr

__all__ = [
    "polarization",
    "milling",
    "periodic_box",
    "nearest_neighbour_distances",
    "NearestNeighbourStats",
    "nearest_neighbour_stats",
    "mean_pair_distance",
    "groups",
    "group_polarization",
    "flock_size",
    "Shape",
    "principal_axes",
    "Correlation",
    "velocity_correlation",
    "correlation_length",
    "Anisotropy",
    "neighbour_anisotropy",
    "topological_range",
    "summary",
    "species_summary",
    "table",
    "correlation_table",
    "anisotropy_table",
    "finite_mean",
    "mean_anisotropy",
    "COLUMNS",
    "EXTRA_COLUMNS",
    "MAX_PAIRS",
    "MAX_MEASURED",
    "MAX_BINS",
    "MAX_NEIGHBOURS",
    "MeasurementWarning",
]

#: Pairs the per-frame table visits exactly; beyond it the mean pair distance is
#: estimated from that many seeded random pairs (see :func:`mean_pair_distance`).
MAX_PAIRS = 2_000_000

#: The largest size of a coordinate or velocity component that is measured. Measurements
#: square differences of them and sum the squares over a flock: beyond this they overflow
#: float64 (1e308), and a frame would measure inf or 0 by accident, or not converge.
MAX_MEASURED = 1e150
#: Most distance bins of :func:`velocity_correlation` (its sums take 2.5 kB a bin).
MAX_BINS = 10_000
#: Largest neighbour rank of :func:`neighbour_anisotropy` (it finds that many neighbours
#: of every boid).
MAX_NEIGHBOURS = 1_000


class MeasurementWarning(UserWarning):
    """Frames that could not be measured (NaN, infinite or huge values) and measure NaN."""


def _measurable(a: np.ndarray, axis=None):
    """Every value finite and at most :data:`MAX_MEASURED` in size (NaN fails the comparison)."""
    return np.all(np.abs(a) <= MAX_MEASURED, axis=axis)


def _whole_number(name: str, value, low: int, high: int | None = None) -> int:
    """``value`` as an int; ValueError naming ``name`` unless a whole number in [low, high]."""
    if not (isinstance(value, numbers.Integral) and not isinstance(value, bool)) or not (
        low <= value and (high is None or value <= high)
    ):
        within = f"from {low:,} to {high:,}" if high is not None else f">= {low:,}"
        raise ValueError(f"{name} must be a whole number {within} (got {short_repr(value)})")
    return int(value)


def _array3(a) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64).reshape(-1, 3))


def _unit(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; zero rows stay zero (they carry no direction)."""
    v = np.asarray(vectors, dtype=np.float64).reshape(-1, 3)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return np.divide(v, norms, out=np.zeros_like(v), where=norms > 0.0)


# -- order ------------------------------------------------------------------------------


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


# -- periodic boxes ----------------------------------------------------------------------


def periodic_box(params) -> np.ndarray | None:
    """The ``period`` argument for a flock with these :class:`flock3d.Params`.

    Returns:
        (3,) float64 side of the box per axis (2R; 0 for z in a planar flock, which
        does not wrap), or None when the arena is not periodic.
    """
    if params.arena_shape != "periodic":
        return None
    side = 2.0 * params.arena_radius
    return np.array([side, side, side if params.dimensions == 3 else 0.0])


def _period(period) -> np.ndarray | None:
    """``period`` as (3,) float64, or None when no axis wraps."""
    if period is None:
        return None
    box = np.asarray(period, dtype=np.float64).reshape(3)
    if not np.all(np.isfinite(box) & (box >= 0.0)):
        raise ValueError(f"period must hold three finite sides >= 0 (0: not periodic), got {box}")
    return box if np.any(box > 0.0) else None


def _minimum_image(d: np.ndarray, box: np.ndarray | None) -> np.ndarray:
    """Coordinate differences (..., 3) reduced to the nearest image (in place, returned)."""
    if box is not None:
        for a in np.flatnonzero(box > 0.0):
            d[..., a] -= box[a] * np.rint(d[..., a] / box[a])
    return d


def _with_images(p: np.ndarray, box: np.ndarray, width: float) -> tuple[np.ndarray, np.ndarray]:
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


def _nearest_k(p: np.ndarray, k: int, box: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(N, k) indices and distances of the k nearest others, by minimum image when ``box``."""
    if box is None:
        return neighbors.nearest_k(p, k)
    width = _image_width(len(p), box)
    half = 0.5 * box[box > 0.0].min()
    while True:
        copies, owner = _with_images(p, box, width)
        idx, dist = neighbors.nearest_k(copies, k)
        idx, dist = idx[: len(p)], dist[: len(p)]
        # Exact once every k-th neighbour lies within the image layer (or the layer is half the box).
        if width >= half or not np.any(dist[:, -1] > width):
            return np.where(idx >= 0, owner[np.maximum(idx, 0)], -1), dist
        width *= 2.0


# -- spacing and groups ------------------------------------------------------------------


def nearest_neighbour_distances(positions: np.ndarray, period=None) -> np.ndarray:
    """(N,) distance from each boid to its nearest other boid (inf when N < 2).

    Args:
        positions: (N, 3), world units.
        period: (3,) box sides for the minimum image (see :func:`periodic_box`), or None.
    """
    p = _array3(positions)
    box = _period(period)
    if box is None:
        return neighbors.nearest_distances(p)
    return _nearest_k(p, 1, box)[1][:, 0]


class NearestNeighbourStats(NamedTuple):
    """Summary of nearest-neighbour distances (world units); NaN when N < 2."""

    mean: float
    std: float
    min: float
    median: float
    max: float


def nearest_neighbour_stats(positions: np.ndarray, period=None) -> NearestNeighbourStats:
    """Mean, standard deviation, min, median and max of the nearest-neighbour distances."""
    d = nearest_neighbour_distances(positions, period)
    if len(d) < 2:
        return NearestNeighbourStats(*([float("nan")] * 5))
    return NearestNeighbourStats(
        float(d.mean()), float(d.std()), float(d.min()), float(np.median(d)), float(d.max())
    )


def mean_pair_distance(
    positions: np.ndarray, max_pairs: int = MAX_PAIRS, seed: int = 0, period=None
) -> float:
    """Mean distance between two distinct boids (NaN when N < 2).

    Exact up to ``max_pairs`` pairs; beyond that, estimated from that many
    random pairs drawn with ``seed`` (so the result is reproducible).
    """
    max_pairs = _whole_number("max_pairs", max_pairs, 1)
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
    return float(np.linalg.norm(_minimum_image(p[i] - p[j], _period(period)), axis=1).mean())


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
        positions: (N, 3), world units.
        distance: link distance (> 0, may be inf).
        period: (3,) box sides for the minimum image, or None.

    Returns:
        ``(count, labels)`` with labels (N,) int64 in [0, count), numbered in
        order of each group's lowest boid index.
    """
    p = _array3(positions)
    if len(p) == 0:
        return 0, np.zeros(0, dtype=np.int64)
    if not np.isfinite(distance):
        return 1, np.zeros(len(p), dtype=np.int64)
    box = _period(period)
    if box is None:
        count, labels = neighbors.components(p, float(distance))
        return int(count), labels
    copies, owner = _with_images(p, box, float(distance))
    _, labels = neighbors.components(copies, float(distance))
    return _merge_labels(labels, owner, len(p))


def group_polarization(positions: np.ndarray, velocities: np.ndarray, distance: float, period=None) -> float:
    """Local order: the polarization of each group (see :func:`groups`), weighted by its size.

    Equals ``sum_g |sum_{i in g} v_i/|v_i|| / N``. Unlike :func:`polarization` it
    stays near 1 when several well-ordered flocks fly in different directions.
    NaN for an empty flock.
    """
    u = _unit(velocities)
    if len(u) == 0:
        return float("nan")
    count, labels = groups(positions, distance, period)
    sums = np.zeros((count, 3))
    np.add.at(sums, labels, u)
    return float(np.linalg.norm(sums, axis=1).sum() / len(u))


# -- size and shape ----------------------------------------------------------------------


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
    """L: the largest distance between two boids (world units), the flock's linear size
    of Cavagna et al. (2010). 0 for N = 1, NaN for an empty flock or positions that cannot
    be measured (NaN, infinite or beyond :data:`MAX_MEASURED`)."""
    p = _array3(positions)
    if len(p) == 0 or not _measurable(p):
        return float("nan")
    return float(_diameter(p))


class Shape(NamedTuple):
    """A flock's principal axes, thinnest first (thickness, width, length).

    ``extents``: (3,) size along each axis (largest minus smallest projection),
    world units. ``semi_axes``: (3,) semi-axes of the uniform solid ellipsoid with
    the same second moments (sqrt(5 lambda) for the covariance eigenvalues lambda).
    ``axes``: (3, 3) unit axes as rows, in the same order (each sign arbitrary).
    ``centroid``: (3,).
    """

    extents: np.ndarray
    semi_axes: np.ndarray
    axes: np.ndarray
    centroid: np.ndarray


def _principal(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
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
    wider along the next, longest along the third. NaN for an empty flock, or positions
    that cannot be measured (NaN, infinite or beyond :data:`MAX_MEASURED`).
    """
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    if len(p) == 0 or not _measurable(p):
        nan = np.full(3, np.nan)
        return Shape(nan, nan.copy(), np.full((3, 3), np.nan), nan.copy())
    extents, semi, axes, centroid = _principal(p[None])
    return Shape(extents[0], semi[0], axes[0], centroid[0])


# -- velocity correlations (Cavagna et al. 2010) -------------------------------------------

_CHUNKS = 64  # fixed work split: sums are the same whatever the thread count


@numba.njit(cache=True, inline="always")
def _nearest_image(dx, dy, dz, box):
    """A coordinate difference reduced to its nearest image; box (3,) sides, 0: that axis is open."""
    if box[0] > 0.0:
        dx -= box[0] * np.rint(dx / box[0])
    if box[1] > 0.0:
        dy -= box[1] * np.rint(dy / box[1])
    if box[2] > 0.0:
        dz -= box[2] * np.rint(dz / box[2])
    return dx, dy, dz


@numba.njit(cache=True, parallel=True)
def _correlation_sums(p, u, o, s, rows, upper, r_max, bins, box):
    """Per-bin sums over pairs (i, j): count, sum r_ij, sum u_i.u_j, sum o_i.o_j, sum s_i s_j.

    ``rows`` (M,) are the boids i; each pairs with every j > i when ``upper``
    (all pairs once) or with every j != i otherwise (sampled centres).
    """
    n = p.shape[0]
    m = rows.shape[0]
    inv = bins / r_max
    r_max2 = r_max * r_max
    periodic = box[0] > 0.0 or box[1] > 0.0 or box[2] > 0.0
    out = np.zeros((_CHUNKS, bins, 5))
    for c in numba.prange(_CHUNKS):
        h = out[c]
        for a in range(c, m, _CHUNKS):
            i = rows[a]
            px, py, pz = p[i, 0], p[i, 1], p[i, 2]
            ux, uy, uz = u[i, 0], u[i, 1], u[i, 2]
            ox, oy, oz = o[i, 0], o[i, 1], o[i, 2]
            si = s[i]
            for j in range(i + 1 if upper else 0, n):
                if j == i:
                    continue
                dx, dy, dz = p[j, 0] - px, p[j, 1] - py, p[j, 2] - pz
                if periodic:
                    dx, dy, dz = _nearest_image(dx, dy, dz, box)
                d2 = dx * dx + dy * dy + dz * dz
                if d2 >= r_max2:
                    continue
                d = math.sqrt(d2)
                b = min(int(d * inv), bins - 1)
                h[b, 0] += 1.0
                h[b, 1] += d
                h[b, 2] += ux * u[j, 0] + uy * u[j, 1] + uz * u[j, 2]
                h[b, 3] += ox * o[j, 0] + oy * o[j, 1] + oz * o[j, 2]
                h[b, 4] += si * s[j]
    return out.sum(axis=0)


def _without_rotation_and_dilation(p: np.ndarray, f: np.ndarray) -> np.ndarray:
    """f (N, 3) minus the least-squares field ``w x r + k r`` (r from the centroid of p (N, 3))."""
    r = p - p.mean(axis=0)
    a = np.zeros((len(p), 3, 4))
    # w x r written as a matrix acting on w, then the dilation column r.
    a[:, 0, 1], a[:, 0, 2] = r[:, 2], -r[:, 1]
    a[:, 1, 0], a[:, 1, 2] = -r[:, 2], r[:, 0]
    a[:, 2, 0], a[:, 2, 1] = r[:, 1], -r[:, 0]
    a[:, :, 3] = r
    coefficients = np.linalg.lstsq(a.reshape(-1, 4), f.reshape(-1), rcond=None)[0]
    return f - (a.reshape(-1, 4) @ coefficients).reshape(-1, 3)


class Correlation(NamedTuple):
    """The connected correlation functions of one frame (see :func:`velocity_correlation`).

    Per distance bin (B bins of equal width from 0 to ``r_max``): ``r`` (B,) the
    mean distance of the pairs in the bin (NaN if none), ``pairs`` (B,) how many
    pairs were counted, and C(r) (B,) of the ``velocity``, ``orientation`` and
    ``speed`` fluctuations (NaN in an empty bin). ``xi_velocity``,
    ``xi_orientation``, ``xi_speed``: their correlation lengths (first zeros, world
    units). ``size``: the flock's linear size L (NaN in a periodic box).
    ``centres``: boids whose pairs were counted (N when exact).
    """

    r: np.ndarray
    pairs: np.ndarray
    velocity: np.ndarray
    orientation: np.ndarray
    speed: np.ndarray
    xi_velocity: float
    xi_orientation: float
    xi_speed: float
    size: float
    r_max: float
    centres: int


def correlation_length(r: np.ndarray, c: np.ndarray) -> float:
    """xi: the first zero of C(r), by linear interpolation from C(0) = 1.

    Args:
        r: (B,) bin distances, increasing (NaN bins are skipped).
        c: (B,) the correlation function at r.

    Returns:
        The smallest r where C crosses zero, NaN if it stays positive (or C is NaN).
    """
    r0, c0 = 0.0, 1.0
    for rk, ck in zip(np.asarray(r, float), np.asarray(c, float), strict=True):
        if not (np.isfinite(rk) and np.isfinite(ck)):
            continue
        if ck <= 0.0:
            return float(r0 + (rk - r0) * c0 / (c0 - ck))
        r0, c0 = rk, ck
    return float("nan")


def velocity_correlation(
    positions: np.ndarray,
    velocities: np.ndarray,
    *,
    bins: int = 50,
    r_max: float | None = None,
    max_pairs: int = 100_000_000,
    period=None,
    remove_modes: bool = False,
) -> Correlation:
    """Connected velocity correlation functions C(r) and correlation lengths of Cavagna et al. (2010).

    With the fluctuations about the flock's mean, ``u_i = v_i - (1/N) sum_k v_k``
    (velocity), ``o_i = v_i/|v_i| - (1/N) sum_k v_k/|v_k|`` (orientation) and
    ``s_i = |v_i| - (1/N) sum_k |v_k|`` (speed), each kind is

        C(r) = sum_{i != j} f_i . f_j delta(r - r_ij) / (c_0 sum_{i != j} delta(r - r_ij)),
        c_0 = (1/N) sum_i f_i . f_i,

    so that C(0) = 1; delta counts the pairs whose distance falls in the bin of r.
    The fluctuations sum to zero, so C(r) must cross zero; the first crossing is the
    correlation length xi (:func:`correlation_length`). Cavagna et al. found xi
    proportional to the flock's size L in starling flocks (xi ~ 0.35 L): scale-free
    correlations.

    Args:
        positions: (N, 3) world units.
        velocities: (N, 3) units/s.
        bins: distance bins of equal width, 1 to :data:`MAX_BINS`.
        r_max: largest distance binned; default the flock's size L (half the smallest
            periodic side in a periodic box).
        max_pairs: up to this many pairs every pair counts once (exact). Beyond it,
            about ``max_pairs // (N - 1)`` centres, every k-th boid in the order of the
            cells of a grid (so spread evenly through the flock), are paired with every
            other boid: an estimate of each bin's mean over pairs (c_0 and the means
            are always exact). 100,000 boids then take about 1 s on two cores.
        period: (3,) box sides for the minimum image, or None.
        remove_modes: first subtract from the velocity and orientation fluctuations
            the flock's best-fit rotation and uniform dilation about its centroid
            (least squares), so that a turning, contracting or expanding flock's
            overall motion, which is correlated across the whole flock by
            construction, does not pass for the correlation of its members'
            fluctuations (the check Cavagna et al. made). Not in a periodic box.

    Returns:
        A :class:`Correlation`. With fewer than 2 boids, or values that cannot be measured
        (NaN, infinite or beyond :data:`MAX_MEASURED`), everything is NaN; a kind with
        no fluctuation at all (c_0 = 0, e.g. the speed at constant speed) is NaN.

    Raises:
        ValueError: ``bins`` or ``max_pairs`` is not a whole number in its range.
    """
    bins = _whole_number("bins", bins, 1, MAX_BINS)
    max_pairs = _whole_number("max_pairs", max_pairs, 1)
    p, v = _array3(positions), _array3(velocities)
    n = len(p)
    box = _period(period)
    size = float("nan") if box is not None else flock_size(p)
    if r_max is None:
        r_max = 0.5 * float(box[box > 0.0].min()) if box is not None else size
    nan = np.full(bins, np.nan)
    empty = Correlation(nan, np.zeros(bins), nan, nan, nan, *[float("nan")] * 3, size, float(r_max), 0)
    if n < 2 or not (r_max > 0.0 and math.isfinite(r_max)) or not (_measurable(p) and _measurable(v)):
        return empty
    speed = np.linalg.norm(v, axis=1)
    u = v - v.mean(axis=0)
    direction = _unit(v)
    o = direction - direction.mean(axis=0)
    s = speed - speed.mean()
    if remove_modes:
        if box is not None:
            raise ValueError("remove_modes needs a flock with a centre: not in a periodic box")
        u, o = _without_rotation_and_dilation(p, u), _without_rotation_and_dilation(p, o)
    if n * (n - 1) // 2 <= max_pairs:
        half = np.arange((n + 1) // 2)
        # Row i has n - 1 - i partners: pair short rows with long ones to balance the chunks.
        rows = np.stack([half, n - 1 - half], axis=1).ravel()[:n]
        upper, centres = True, n
    else:
        # A systematic sample in cell order spreads the centres evenly through the flock:
        # far less scatter than random centres when the fluctuations vary across it.
        step = math.ceil(n / max(1, max_pairs // (n - 1)))
        extent = float(np.ptp(p, axis=0).max())
        order = neighbors.build_grid(p, max(extent / n ** (1.0 / 3.0), 1e-12)).order
        rows = np.sort(order[step // 2 :: step])
        upper, centres = False, len(rows)
    sums = _correlation_sums(
        p, u, o, s, rows.astype(np.int64), upper, float(r_max), int(bins), np.zeros(3) if box is None else box
    )
    count = sums[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        r = sums[:, 1] / count
        curves = []
        for k, f in ((2, u), (3, o), (4, s)):
            c0 = float(np.sum(f * f) / n)
            curves.append(sums[:, k] / count / c0 if c0 > 0.0 else np.full(bins, np.nan))
    xis = [correlation_length(r, c) for c in curves]
    return Correlation(r, count, *curves, *xis, size, float(r_max), centres)


# -- anisotropy of the nearest neighbours (Ballerini et al. 2008) ---------------------------


def _directions(dimensions: int, count: int) -> np.ndarray:
    """(count, 3) unit vectors spread evenly over the sphere (Fibonacci) or the circle."""
    k = np.arange(count) + 0.5
    if dimensions == 2:
        a = 2.0 * np.pi * k / count
        return np.stack([np.cos(a), np.sin(a), np.zeros(count)], axis=1)
    z = 1.0 - 2.0 * k / count
    a = np.pi * (1.0 + 5.0**0.5) * k
    rho = np.sqrt(1.0 - z * z)
    return np.stack([rho * np.cos(a), rho * np.sin(a), z], axis=1)


def _depth(p: np.ndarray, dimensions: int) -> np.ndarray:
    """(N,) distance from each boid to the border of the flock's convex hull.

    The hull is approximated from outside by its supporting planes in 256
    directions (64 in a plane) and along its principal axes, which are the normals
    of a slab's or a box's faces: ``min_k max_j (p_j - p_i) . n_k``.
    """
    axes = _principal(p[None])[2][0] if len(p) else np.eye(3)
    normals = np.concatenate([_directions(dimensions, 64 if dimensions == 2 else 256), axes, -axes])
    if dimensions == 2:
        normals = normals[np.abs(normals[:, 2]) < 0.5]
    support = np.full(len(normals), -np.inf)
    for start in range(0, len(p), 8192):  # (chunk, 256) at a time
        support = np.maximum(support, (p[start : start + 8192] @ normals.T).max(axis=0))
    depth = np.empty(len(p))
    for start in range(0, len(p), 8192):
        depth[start : start + 8192] = (support - p[start : start + 8192] @ normals.T).min(axis=1)
    return depth


class Anisotropy(NamedTuple):
    """The anisotropy factor of the n-th nearest neighbour, n = 1 ... K (see :func:`neighbour_anisotropy`).

    ``n`` (K,) neighbour ranks, ``gamma`` (K,) the anisotropy factor (NaN where no
    boid qualified), ``boids`` (K,) how many boids entered each gamma,
    ``isotropic`` the value for an isotropic neighbourhood (1/3, or 1/2 for a
    planar flock), ``n_c`` the topological range (:func:`topological_range`).
    """

    n: np.ndarray
    gamma: np.ndarray
    boids: np.ndarray
    isotropic: float
    n_c: float


def topological_range(gamma: np.ndarray, isotropic: float = 1.0 / 3.0, tolerance: float = 0.02) -> float:
    """n_c: the first rank n (1-based) at which gamma(n) has reached the isotropic value.

    Ballerini et al. (2008) read n_c ~ 6.5 off the point where gamma(n), averaged
    over flocks and instants, falls to 1/3. Here gamma(n) within ``tolerance`` of
    the isotropic value counts as reached, from above (starlings: neighbours missing
    along the motion) or from below (neighbours crowding along it), and n_c is
    interpolated linearly between the ranks either side. A single frame's gamma is
    noisy: average gamma over frames first.

    Returns:
        n_c, or NaN when gamma never gets that close, or is already there at n = 1.
    """
    g = np.asarray(gamma, dtype=np.float64) - isotropic
    if len(g) == 0 or not np.isfinite(g[0]) or abs(g[0]) <= tolerance:
        return float("nan")
    sign = 1.0 if g[0] > 0.0 else -1.0
    g = sign * g  # now falling towards 0 from above
    for k in range(1, len(g)):
        if not np.isfinite(g[k]):
            return float("nan")
        if g[k] <= tolerance:
            return float(k + (g[k - 1] - tolerance) / (g[k - 1] - g[k]))
    return float("nan")


def neighbour_anisotropy(
    positions: np.ndarray,
    velocities: np.ndarray,
    neighbours: int = 20,
    *,
    interior: bool = True,
    period=None,
    tolerance: float = 0.02,
) -> Anisotropy:
    """The anisotropy factor gamma(n) of the n-th nearest neighbour (Ballerini et al. 2008).

    For each rank n, the unit vectors u_i from each boid i to its n-th nearest
    neighbour give the matrix ``M = (1/N) sum_i u_i u_i^T``; its eigenvector W of
    the smallest eigenvalue is the direction in which that neighbour is least
    likely to be found. ``gamma(n) = (W . V)^2`` with V the flock's direction of
    motion (the unit mean velocity). In starlings the nearest neighbours are
    missing along the direction of motion (gamma near 1 for n = 1) and gamma(n)
    falls to the isotropic 1/3 at n_c ~ 6.5; Ballerini et al. read this as birds
    interacting with a fixed number of neighbours, whatever their distance.

    Args:
        positions: (N, 3) world units.
        velocities: (N, 3) units/s.
        neighbours: K, the largest rank, 1 to :data:`MAX_NEIGHBOURS`.
        interior: count a boid at rank n only when its n-th neighbour is closer than
            the border of the flock (its convex hull), as Ballerini et al. did to keep
            the border's one-sided neighbourhoods out (Hanisch's correction). In a
            periodic box there is no border and every boid counts.
        period: (3,) box sides for the minimum image, or None.
        tolerance: passed to :func:`topological_range` for ``n_c``.

    Returns:
        An :class:`Anisotropy`. A planar flock (all z equal) is measured in its
        plane, where the isotropic value is 1/2. Values that cannot be measured (NaN,
        infinite or beyond :data:`MAX_MEASURED`) give NaN.

    Raises:
        ValueError: ``neighbours`` is not a whole number from 1 to :data:`MAX_NEIGHBOURS`.
    """
    neighbours = _whole_number("neighbours", neighbours, 1, MAX_NEIGHBOURS)
    p, v = _array3(positions), _array3(velocities)
    n = len(p)
    box = _period(period)
    ranks = np.arange(1, neighbours + 1)
    measurable = _measurable(p) and _measurable(v)
    dimensions = 2 if n and measurable and np.ptp(p[:, 2]) == 0.0 and np.all(v[:, 2] == 0.0) else 3
    isotropic = 1.0 / dimensions
    nan = np.full(neighbours, np.nan)
    motion = v.mean(axis=0) if n and measurable else np.zeros(3)
    speed = np.linalg.norm(motion)
    if n <= neighbours or not measurable or not speed > 0.0:
        return Anisotropy(ranks, nan, np.zeros(neighbours, dtype=np.int64), isotropic, float("nan"))
    idx, dist = _nearest_k(p, neighbours, box)
    offsets = _minimum_image(p[idx] - p[:, None, :], box)  # (N, K, 3)
    with np.errstate(invalid="ignore", divide="ignore"):
        e = offsets / dist[..., None]
    used = np.isfinite(dist) & (dist > 0.0)
    if interior and box is None:
        used &= dist < _depth(p, dimensions)[:, None]
    e = np.where(used[..., None], e, 0.0)[..., :dimensions]
    counts = used.sum(axis=0)
    m = np.einsum("nki,nkj->kij", e, e) / np.maximum(counts, 1)[:, None, None]
    _, vectors = np.linalg.eigh(m)
    w = vectors[:, :, 0]  # (K, d): the eigenvector of the smallest eigenvalue
    gamma = (w @ (motion[:dimensions] / np.linalg.norm(motion[:dimensions]))) ** 2
    gamma = np.where(counts > 0, gamma, np.nan)
    return Anisotropy(ranks, gamma, counts, isotropic, topological_range(gamma, isotropic, tolerance))


# -- per-frame tables --------------------------------------------------------------------

#: Columns of :func:`table`, after ``step`` and ``time``, with what they mean.
COLUMNS = {
    "polarization": "polarization P (1 = all parallel)",
    "milling": "milling M (1 = perfect torus)",
    "group_polarization": "polarization within groups, size-weighted",
    "mean_distance": "mean distance between two boids",
    "nn_mean": "mean nearest-neighbour distance",
    "nn_min": "smallest nearest-neighbour distance",
    "groups": "groups (connected at perception distance)",
    "size": "L, the largest distance between two boids",
    "thickness": "shortest principal axis (equivalent ellipsoid, full length)",
    "width": "middle principal axis (equivalent ellipsoid, full length)",
    "length": "longest principal axis (equivalent ellipsoid, full length)",
}
#: The columns ``flock3d metrics --correlation`` and ``--anisotropy`` add, with what they mean.
EXTRA_COLUMNS = {
    "xi_velocity": "correlation length of the velocity fluctuations (first zero of C(r))",
    "xi_orientation": "correlation length of the direction fluctuations",
    "xi_speed": "correlation length of the speed fluctuations",
    "n_c": "topological range: the neighbour rank where the anisotropy falls to isotropic",
}
_PAIR_COLUMNS = list(COLUMNS)[:8]  # measured by the pair pass; the shape follows


@numba.njit(cache=True, parallel=True)
def _pair_pass(positions, velocities, link2, box, out):
    """The pair-based columns of :data:`COLUMNS` for T small frames, in one pass over all pairs each.

    positions, velocities: (T, N, 3), measurable (see :func:`_measure`); link2: squared
    group link distance; box: (3,) periodic sides (0: open); out: (T, 8) filled with
    polarization, milling, group_polarization, mean_distance, nn_mean, nn_min, groups,
    size (NaN in a periodic box).
    """
    t_count, n = positions.shape[0], positions.shape[1]
    periodic = box[0] > 0.0 or box[1] > 0.0 or box[2] > 0.0
    for t in numba.prange(t_count):
        p, v = positions[t], velocities[t]
        if n == 0:
            out[t, :] = np.nan
            out[t, 6] = 0.0  # no boids: no groups
            continue
        unit = np.zeros((n, 3))
        cx = cy = cz = 0.0
        for i in range(n):
            s = math.sqrt(v[i, 0] ** 2 + v[i, 1] ** 2 + v[i, 2] ** 2)
            if s > 0.0:
                unit[i, 0], unit[i, 1], unit[i, 2] = v[i, 0] / s, v[i, 1] / s, v[i, 2] / s
            cx += p[i, 0]
            cy += p[i, 1]
            cz += p[i, 2]
        cx, cy, cz = cx / n, cy / n, cz / n
        sx = sy = sz = 0.0
        mx = my = mz = 0.0
        for i in range(n):
            sx += unit[i, 0]
            sy += unit[i, 1]
            sz += unit[i, 2]
            rx, ry, rz = p[i, 0] - cx, p[i, 1] - cy, p[i, 2] - cz
            r = math.sqrt(rx * rx + ry * ry + rz * rz)
            if r > 0.0:
                rx, ry, rz = rx / r, ry / r, rz / r
                mx += ry * unit[i, 2] - rz * unit[i, 1]
                my += rz * unit[i, 0] - rx * unit[i, 2]
                mz += rx * unit[i, 1] - ry * unit[i, 0]
        out[t, 0] = math.sqrt(sx * sx + sy * sy + sz * sz) / n
        out[t, 1] = math.sqrt(mx * mx + my * my + mz * mz) / n
        x, y, z = p[:, 0].copy(), p[:, 1].copy(), p[:, 2].copy()
        d2 = np.empty(n)
        parent = np.arange(n)
        total = far2 = nn_sum = 0.0
        nn_min2 = np.inf
        for i in range(n):
            # A row of squared distances first: these loops vectorise, a scatter over pairs did not.
            if periodic:
                for j in range(n):
                    dx, dy, dz = _nearest_image(x[j] - x[i], y[j] - y[i], z[j] - z[i], box)
                    d2[j] = dx * dx + dy * dy + dz * dz
            else:
                for j in range(n):
                    dx, dy, dz = x[j] - x[i], y[j] - y[i], z[j] - z[i]
                    d2[j] = dx * dx + dy * dy + dz * dz
            d2[i] = np.inf
            nearest2 = np.inf
            for j in range(n):
                nearest2 = min(nearest2, d2[j])
            nn_sum += math.sqrt(nearest2)
            nn_min2 = min(nn_min2, nearest2)
            row = 0.0
            for j in range(i + 1, n):
                row += math.sqrt(d2[j])
                far2 = max(far2, d2[j])
            total += row
            for j in range(i + 1, n):
                if d2[j] <= link2:
                    a, b = _find(parent, i), _find(parent, j)
                    if a != b:
                        parent[max(a, b)] = min(a, b)
        sums = np.zeros((n, 3))
        count = 0
        for i in range(n):
            root = _find(parent, i)
            if root == i:
                count += 1
            sums[root, 0] += unit[i, 0]
            sums[root, 1] += unit[i, 1]
            sums[root, 2] += unit[i, 2]
        local = 0.0
        for i in range(n):
            local += math.sqrt(sums[i, 0] ** 2 + sums[i, 1] ** 2 + sums[i, 2] ** 2)
        out[t, 2] = local / n
        out[t, 6] = count
        if n < 2:
            out[t, 3] = out[t, 4] = out[t, 5] = np.nan
            out[t, 7] = np.nan if periodic else 0.0
            continue
        out[t, 3] = total / (n * (n - 1) // 2)
        out[t, 4] = nn_sum / n
        out[t, 5] = math.sqrt(nn_min2)
        out[t, 7] = np.nan if periodic else math.sqrt(far2)


def _large_frame_row(p: np.ndarray, v: np.ndarray, group_distance: float, box) -> list[float]:
    """The pair-based columns for one (measurable) frame too large for a pass over all pairs."""
    nn = nearest_neighbour_stats(p, box)
    return [
        polarization(v),
        milling(p, v),
        group_polarization(p, v, group_distance, box),
        mean_pair_distance(p, period=box),
        nn.mean,
        nn.min,
        float(groups(p, group_distance, box)[0]),
        float("nan") if box is not None else flock_size(p),
    ]


def _measure(
    positions: np.ndarray, velocities: np.ndarray, group_distance: float, box
) -> tuple[np.ndarray, np.ndarray]:
    """Measurements of T frames of the same N boids, (T, N, 3) each.

    Returns:
        ``(rows, measured)``: (T, len(COLUMNS)) measurements, and (T,) bool whether each
        frame could be measured; the others (a NaN, infinite or huge value) are NaN throughout.
    """
    t_count, n = positions.shape[:2]
    measured = _measurable(positions, axis=(1, 2)) & _measurable(velocities, axis=(1, 2))
    out = np.full((t_count, len(COLUMNS)), np.nan)
    p, v = positions[measured], velocities[measured]
    rows = np.empty((len(p), len(COLUMNS)))
    if n * (n - 1) // 2 <= MAX_PAIRS:
        link2 = float(group_distance) ** 2
        _pair_pass(p, v, link2, np.zeros(3) if box is None else box, rows[:, :8])
    else:
        for t in range(len(p)):
            rows[t, :8] = _large_frame_row(p[t], v[t], group_distance, box)
    rows[:, 8:] = np.nan
    if box is None and n > 0 and len(p):
        rows[:, 8:] = 2.0 * _principal(p)[1]  # robust to a straggler, unlike extents
    out[measured] = rows
    return out, measured


def summary(
    positions: np.ndarray, velocities: np.ndarray, group_distance: float, period=None
) -> dict[str, float]:
    """The standard per-frame measurements (:data:`COLUMNS`), as one flat dictionary.

    ``group_distance`` links boids into groups; use ``Params.perception_distance``.
    ``period``: (3,) box sides for the minimum image (:func:`periodic_box`), or None.
    A frame holding a NaN or infinite value, or one beyond :data:`MAX_MEASURED` in size,
    measures NaN throughout.
    """
    p, v = _array3(positions), _array3(velocities)
    row = _measure(p[None], v[None], group_distance, _period(period))[0][0]
    return {name: float(x) for name, x in zip(COLUMNS, row, strict=True)}


def species_summary(
    positions: np.ndarray, velocities: np.ndarray, species: np.ndarray, group_distance: float, period=None
) -> list[dict[str, float]]:
    """:func:`summary` of each species of a mixed flock on its own, in species order.

    Args:
        positions, velocities: (N, 3) the whole flock.
        species: (N,) int, each boid's species (``Flock.species``).
        group_distance, period: as for :func:`summary`.

    Returns:
        One dictionary per species 0 .. max(species), of :data:`COLUMNS`: the polarization of
        one species, its groups, its nearest-neighbour distances among its own kind.
    """
    p, v = _array3(positions), _array3(velocities)
    kinds = np.asarray(species).ravel()
    if len(kinds) != len(p):
        raise ValueError(f"species must give one species per boid: {len(kinds)} for {len(p)} boids")
    count = int(kinds.max()) + 1 if len(kinds) else 0
    return [summary(p[kinds == k], v[kinds == k], group_distance, period) for k in range(count)]


def _blocks(frames: Iterable) -> Iterator[list]:
    """Consecutive frames in lists of about 4 MiB of positions (at most 256 frames)."""
    block, size = [], 1
    for state in frames:
        if not block:
            size = int(np.clip((1 << 22) // max(1, 24 * len(state.positions)), 1, 256))
        block.append(state)
        if len(block) >= size:
            yield block
            block = []
    if block:
        yield block


def table(frames: Iterable, group_distance: float, period=None) -> dict[str, np.ndarray]:
    """:func:`summary` of every frame, as columns: ``step``, ``time`` and :data:`COLUMNS`.

    Frames of up to 2,000 boids are measured a block at a time in one compiled pass
    over all pairs per frame, in parallel over frames (10,000 frames of 500 boids in
    a few seconds); larger frames use the cell grid, one at a time. Frames that cannot
    be measured (a NaN, infinite or huge value, see :data:`MAX_MEASURED`) measure NaN,
    and one :class:`MeasurementWarning` says how many there were and the first one's step.

    Args:
        frames: states with ``positions``, ``velocities``, ``time`` and
            ``step_count`` (a :class:`flock3d.FlockState`, a live flock), all of
            the same number of boids. They are consumed lazily.
        group_distance: link distance of the groups.
        period: (3,) box sides for the minimum image, or None.
    """
    box = _period(period)
    steps, times, rows, measured = [], [], [], []
    n = None
    for block in _blocks(frames):
        n = len(block[0].positions) if n is None else n
        if any(len(s.positions) != n for s in block):
            raise ValueError("every frame of a table must hold the same number of boids")
        positions = np.stack([np.asarray(s.positions, dtype=np.float64) for s in block])
        velocities = np.stack([np.asarray(s.velocities, dtype=np.float64) for s in block])
        block_rows, block_measured = _measure(positions, velocities, group_distance, box)
        rows.append(block_rows)
        measured.append(block_measured)
        steps += [s.step_count for s in block]
        times += [s.time for s in block]
    rows = np.concatenate(rows) if rows else np.empty((0, len(COLUMNS)))
    columns = {"step": np.array(steps, dtype=np.int64), "time": np.array(times, dtype=np.float64)}
    columns.update({name: rows[:, k] for k, name in enumerate(COLUMNS)})
    unmeasured = ~np.concatenate(measured) if measured else np.zeros(0, bool)
    if unmeasured.any():
        warnings.warn(
            f"{unmeasured.sum():,} of {len(unmeasured):,} frames hold NaN, infinite or huge "
            f"(beyond {MAX_MEASURED:g}) positions or velocities (the first at step "
            f"{columns['step'][np.argmax(unmeasured)]:,}); their measurements are NaN",
            MeasurementWarning,
            stacklevel=2,
        )
    return columns


def correlation_table(
    frames: Iterable, *, bins: int = 50, period=None, max_pairs: int = 100_000_000
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """:func:`velocity_correlation` of every frame.

    Returns:
        ``(lengths, curves)``: ``lengths`` has one row per frame (``step``, ``time``,
        ``size`` L, ``xi_velocity``, ``xi_orientation``, ``xi_speed``); ``curves`` one
        row per frame and bin (``step``, ``time``, ``bin``, ``r``, ``pairs``,
        ``velocity``, ``orientation``, ``speed``). Each frame is binned from 0 to its
        own L (half the box in a periodic one).
    """
    lengths = {k: [] for k in ("step", "time", "size", "xi_velocity", "xi_orientation", "xi_speed")}
    curves = {k: [] for k in ("step", "time", "bin", "r", "pairs", "velocity", "orientation", "speed")}
    for state in frames:
        c = velocity_correlation(state.positions, state.velocities, bins=bins, period=period,
                                 max_pairs=max_pairs)  # fmt: skip
        for key, value in zip(lengths, (state.step_count, state.time, c.size, c.xi_velocity,
                                        c.xi_orientation, c.xi_speed), strict=True):  # fmt: skip
            lengths[key].append(value)
        curves["step"].append(np.full(bins, state.step_count))
        curves["time"].append(np.full(bins, state.time))
        curves["bin"].append(np.arange(bins))
        for key in ("r", "pairs", "velocity", "orientation", "speed"):
            curves[key].append(getattr(c, key))
    ints = ("step", "bin")
    return (
        {k: np.array(v, dtype=np.int64 if k in ints else np.float64) for k, v in lengths.items()},
        {
            k: np.concatenate(v).astype(np.int64 if k in ints else np.float64) if v else np.zeros(0)
            for k, v in curves.items()
        },
    )


def anisotropy_table(
    frames: Iterable, *, neighbours: int = 20, period=None, tolerance: float = 0.02
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """:func:`neighbour_anisotropy` of every frame.

    Returns:
        ``(ranges, curves)``: ``ranges`` has one row per frame (``step``, ``time``,
        ``n_c``); ``curves`` one row per frame and rank (``step``, ``time``, ``n``,
        ``gamma``, ``boids``). Average gamma over frames before reading n_c off it
        (:func:`topological_range`): one frame's n_c is noisy.
    """
    ranges = {k: [] for k in ("step", "time", "n_c")}
    curves = {k: [] for k in ("step", "time", "n", "gamma", "boids")}
    for state in frames:
        a = neighbour_anisotropy(state.positions, state.velocities, neighbours, period=period,
                                 tolerance=tolerance)  # fmt: skip
        ranges["step"].append(state.step_count)
        ranges["time"].append(state.time)
        ranges["n_c"].append(a.n_c)
        curves["step"].append(np.full(neighbours, state.step_count))
        curves["time"].append(np.full(neighbours, state.time))
        curves["n"].append(a.n)
        curves["gamma"].append(a.gamma)
        curves["boids"].append(a.boids)
    ints = ("step", "n", "boids")
    return (
        {k: np.array(v, dtype=np.int64 if k in ints else np.float64) for k, v in ranges.items()},
        {
            k: np.concatenate(v).astype(np.int64 if k in ints else np.float64) if v else np.zeros(0)
            for k, v in curves.items()
        },
    )


# -- over frames -------------------------------------------------------------------------


def finite_mean(values, axis: int | None = None):
    """The mean of the finite entries of ``values``, NaN where there are none.

    A measurement is NaN where it is undefined (fewer than two boids, a frame that could
    not be measured, a flock's size in a periodic box): an average over frames leaves
    those frames out instead of turning NaN itself.

    Args:
        values: an array of any shape, e.g. a column of :func:`table` (F,) or gamma
            of :func:`anisotropy_table` as (F, K).
        axis: the axis averaged over; None: all entries.

    Returns:
        A float when ``axis`` is None, else an array without that axis.
    """
    a = np.asarray(values, dtype=np.float64)
    known = np.isfinite(a)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(known, a, 0.0).sum(axis=axis) / known.sum(axis=axis)
    return float(mean) if axis is None else mean


def mean_anisotropy(
    curves: dict[str, np.ndarray], isotropic: float = 1.0 / 3.0, tolerance: float = 0.02
) -> Anisotropy:
    """gamma(n) of :func:`anisotropy_table` averaged over its frames, and n_c read off the average.

    One frame's gamma is noisy; Ballerini et al. (2008) average over instants before
    reading n_c (:func:`topological_range`). Each rank averages the frames in which it
    was measured (:func:`finite_mean`).

    Args:
        curves: the second table of :func:`anisotropy_table`: ``n``, ``gamma`` and
            ``boids``, one row per frame and rank, ranks 1 to K in each frame.
        isotropic: gamma of an isotropic neighbourhood: 1/3, or 1/2 for a planar flock
            (``1 / params.dimensions``).
        tolerance: passed to :func:`topological_range`.

    Returns:
        An :class:`Anisotropy` of K ranks: ``gamma`` the average (NaN for a rank no frame
        measured), ``boids`` summed over frames. No frames give K = 0 and n_c NaN.

    Raises:
        ValueError: the rows are not whole frames of ranks 1 to K.
    """
    n = np.asarray(curves["n"], dtype=np.int64)
    ranks = int(n.max()) if len(n) else 0
    if ranks == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Anisotropy(empty, np.zeros(0), empty, isotropic, float("nan"))
    if len(n) % ranks or not np.array_equal(
        n.reshape(-1, ranks), np.tile(np.arange(1, ranks + 1), (len(n) // ranks, 1))
    ):
        raise ValueError(f"curves must hold ranks 1 to {ranks} for each frame (got {len(n)} rows of n)")
    gamma = finite_mean(np.asarray(curves["gamma"], dtype=np.float64).reshape(-1, ranks), axis=0)
    boids = np.asarray(curves["boids"], dtype=np.int64).reshape(-1, ranks).sum(axis=0)
    return Anisotropy(
        np.arange(1, ranks + 1), gamma, boids, isotropic, topological_range(gamma, isotropic, tolerance)
    )
