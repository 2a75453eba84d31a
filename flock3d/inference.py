"""Inferring how birds interact from where they fly: the topological maximum-entropy model.

Bialek, Cavagna, Giardina, Mora, Silvestri, Viale and Walczak (2012), "Statistical mechanics
for natural flocks of birds", PNAS 109:4786. Of all the distributions of the flight
directions ``s_i`` (unit vectors) of a snapshot that reproduce the mean alignment of each
bird with its ``n_c`` nearest neighbours, the one that assumes nothing more (the maximum
entropy one) is the Heisenberg model on the topological neighbour graph::

    P({s}) = exp((J / 2) sum_i sum_j n_ij s_i . s_j) / Z(J, n_c)

with ``n_ij = 1`` when j is one of the n_c nearest neighbours of i and 0 otherwise. Its
two numbers, the coupling J and the range n_c, are fitted to a snapshot by maximum
likelihood; the model then predicts, with nothing left to adjust, how order spreads
through the whole flock: the polarization and the correlation function C(r).

**Spin waves.** In a polarized flock each direction is the mean direction S plus a small
deviation ``pi_i`` across it (D = d - 1 components: 2 in space, 1 in a plane),
``s_i = S sqrt(1 - pi_i^2) + pi_i``. To second order in pi,
``s_i . s_j = 1 - |pi_i - pi_j|^2 / 2``, so that::

    (J / 2) sum_ij n_ij s_i . s_j = const - (J / 2) sum_a pi_a^T Lambda pi_a

where ``pi_a`` is the (N,) vector of the a-th component and Lambda the Laplacian of the
symmetrized graph, ``m_ij = (n_ij + n_ji) / 2``, ``Lambda = diag(sum_k m_ik) - m``
(a pair counts 1 when each is among the other's nearest, 1/2 when one is). Each
component is Gaussian with precision ``J Lambda``. Lambda has a zero eigenvalue for each
of the m pieces of the graph (m = 1 for a connected flock): turning a piece as a whole
costs nothing, and the deviations, taken from each piece's mean direction, leave these
modes out. The other N - m eigenvalues lambda_k are positive.

**Likelihood.** With ``C_int = (1 / (N n_c)) sum_ij n_ij s_i . s_j``, the measured
alignment of a bird with its n_c nearest (the energy taken exactly, as the paper does),
the log-likelihood per bird of a snapshot is::

    l(J, n_c) = -(J n_c / 2) (1 - C_int) + (D / (2N)) sum_k log(J lambda_k / (2 pi))
                - (1 / N) sum_p (log A_D + (D / 2) log N_p)

over the non-zero eigenvalues; the last sum, over the pieces p of N_p birds, is the volume
of their free rotations (A_D the area of the sphere of directions, 4 pi in space, 2 pi in
a plane; N_p^(D/2) the Jacobian from a piece's rotation to its birds' deviations). It is
largest at::

    J*(n_c) = D (N - m) / (N n_c (1 - C_int))

(for a connected flock in space, N large: ``1 / J = n_c (1 - C_int) / 2``), where the
model's alignment equals the measured one, and there::

    l*(n_c) = [(D / 2) ((N - m) (log(J* / (2 pi)) - 1) + log det' Lambda)
               - sum_p (log A_D + (D / 2) log N_p)] / N

with ``log det' Lambda`` the sum of the logs of the non-zero eigenvalues. The fitted n_c
maximizes l*, and J is J*(n_c). Several snapshots (frames) are fitted one by one and
averaged, as the paper averages over the snapshots of a flock.

**Computation.** ``log det' Lambda = sum_p log N_p + log det Lambda_r`` (the matrix-tree
theorem), Lambda_r being Lambda less the row and column of one bird of each piece: as
sparse as Lambda and positive definite. Its Cholesky factor stays within the band of a
reverse Cuthill-McKee order (about N^(2/3) wide for a flock in space), so that a range
costs N^(7/3) rather than N^3, on the calling thread (a threaded LAPACK factor of a
small matrix crawls on a loaded machine). The predictions take one dense inverse.

**Predictions.** The model's correlations are ``<pi_i . pi_j> = (D / J) Lambda+_ij``, with
Lambda+ the inverse of Lambda on the deviations (the pseudo-inverse). They give the
polarization, ``|sum_i S_p(i) (1 - <pi_i^2> / 2)| / N`` (``S_p``: the observed mean
direction of bird i's piece, which the model leaves free), and the connected correlation
function C(r) of the direction fluctuations (:func:`flock3d.metrics.velocity_correlation`'s
``orientation``): the mean of ``<ds_i . ds_j>`` over the pairs at distance r, in units of
the measured mean square fluctuation (so the measured C(r) starts near 1 and the
predicted one shows whether the model also gets the size of the fluctuations right).

**Limits.** The spin-wave expansion needs a polarized flock (fluctuations small next to
1), or at least polarized pieces. The paper fixes the directions of the birds on the
flock's border to the observed ones when it predicts C(r); here the border is free. In
moving flocks the fitted n_c is an effective range: Bialek et al. found it about three
times the true one in a self-propelled particle model (21.6 in starlings, for 7.8 true
neighbours), as birds change neighbours while their directions relax; docs/analysis.md
calibrates it on flock3d's models. The matrices are dense: at most :data:`MAX_BOIDS` boids
a snapshot, and the snapshots fitted together are held in memory (numpy, no scipy).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numba
import numpy as np

from flock3d import metrics
from flock3d.core.neighbors import _find  # the union-find of neighbors.components
from flock3d.core.params import short_repr
from flock3d.metrics.periodic import minimum_image, nearest_k, period_of
from flock3d.metrics.values import measurable, pair3, whole_number

__all__ = [
    "MaxentFit",
    "maxent",
    "maxent_frames",
    "spread_frames",
    "MAX_BOIDS",
    "N_C_MAX",
    "FRAMES",
    "MAX_FLUCTUATION",
]

#: Largest snapshot fitted: each range n_c factorizes a dense N x N matrix (200 MB at 5,000).
MAX_BOIDS = 5000
#: The ranges tried unless told: 1 to this (fewer in a flock of this many boids or fewer).
N_C_MAX = 40
#: Snapshots of a recording fitted unless told (:func:`spread_frames`).
FRAMES = 10
#: The largest mean square direction fluctuation (about each piece's mean direction) the
#: spin-wave fit is trusted at: 0.2 is a typical deviation of about 26 degrees, where
#: 1 - cos is no longer small; the torus scene's mill measures 0.96.
MAX_FLUCTUATION = 0.2


def spread_frames(n_frames: int, count: int = FRAMES) -> list[int]:
    """Indices of up to ``count`` frames spread evenly over the second half of ``n_frames``:
    snapshots far apart in time (nearly independent), after the start's transient."""
    half = n_frames // 2
    if n_frames == 0:
        return []
    return sorted({round(half + k * (n_frames - 1 - half) / max(count - 1, 1)) for k in range(count)})


@dataclass(frozen=True)
class MaxentFit:
    """A topological maximum-entropy model fitted to one or more snapshots (see :mod:`flock3d.inference`).

    ``n_c``, ``J``: the fit, the mean over snapshots of each snapshot's best range and its
    coupling; ``n_c_error``, ``J_error``: their standard errors (NaN for one snapshot).
    ``n_c_values`` (K,): the ranges tried; ``log_likelihood`` (K,): l*(n_c) per bird,
    ``couplings`` (K,): J*(n_c), ``c_int`` (K,): C_int(n_c), each the mean over snapshots
    (NaN where a snapshot's directions do not fluctuate, C_int = 1). ``frame_n_c``,
    ``frame_J`` (T,): each snapshot's fit. ``polarization``, ``predicted_polarization``:
    measured and predicted (means over snapshots). ``fluctuation``: the mean square of the
    directions' fluctuations about their piece's mean direction (mean over snapshots), which the
    spin-wave expansion takes to be small (:attr:`polarized`). ``r`` (B,), ``pairs`` (B,),
    ``measured`` (B,), ``predicted`` (B,): C(r) of the direction fluctuations in B bins
    from 0 to ``r_max``, measured and predicted, averaged over snapshots pair by pair;
    ``xi``, ``predicted_xi``: their first zeros (:func:`flock3d.metrics.correlation_length`).
    ``alignment``: C_int at the fit (each snapshot's at its own n_c), mean over snapshots.
    """

    n_c: float
    n_c_error: float
    J: float
    J_error: float
    n_c_values: np.ndarray
    log_likelihood: np.ndarray
    couplings: np.ndarray
    c_int: np.ndarray
    frame_n_c: np.ndarray
    frame_J: np.ndarray
    boids: int
    dimensions: int
    polarization: float
    predicted_polarization: float
    fluctuation: float
    r: np.ndarray
    pairs: np.ndarray
    measured: np.ndarray
    predicted: np.ndarray
    r_max: float
    xi: float
    predicted_xi: float
    alignment: float

    @property
    def frames(self) -> int:
        """Snapshots fitted."""
        return len(self.frame_n_c)

    @property
    def polarized(self) -> bool:
        """Whether the flock is within the fit's assumption: direction fluctuations small next to 1
        (a mean square of at most :data:`MAX_FLUCTUATION`; a mill, a swarm or a disordered flock is
        not, and its n_c and J describe no spin-wave model)."""
        return self.fluctuation <= MAX_FLUCTUATION

    @property
    def at_edge(self) -> bool:
        """The likelihood was still rising at the largest range tried: the best one may lie beyond."""
        finite = np.isfinite(self.log_likelihood)
        return bool(finite[-1] and np.nanargmax(self.log_likelihood) == len(self.log_likelihood) - 1)

    def correlation_table(self) -> dict[str, np.ndarray]:
        """C(r) as columns: ``bin``, ``r``, ``pairs``, ``measured``, ``predicted``."""
        return {"bin": np.arange(len(self.r)), "r": self.r, "pairs": self.pairs.astype(np.int64),
                "measured": self.measured, "predicted": self.predicted}  # fmt: skip

    def likelihood_table(self) -> dict[str, np.ndarray]:
        """The curves over the ranges tried as columns: ``n_c``, ``log_likelihood``, ``J``, ``c_int``."""
        return {"n_c": self.n_c_values, "log_likelihood": self.log_likelihood, "J": self.couplings,
                "c_int": self.c_int}  # fmt: skip


@numba.njit(cache=True)
def _pieces(idx):
    """The connected pieces of the graph linking each boid with its k nearest, for k = 1 ... K.

    Args:
        idx: (N, K) int64, the K nearest other boids of each boid, nearest first.

    Returns:
        (K, N) int64: row k - 1 labels each boid with the lowest boid of its piece.
    """
    n, ranks = idx.shape
    parent = np.arange(n)
    labels = np.empty((ranks, n), dtype=np.int64)
    for k in range(ranks):
        for i in range(n):
            a, b = _find(parent, i), _find(parent, idx[i, k])
            if a != b:
                parent[max(a, b)] = min(a, b)
        for i in range(n):
            labels[k, i] = _find(parent, i)
    return labels


@numba.njit(cache=True)
def _breadth_first(start, offsets, targets, stamp, visits, queue):
    """Visit the piece of ``start`` breadth first, marking ``visits`` with ``stamp``; the boids
    in the order visited are ``queue[:count]``; returns count. Adjacency lists in CSR form."""
    queue[0] = start
    visits[start] = stamp
    head, count = 0, 1
    while head < count:
        i = queue[head]
        head += 1
        for t in range(offsets[i], offsets[i + 1]):
            j = targets[t]
            if visits[j] != stamp:
                visits[j] = stamp
                queue[count] = j
                count += 1
    return count


@numba.njit(cache=True)
def _band_order(idx):
    """An order of the boids that keeps each boid's neighbours near it: reverse Cuthill-McKee.

    Each piece of the graph linking every boid with its K nearest (idx (N, K)) is searched
    breadth first from a far boid (the last one a search from its lowest boid reaches), and
    the whole order reversed. In this order a Laplacian of the graph has its non-zeros
    within a band about N^(2/3) wide in space (the boids of a slab), so its Cholesky factor
    costs N^(7/3) rather than N^3.

    Returns:
        (N,) int64: the boids in the new order.
    """
    n, ranks = idx.shape
    offsets = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        for k in range(ranks):
            offsets[i + 1] += 1
            offsets[idx[i, k] + 1] += 1
    offsets = np.cumsum(offsets)
    fill = offsets[:-1].copy()
    targets = np.empty(offsets[-1], dtype=np.int64)
    for i in range(n):
        for k in range(ranks):
            j = idx[i, k]
            targets[fill[i]] = j
            fill[i] += 1
            targets[fill[j]] = i
            fill[j] += 1
    visits = np.zeros(n, dtype=np.int64)
    queue = np.empty(n, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    placed, stamp = 0, 0
    for root in range(n):
        if visits[root] != 0:
            continue
        stamp += 1
        count = _breadth_first(root, offsets, targets, stamp, visits, queue)
        stamp += 1
        count = _breadth_first(queue[count - 1], offsets, targets, stamp, visits, queue)
        order[placed : placed + count] = queue[:count]
        placed += count
    return order[::-1].copy()


@numba.njit(cache=True)
def _log_det_reduced(idx, n_c, row):
    """log det of the Laplacian Lambda of the symmetrized n_c-nearest graph with one boid of each
    piece removed (``row[i]``: boid i's row, -1 for the removed), or NaN if not positive definite.

    By the matrix-tree theorem this is log det' Lambda - sum over pieces of log(size): the
    removed rows leave a positive definite matrix as sparse as Lambda, whose Cholesky factor
    stays within the envelope of its rows (the non-zeros of row i start at column first[i]),
    narrow in the order of :func:`_band_order`.
    """
    n = idx.shape[0]
    size = 0
    for i in range(n):
        size = max(size, row[i] + 1)
    a = np.zeros((size, size))
    for i in range(n):
        for k in range(n_c):
            ri, rj = row[i], row[idx[i, k]]
            if ri >= 0:
                a[ri, ri] += 0.5
            if rj >= 0:
                a[rj, rj] += 0.5
            if ri >= 0 and rj >= 0:
                a[ri, rj] -= 0.5
                a[rj, ri] -= 0.5
    first = np.empty(size, dtype=np.int64)
    for i in range(size):
        j = 0
        while j < i and a[i, j] == 0.0:
            j += 1
        first[i] = j
    total = 0.0
    for i in range(size):  # row by row: L[i, j] = (a[i, j] - L[i, :j] . L[j, :j]) / L[j, j]
        fi = first[i]
        for j in range(fi, i):
            s = a[i, j]
            for k in range(max(fi, first[j]), j):
                s -= a[i, k] * a[j, k]
            a[i, j] = s / a[j, j]
        s = a[i, i]
        for k in range(fi, i):
            s -= a[i, k] * a[i, k]
        if not s > 0.0:
            return np.nan
        a[i, i] = math.sqrt(s)
        total += math.log(a[i, i])
    return 2.0 * total


def _ranges(n_c_range, n: int) -> np.ndarray:
    """The ranges to try as (K,) int64, increasing, each from 1 to N - 1; ValueError otherwise."""
    if n_c_range is None:
        if n < 3:
            raise ValueError(f"a maximum-entropy fit needs at least 3 boids (got {n})")
        return np.arange(1, min(N_C_MAX, n - 1) + 1)
    values = list(n_c_range) if isinstance(n_c_range, Iterable) else [n_c_range]
    checked = [whole_number("n_c_range values", value, 1, max(1, n - 1)) for value in values]
    if not checked or any(b <= a for a, b in zip(checked, checked[1:], strict=False)):
        raise ValueError(
            f"n_c_range must be increasing whole numbers from 1 to N - 1 = {n - 1} (got {short_repr(values)})"
        )
    return np.array(checked, dtype=np.int64)


def _directions(positions, velocities) -> tuple[np.ndarray, np.ndarray, int]:
    """Positions (N, 3), unit directions (N, 3) and the dimension of space (2 for a planar flock)."""
    p, v = pair3(positions, velocities)
    if len(p) > MAX_BOIDS:
        raise ValueError(
            f"a maximum-entropy fit takes at most {MAX_BOIDS:,} boids a snapshot (got {len(p):,}): "
            "fit a part of the flock"
        )
    if not (measurable(p) and measurable(v)):
        raise ValueError("positions and velocities must be finite (and at most 1e150 in size)")
    speeds = np.linalg.norm(v, axis=1)
    if np.any(speeds == 0.0):
        raise ValueError(f"every boid needs a direction: boid {int(np.argmin(speeds))} has zero velocity")
    planar = len(p) > 0 and np.ptp(p[:, 2]) == 0.0 and np.all(v[:, 2] == 0.0)
    return p, v / speeds[:, None], 2 if planar else 3


@dataclass(frozen=True)
class _Snapshot:
    """One snapshot's fit: the curves over the ranges, the best range and what it predicts."""

    log_likelihood: np.ndarray
    couplings: np.ndarray
    c_int: np.ndarray
    n_c: int
    J: float
    polarization: float
    predicted_polarization: float
    fluctuation: float
    pairs: np.ndarray
    r_sum: np.ndarray
    measured_sum: np.ndarray
    predicted_sum: np.ndarray


def _laplacian(idx: np.ndarray, n_c: int) -> np.ndarray:
    """(N, N) Lambda of the symmetrized graph linking each boid with its n_c nearest (idx (N, >= n_c))."""
    n = len(idx)
    m = np.zeros((n, n))
    rows = np.repeat(np.arange(n), n_c)
    cols = idx[:, :n_c].ravel()
    np.add.at(m, (rows, cols), 0.5)
    np.add.at(m, (cols, rows), 0.5)
    np.fill_diagonal(m, 0.0)  # never set: a boid is not its own neighbour
    return np.diag(m.sum(axis=1)) - m


def _pair_sums(p: np.ndarray, box, r_max: float, bins: int, values: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per distance bin over the pairs i < j at most r_max apart: count, sum of r_ij, sum of values[i, j].

    The bins of :func:`flock3d.metrics.velocity_correlation` (B of equal width from 0 to r_max, the
    last one closed; minimum image in a periodic box), so that the predicted C(r) lines up with
    the measured one.
    """
    n = len(p)
    count, r_sum, total = np.zeros(bins), np.zeros(bins), np.zeros(bins)
    columns = np.arange(n)
    for start in range(0, n, 256):
        rows = np.arange(start, min(start + 256, n))
        dist = np.linalg.norm(minimum_image(p[None, :, :] - p[rows, None, :], box), axis=2)
        keep = (columns[None, :] > rows[:, None]) & (dist <= r_max)
        d = dist[keep]
        b = np.minimum((d * (bins / r_max)).astype(np.int64), bins - 1)
        count += np.bincount(b, minlength=bins)
        r_sum += np.bincount(b, weights=d, minlength=bins)
        total += np.bincount(b, weights=values[rows][keep], minlength=bins)
    return count, r_sum, total


def _zero_modes(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The projector (N, N) on the zero modes of Lambda (a rotation of each piece of the graph,
    labels (N,)) and the size of each piece (m,)."""
    _, piece, sizes = np.unique(labels, return_inverse=True, return_counts=True)
    same = piece[:, None] == piece[None, :]
    return same / sizes[piece][:, None], sizes


def _fit_snapshot(p: np.ndarray, s: np.ndarray, dims: int, ranges, box, r_max: float, bins: int) -> _Snapshot:
    """Fit one snapshot: positions p (N, 3) and unit directions s (N, 3) in ``dims`` dimensions."""
    n, transverse = len(p), dims - 1
    sphere = 2.0 * math.pi if transverse == 1 else 4.0 * math.pi  # area of the directions' sphere
    idx, _ = nearest_k(p, int(ranges[-1]), box)
    aligned = np.einsum("id,ikd->ik", s, s[idx])  # s_i . s_j for the K nearest j of each i
    pieces = _pieces(idx)
    order = _band_order(idx)
    curves = np.full((3, len(ranges)), np.nan)
    for k, n_c in enumerate(ranges):
        c_int = aligned[:, :n_c].mean()
        curves[2, k] = c_int
        if not c_int < 1.0:
            continue
        labels = pieces[n_c - 1]
        sizes = np.unique(labels, return_counts=True)[1]
        modes = n - len(sizes)  # the non-zero modes of Lambda
        coupling = transverse * modes / (n * n_c * (1.0 - c_int))
        kept = order[labels[order] != order]  # the band order, less each piece's lowest boid
        row = np.full(n, -1, dtype=np.int64)
        row[kept] = np.arange(len(kept))
        log_det = _log_det_reduced(idx, n_c, row) + np.log(sizes).sum()  # log det' Lambda
        rotations = np.sum(math.log(sphere) + 0.5 * transverse * np.log(sizes))
        curves[0, k] = (
            transverse * (modes * (math.log(coupling / (2 * math.pi)) - 1) + log_det) / 2 - rotations
        ) / n
        curves[1, k] = coupling
    if not np.isfinite(curves[0]).any():
        raise ValueError("the directions do not fluctuate: every boid is aligned with its neighbours")
    best = int(np.nanargmax(curves[0]))
    n_c, coupling = int(ranges[best]), float(curves[1, best])
    projector, _ = _zero_modes(pieces[n_c - 1])
    # Fluctuations within each piece: <pi_i . pi_j> = (D / J) Lambda+, Lambda+ = (Lambda + P)^-1 - P.
    # The model leaves the mean direction of each piece free: they are taken as observed.
    covariance = (transverse / coupling) * (np.linalg.inv(_laplacian(idx, n_c) + projector) - projector)
    mean = s.mean(axis=0)
    piece_mean = projector @ s  # (N, 3): the mean direction of each boid's piece
    piece_mean /= np.linalg.norm(piece_mean, axis=1, keepdims=True)
    offsets = piece_mean - mean
    fluctuation = s - mean
    c0 = float(np.einsum("id,id->", fluctuation, fluctuation) / n)
    measured = metrics.velocity_correlation(p, s, bins=bins, r_max=r_max, period=box)
    count, r_sum, predicted = _pair_sums(p, box, r_max, bins, (offsets @ offsets.T + covariance) / c0)
    measured_sum = np.where(count > 0, measured.orientation * count, 0.0)
    order = np.linalg.norm((piece_mean * (1.0 - 0.5 * np.diagonal(covariance))[:, None]).mean(axis=0))
    return _Snapshot(
        *curves,
        n_c,
        coupling,
        metrics.polarization(s),
        float(order),
        c0,
        count,
        r_sum,
        measured_sum,
        predicted,
    )


def maxent_frames(
    frames: Iterable,
    *,
    n_c_range: Sequence[int] | None = None,
    period=None,
    bins: int = 50,
    progress: Callable[[int], None] | None = None,
) -> MaxentFit:
    """The topological maximum-entropy model fitted to each of several snapshots, averaged.

    Each snapshot gets its own best range n_c and coupling J (see :mod:`flock3d.inference`
    for the equations); the fit is their mean over snapshots with its standard error, as
    Bialek et al. average over the snapshots of a flock. The likelihood curves and C(r)
    are averaged too (C(r) pair by pair, in common bins from 0 to the largest flock size L
    of the snapshots, or to half the box in a periodic one).

    Args:
        frames: states with ``positions`` and ``velocities``, (N, 3) each: frames of a
            :class:`flock3d.io.Trajectory`, :class:`flock3d.FlockState` s, a live flock's
            state copied at several times. Every snapshot must hold the same N, at most
            :data:`MAX_BOIDS`, every boid with a non-zero velocity. They are read into memory
            first (C(r) is binned to the largest flock of them all).
        n_c_range: the ranges to try, increasing whole numbers from 1 to N - 1 (default 1
            to :data:`N_C_MAX`, or N - 1 when smaller).
        period: (3,) periodic box sides for the minimum image (:func:`flock3d.metrics.periodic_box`),
            or None.
        bins: distance bins of C(r), 1 to :data:`flock3d.metrics.MAX_BINS`.
        progress: called with 1 after each snapshot is fitted (a progress bar's ``update``).

    Returns:
        A :class:`MaxentFit`.

    Raises:
        ValueError: no frames, frames of different N, values that cannot be used (NaN,
            infinite, a boid at rest), a bad ``n_c_range`` or ``bins``, or a snapshot
            for which no range can be fitted (the message says why).
    """
    return _fit([(state.positions, state.velocities) for state in frames], n_c_range, period, bins, progress)


def _fit(snapshots: list, n_c_range, period, bins: int, progress=None) -> MaxentFit:
    """Fit each (positions, velocities) snapshot and combine the fits (see :func:`maxent_frames`)."""
    bins = whole_number("bins", bins, 1, metrics.MAX_BINS)
    box = period_of(period)
    snapshots = [_directions(p, v) for p, v in snapshots]
    if not snapshots:
        raise ValueError("a maximum-entropy fit needs at least one frame (got none)")
    n, dims = len(snapshots[0][0]), snapshots[0][2]
    if any(len(p) != n for p, _, _ in snapshots):
        raise ValueError("every frame of a maximum-entropy fit must hold the same number of boids")
    ranges = _ranges(n_c_range, n)
    if box is not None:
        r_max = 0.5 * float(box[box > 0.0].min())
    else:
        r_max = max(metrics.flock_size(p) for p, _, _ in snapshots)
        if not r_max > 0.0:  # C(r) is binned from 0 to the flock's size L: it has no bins
            raise ValueError(
                "every boid is at the same point in every frame (the flock's size L is 0): "
                "the fit needs distances between boids"
            )
    fits = []
    for p, s, d in snapshots:
        fits.append(_fit_snapshot(p, s, d, ranges, box, r_max, bins))
        if progress is not None:
            progress(1)
    return _combine(fits, ranges, n, dims, r_max)


def maxent(
    positions: np.ndarray,
    velocities: np.ndarray,
    *,
    n_c_range: Sequence[int] | None = None,
    period=None,
    bins: int = 50,
) -> MaxentFit:
    """The topological maximum-entropy model (Bialek et al. 2012) fitted to one snapshot.

    The range n_c maximizes the spin-wave log-likelihood per bird l*(n_c), J is the
    coupling that maximizes it at that range, ``D (N - 1) / (N n_c (1 - C_int))`` (see
    :mod:`flock3d.inference`). :func:`maxent_frames` fits several snapshots.

    Args:
        positions: (N, 3) world units (any length unit: only neighbour ranks and the
            distances of C(r) depend on it).
        velocities: (N, 3); only their directions count, none may be zero.
        n_c_range, period, bins: as for :func:`maxent_frames`.

    Returns:
        A :class:`MaxentFit` of one snapshot (its errors NaN).
    """
    return _fit([(positions, velocities)], n_c_range, period, bins)


def _combine(fits: list[_Snapshot], ranges: np.ndarray, n: int, dims: int, r_max: float) -> MaxentFit:
    """The mean of the snapshots' fits (and standard errors), curves averaged."""
    frame_n_c = np.array([f.n_c for f in fits], dtype=np.float64)
    frame_j = np.array([f.J for f in fits])

    def error(values: np.ndarray) -> float:
        return float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else float("nan")

    pairs = sum(f.pairs for f in fits)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = sum(f.r_sum for f in fits) / pairs
        measured = sum(f.measured_sum for f in fits) / pairs
        predicted = sum(f.predicted_sum for f in fits) / pairs
    return MaxentFit(
        n_c=float(frame_n_c.mean()),
        n_c_error=error(frame_n_c),
        J=float(frame_j.mean()),
        J_error=error(frame_j),
        n_c_values=ranges,
        log_likelihood=np.mean([f.log_likelihood for f in fits], axis=0),
        couplings=np.mean([f.couplings for f in fits], axis=0),
        c_int=np.mean([f.c_int for f in fits], axis=0),
        frame_n_c=frame_n_c,
        frame_J=frame_j,
        boids=n,
        dimensions=dims,
        polarization=float(np.mean([f.polarization for f in fits])),
        predicted_polarization=float(np.mean([f.predicted_polarization for f in fits])),
        fluctuation=float(np.mean([f.fluctuation for f in fits])),
        r=r,
        pairs=pairs,
        measured=measured,
        predicted=predicted,
        r_max=float(r_max),
        xi=metrics.correlation_length(r, measured),
        predicted_xi=metrics.correlation_length(r, predicted),
        alignment=float(np.mean([f.c_int[list(ranges).index(f.n_c)] for f in fits])),
    )
