"""Velocity correlations (Cavagna et al. 2010, PNAS 107:11865): the connected correlation
functions C(r) of velocity, direction and speed fluctuations and their first zeros xi."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

import numba
import numpy as np

from flock3d.core import neighbors
from flock3d.core.fields import checked_number
from flock3d.metrics.periodic import nearest_image, period_of
from flock3d.metrics.shape import flock_size
from flock3d.metrics.values import measurable, pair3, unit_rows, whole_number

#: Most distance bins of :func:`velocity_correlation` (its sums take 2.5 kB a bin).
MAX_BINS = 10_000
#: Fluctuations whose root mean square is at most this share of the speed are rounding alone:
#: float64's own error is about 1e-16 of it, a flock's real fluctuations far above 1e-12.
ROUNDING = 1e-12

_CHUNKS = 64  # fixed work split: sums are the same whatever the thread count


@numba.njit(cache=True, parallel=True)
def _correlation_sums(p, u, o, s, rows, upper, r_max, bins, box):
    """Per-bin sums over pairs (i, j): count, sum r_ij, sum u_i.u_j, sum o_i.o_j, sum s_i s_j.

    ``rows`` (M,) are the boids i; each pairs with every j > i when ``upper``
    (all pairs once) or with every j != i otherwise (sampled centres).
    """
    n = p.shape[0]
    m = rows.shape[0]
    inv = bins / r_max
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
                    dx, dy, dz = nearest_image(dx, dy, dz, box)
                d = math.sqrt(dx * dx + dy * dy + dz * dz)
                if d > r_max:  # the bins span [0, r_max], the last one closed: a pair at L is in it
                    continue
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

    The curves have one value per distance bin: B bins of equal width from 0 to ``r_max``.

    Attributes:
        r: (B,) the mean distance of the pairs in each bin [units] (NaN if none).
        pairs: (B,) how many pairs were counted in each bin.
        velocity: (B,) C(r) of the velocity fluctuations (NaN in an empty bin).
        orientation: (B,) C(r) of the direction fluctuations (NaN in an empty bin).
        speed: (B,) C(r) of the speed fluctuations (NaN in an empty bin).
        xi_velocity: the correlation length of ``velocity``, its first zero [units].
        xi_orientation: the correlation length of ``orientation`` [units].
        xi_speed: the correlation length of ``speed`` [units].
        size: the flock's linear size L [units] (NaN in a periodic box).
        r_max: the largest distance binned [units].
        centres: the boids whose pairs were counted (N when exact).
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
        r: (B,) bin distances, increasing [units] (NaN bins are skipped).
        c: (B,) the correlation function at r.

    Returns:
        The smallest r where C crosses zero [units], NaN if it stays positive (or C is NaN).
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
        positions: (N, 3) positions [units].
        velocities: (N, 3) velocities [units/s].
        bins: distance bins of equal width, 1 to :data:`MAX_BINS`.
        r_max: largest distance binned [units]; None: the flock's size L (half the smallest
            periodic side in a periodic box).
        max_pairs: up to this many pairs every pair counts once (exact). Beyond it,
            about ``max_pairs // (N - 1)`` centres, every k-th boid in the order of the
            cells of a grid (so spread evenly through the flock), are paired with every
            other boid: an estimate of each bin's mean over pairs (c_0 and the means
            are always exact). 100,000 boids then take about 1 s on two cores.
        period: (3,) box sides for the minimum image [units], or None.
        remove_modes: first subtract from the velocity and orientation fluctuations
            the flock's best-fit rotation and uniform dilation about its centroid
            (least squares), so that a turning, contracting or expanding flock's
            overall motion, which is correlated across the whole flock by
            construction, does not pass for the correlation of its members'
            fluctuations (the check Cavagna et al. made). Not in a periodic box.

    Returns:
        A :class:`Correlation`. With fewer than 2 boids, or values that cannot be measured
        (NaN, infinite or beyond :data:`MAX_MEASURED`), everything is NaN; a kind with
        no fluctuation (c_0 at most rounding's, :data:`ROUNDING`: e.g. the speed at constant speed) is NaN.

    Raises:
        ValueError: ``bins`` or ``max_pairs`` is not a whole number in its range, ``r_max``
            is given and no finite number > 0, ``positions`` and ``velocities`` are no
            (N, 3) arrays of as many boids, or ``remove_modes`` in a periodic box.
    """
    bins = whole_number("bins", bins, 1, MAX_BINS)
    max_pairs = whole_number("max_pairs", max_pairs, 1)
    if r_max is not None:
        checked_number(r_max, "r_max", 0.0, low_open=True, allow_inf=False)
    p, v = pair3(positions, velocities)
    n = len(p)
    box = period_of(period)
    size = float("nan") if box is not None else flock_size(p)
    if r_max is None:
        r_max = 0.5 * float(box[box > 0.0].min()) if box is not None else size
    nan = np.full(bins, np.nan)
    empty = Correlation(nan, np.zeros(bins), nan, nan, nan, *[float("nan")] * 3, size, float(r_max), 0)
    if n < 2 or not (r_max > 0.0 and math.isfinite(r_max)) or not (measurable(p) and measurable(v)):
        return empty
    speed = np.linalg.norm(v, axis=1)
    u = v - v.mean(axis=0)
    direction = unit_rows(v)
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
        typical = float(np.sqrt(np.mean(speed * speed)))  # the size of a velocity, and of a speed
        for k, f, scale in ((2, u, typical), (3, o, 1.0), (4, s, typical)):
            c0 = float(np.sum(f * f) / n)
            # Fluctuations no larger than rounding (a constant-speed model's speeds, 1e-16 of
            # them) are none: correlating them would draw a curve out of noise.
            fluctuates = c0 > (ROUNDING * scale) ** 2
            curves.append(sums[:, k] / count / c0 if fluctuates else np.full(bins, np.nan))
    xis = [correlation_length(r, c) for c in curves]
    return Correlation(r, count, *curves, *xis, size, float(r_max), centres)


def correlation_table(
    frames: Iterable, *, bins: int = 50, period=None, max_pairs: int = 100_000_000
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """:func:`velocity_correlation` of every frame.

    Args:
        frames: states with ``positions``, ``velocities``, ``time`` and ``step_count``
            (a :class:`flock3d.FlockState`, a live flock), consumed lazily.
        bins: distance bins of equal width, 1 to :data:`MAX_BINS`.
        period: (3,) box sides for the minimum image [units], or None.
        max_pairs: as for :func:`velocity_correlation`.

    Returns:
        ``(lengths, curves)``: ``lengths`` has one row per frame (``step``, ``time``,
        ``size`` L, ``xi_velocity``, ``xi_orientation``, ``xi_speed``); ``curves`` one
        row per frame and bin (``step``, ``time``, ``bin``, ``r``, ``pairs``,
        ``velocity``, ``orientation``, ``speed``). Each frame is binned from 0 to its
        own L (half the box in a periodic one).

    Raises:
        ValueError: ``bins`` or ``max_pairs`` is not a whole number in its range.
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
