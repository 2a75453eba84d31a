"""The anisotropy of the nearest neighbours (Ballerini et al. 2008, PNAS 105:1232): gamma(n)
of the n-th nearest neighbour and the topological range n_c where it becomes isotropic."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from flock3d.metrics.periodic import minimum_image, nearest_k, period_of
from flock3d.metrics.shape import principal
from flock3d.metrics.values import finite_mean, measurable, pair3, whole_number

#: Largest neighbour rank of :func:`neighbour_anisotropy` (it finds that many neighbours
#: of every boid).
MAX_NEIGHBOURS = 1_000


def even_directions(dimensions: int, count: int) -> np.ndarray:
    """(count, 3) unit vectors spread evenly over the sphere (Fibonacci) or the circle."""
    k = np.arange(count) + 0.5
    if dimensions == 2:
        a = 2.0 * np.pi * k / count
        return np.stack([np.cos(a), np.sin(a), np.zeros(count)], axis=1)
    z = 1.0 - 2.0 * k / count
    a = np.pi * (1.0 + 5.0**0.5) * k
    rho = np.sqrt(1.0 - z * z)
    return np.stack([rho * np.cos(a), rho * np.sin(a), z], axis=1)


def hull_depth(p: np.ndarray, dimensions: int) -> np.ndarray:
    """(N,) distance from each boid to the border of the flock's convex hull.

    The hull is approximated from outside by its supporting planes in 256
    directions (64 in a plane) and along its principal axes, which are the normals
    of a slab's or a box's faces: ``min_k max_j (p_j - p_i) . n_k``.
    """
    axes = principal(p[None])[2][0] if len(p) else np.eye(3)
    normals = np.concatenate([even_directions(dimensions, 64 if dimensions == 2 else 256), axes, -axes])
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

    Attributes:
        n: (K,) neighbour ranks.
        gamma: (K,) the anisotropy factor (NaN where no boid qualified).
        boids: (K,) how many boids entered each gamma.
        isotropic: the value for an isotropic neighbourhood (1/3, or 1/2 for a planar flock).
        n_c: the topological range (:func:`topological_range`).
        resolved: whether the nearest neighbours' direction W stands above the sampling noise
            (:data:`NOISE_GAP`): in one frame, or in at least half the frames of an average.
            Where it does not, n_c is NaN: no range can be read off noise.
    """

    n: np.ndarray
    gamma: np.ndarray
    boids: np.ndarray
    isotropic: float
    n_c: float
    resolved: bool = True


#: The gap between the two smallest eigenvalues of the nearest neighbours' M, times sqrt(boids),
#: that neighbours found alike in every direction stay below: isotropic clouds of 100 to 4,000
#: points reached at most 1.6 in 3D and 3.0 in a plane (460 clouds each; 99 % of them under 1.5
#: and 2.6). Above it the direction W is measured, not drawn by chance.
NOISE_GAP = {3: 2.0, 2: 3.5}


def topological_range(gamma: np.ndarray, isotropic: float = 1.0 / 3.0, tolerance: float = 0.02) -> float:
    """n_c: the first rank n (1-based) at which gamma(n) has reached the isotropic value.

    Ballerini et al. (2008) read n_c ~ 6.5 off the point where gamma(n), averaged
    over flocks and instants, falls to 1/3. Here gamma(n) within ``tolerance`` of
    the isotropic value counts as reached, from above (starlings: neighbours missing
    along the motion) or from below (neighbours crowding along it), and n_c is
    interpolated linearly between the ranks either side. A single frame's gamma is
    noisy: average gamma over frames first.

    Args:
        gamma: (K,) the anisotropy factor of ranks 1 to K.
        isotropic: gamma of an isotropic neighbourhood: 1/3, or 1/2 for a planar flock.
        tolerance: how close to ``isotropic`` counts as reached.

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
        positions: (N, 3) positions [units].
        velocities: (N, 3) velocities [units/s].
        neighbours: K, the largest rank, 1 to :data:`MAX_NEIGHBOURS`.
        interior: count a boid at rank n only when its n-th neighbour is closer than
            the border of the flock (its convex hull), as Ballerini et al. did to keep
            the border's one-sided neighbourhoods out (Hanisch's correction). In a
            periodic box there is no border and every boid counts.
        period: (3,) box sides for the minimum image [units], or None.
        tolerance: passed to :func:`topological_range` for ``n_c``.

    Returns:
        An :class:`Anisotropy`. A planar flock (all z equal) is measured in its
        plane, where the isotropic value is 1/2. Values that cannot be measured (NaN,
        infinite or beyond :data:`MAX_MEASURED`) give NaN.

    Raises:
        ValueError: ``neighbours`` is not a whole number from 1 to :data:`MAX_NEIGHBOURS`.
    """
    neighbours = whole_number("neighbours", neighbours, 1, MAX_NEIGHBOURS)
    p, v = pair3(positions, velocities)
    n = len(p)
    box = period_of(period)
    ranks = np.arange(1, neighbours + 1)
    usable = measurable(p) and measurable(v)
    dimensions = 2 if n and usable and np.ptp(p[:, 2]) == 0.0 and np.all(v[:, 2] == 0.0) else 3
    isotropic = 1.0 / dimensions
    nan = np.full(neighbours, np.nan)
    motion = v.mean(axis=0) if n and usable else np.zeros(3)
    speed = np.linalg.norm(motion)
    if n <= neighbours or not usable or not speed > 0.0:
        return Anisotropy(ranks, nan, np.zeros(neighbours, dtype=np.int64), isotropic, float("nan"), False)
    idx, dist = nearest_k(p, neighbours, box)
    offsets = minimum_image(p[idx] - p[:, None, :], box)  # (N, K, 3)
    with np.errstate(invalid="ignore", divide="ignore"):
        e = offsets / dist[..., None]
    used = np.isfinite(dist) & (dist > 0.0)
    if interior and box is None:
        used &= dist < hull_depth(p, dimensions)[:, None]
    e = np.where(used[..., None], e, 0.0)[..., :dimensions]
    counts = used.sum(axis=0)
    m = np.einsum("nki,nkj->kij", e, e) / np.maximum(counts, 1)[:, None, None]
    values, vectors = np.linalg.eigh(m)
    w = vectors[:, :, 0]  # (K, d): the eigenvector of the smallest eigenvalue
    gamma = (w @ (motion[:dimensions] / np.linalg.norm(motion[:dimensions]))) ** 2
    gamma = np.where(counts > 0, gamma, np.nan)
    # Where the nearest neighbours are found alike in every direction, as far as this many boids
    # tell, W and gamma with it are the sampling noise's (0 to 1 at random), and no range can be
    # read off them. gamma is kept: averaged over many frames, such noise gives the isotropic value.
    resolved = bool((values[0, 1] - values[0, 0]) * math.sqrt(max(counts[0], 1)) > NOISE_GAP[dimensions])
    n_c = topological_range(gamma, isotropic, tolerance) if resolved else float("nan")
    return Anisotropy(ranks, gamma, counts, isotropic, n_c, resolved)


def anisotropy_table(
    frames: Iterable, *, neighbours: int = 20, period=None, tolerance: float = 0.02
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """:func:`neighbour_anisotropy` of every frame.

    Args:
        frames: states with ``positions``, ``velocities``, ``time`` and ``step_count``
            (a :class:`flock3d.FlockState`, a live flock), consumed lazily.
        neighbours: K, the largest rank, 1 to :data:`MAX_NEIGHBOURS`.
        period: (3,) box sides for the minimum image [units], or None.
        tolerance: passed to :func:`topological_range` for each frame's ``n_c``.

    Returns:
        ``(ranges, curves)``: ``ranges`` has one row per frame (``step``, ``time``,
        ``n_c``); ``curves`` one row per frame and rank (``step``, ``time``, ``n``,
        ``gamma``, ``boids``, and ``resolved``: 1 where the frame's direction W stood above
        the noise, :attr:`Anisotropy.resolved`). Average gamma over frames before reading n_c
        off it (:func:`mean_anisotropy`): one frame's n_c is noisy.

    Raises:
        ValueError: ``neighbours`` is not a whole number from 1 to :data:`MAX_NEIGHBOURS`.
    """
    ranges = {k: [] for k in ("step", "time", "n_c")}
    curves = {k: [] for k in ("step", "time", "n", "gamma", "boids", "resolved")}
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
        curves["resolved"].append(np.full(neighbours, int(a.resolved)))
    ints = ("step", "n", "boids", "resolved")
    return (
        {k: np.array(v, dtype=np.int64 if k in ints else np.float64) for k, v in ranges.items()},
        {
            k: np.concatenate(v).astype(np.int64 if k in ints else np.float64) if v else np.zeros(0)
            for k, v in curves.items()
        },
    )


def mean_anisotropy(
    curves: dict[str, np.ndarray], isotropic: float = 1.0 / 3.0, tolerance: float = 0.02
) -> Anisotropy:
    """gamma(n) of :func:`anisotropy_table` averaged over its frames, and n_c read off the average.

    One frame's gamma is noisy; Ballerini et al. (2008) average over instants before
    reading n_c (:func:`topological_range`). Each rank averages the frames in which it
    was measured (:func:`finite_mean`). n_c is read only where at least half the frames
    resolved the nearest neighbours' direction (their ``resolved``): an average of a few
    frames of noise (a disordered start, an isotropic swarm) departs from the isotropic
    value by chance, and would give a range that is not there.

    Args:
        curves: the second table of :func:`anisotropy_table`: ``n``, ``gamma`` and
            ``boids``, one row per frame and rank, ranks 1 to K in each frame; and
            ``resolved`` if it has it (a table without it counts every frame resolved).
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
    each = curves.get("resolved")
    resolved = (
        each is None
        or 2 * int(np.asarray(each).reshape(-1, ranks)[:, 0].astype(bool).sum()) >= len(n) // ranks
    )
    n_c = topological_range(gamma, isotropic, tolerance) if resolved else float("nan")
    return Anisotropy(np.arange(1, ranks + 1), gamma, boids, isotropic, n_c, resolved)
