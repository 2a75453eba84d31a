"""The per-frame table: the standard measurements of every frame of a recording, as columns.

The columns are measured twice over, by one rule each: frames of up to :data:`MAX_PAIRS`
pairs in one compiled pass over all pairs (parallel over frames), larger frames by the
functions of :mod:`flock3d.metrics.order`, :mod:`~flock3d.metrics.spacing` and
:mod:`~flock3d.metrics.shape` on the cell grid. tests/test_metrics.py checks both against a
brute-force reference."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Iterator

import numba
import numpy as np

from flock3d.core.neighbors import _find  # the union-find of neighbors.components
from flock3d.metrics.order import milling, polarization
from flock3d.metrics.periodic import nearest_image, period_of
from flock3d.metrics.shape import flock_size, principal
from flock3d.metrics.spacing import (
    MAX_PAIRS,
    group_polarization,
    groups,
    mean_pair_distance,
    nearest_neighbour_stats,
)
from flock3d.metrics.values import MAX_MEASURED, MeasurementWarning, measurable, pair3

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
                    dx, dy, dz = nearest_image(x[j] - x[i], y[j] - y[i], z[j] - z[i], box)
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
    measured = measurable(positions, axis=(1, 2)) & measurable(velocities, axis=(1, 2))
    out = np.full((t_count, len(COLUMNS)), np.nan)
    p, v = positions[measured], velocities[measured]
    rows = np.empty((len(p), len(COLUMNS)))
    if n * (n - 1) // 2 <= MAX_PAIRS:
        link2 = float(group_distance) ** 2
        # Sums into an array of its own: a view of rows is C-contiguous for one frame only, and
        # each layout of `out` compiles the pass again (6 s on 2 cores).
        pairs = np.empty((len(p), 8))
        _pair_pass(p, v, link2, np.zeros(3) if box is None else box, pairs)
        rows[:, :8] = pairs
    else:
        for t in range(len(p)):
            rows[t, :8] = _large_frame_row(p[t], v[t], group_distance, box)
    rows[:, 8:] = np.nan
    if box is None and n > 0 and len(p):
        rows[:, 8:] = 2.0 * principal(p)[1]  # robust to a straggler, unlike extents
    out[measured] = rows
    return out, measured


def summary(
    positions: np.ndarray, velocities: np.ndarray, group_distance: float, period=None
) -> dict[str, float]:
    """The standard per-frame measurements (:data:`COLUMNS`), as one flat dictionary.

    Args:
        positions: (N, 3) positions [units].
        velocities: (N, 3) velocities [units/s].
        group_distance: link distance of the groups [units]; use ``Params.perception_distance``.
        period: (3,) box sides for the minimum image [units] (:func:`periodic_box`), or None.

    Returns:
        The measurements by column name. A frame holding a NaN or infinite value, or one
        beyond :data:`MAX_MEASURED` in size, measures NaN throughout.
    """
    p, v = pair3(positions, velocities)
    row = _measure(p[None], v[None], group_distance, period_of(period))[0][0]
    return {name: float(x) for name, x in zip(COLUMNS, row, strict=True)}


def species_summary(
    positions: np.ndarray, velocities: np.ndarray, species: np.ndarray, group_distance: float, period=None
) -> list[dict[str, float]]:
    """:func:`summary` of each species of a mixed flock on its own, in species order.

    Args:
        positions: (N, 3) positions of the whole flock [units].
        velocities: (N, 3) velocities of the whole flock [units/s].
        species: (N,) int, each boid's species (``Flock.species``).
        group_distance: link distance of the groups [units], as for :func:`summary`.
        period: (3,) box sides for the minimum image [units], or None.

    Returns:
        One dictionary per species 0 .. max(species), of :data:`COLUMNS`: the polarization of
        one species, its groups, its nearest-neighbour distances among its own kind.

    Raises:
        ValueError: ``species`` does not give one species per boid.
    """
    p, v = pair3(positions, velocities)
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
        group_distance: link distance of the groups [units].
        period: (3,) box sides for the minimum image [units], or None.

    Returns:
        The columns by name, one row per frame: ``step`` (int64), ``time`` [s] and
        :data:`COLUMNS` (float64).

    Raises:
        ValueError: the frames do not all hold the same number of boids.
    """
    box = period_of(period)
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
