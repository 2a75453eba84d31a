"""What every measurement shares: which values can be measured, the checks of its arguments,
unit directions, and means over frames that leave undefined frames out."""

from __future__ import annotations

import numpy as np

from flock3d.core.fields import is_whole_number
from flock3d.core.params import short_repr

#: The largest size of a coordinate or velocity component that is measured. Measurements
#: square differences of them and sum the squares over a flock: beyond this they overflow
#: float64 (1e308), and a frame would measure inf or 0 by accident, or not converge.
MAX_MEASURED = 1e150


class MeasurementWarning(UserWarning):
    """Frames that could not be measured (NaN, infinite or huge values) and measure NaN."""


def measurable(a: np.ndarray, axis=None):
    """Every value finite and at most :data:`MAX_MEASURED` in size (NaN fails the comparison)."""
    return np.all(np.abs(a) <= MAX_MEASURED, axis=axis)


def whole_number(name: str, value, low: int, high: int | None = None) -> int:
    """``value`` as an int; ValueError naming ``name`` unless a whole number in [low, high]."""
    if not is_whole_number(value) or not (low <= value and (high is None or value <= high)):
        within = f"from {low:,} to {high:,}" if high is not None else f">= {low:,}"
        raise ValueError(f"{name} must be a whole number {within} (got {short_repr(value)})")
    return int(value)


def array3(a, name: str = "positions") -> np.ndarray:
    """``a`` as a C-contiguous (N, 3) float64 array (an empty one of any shape: (0, 3));
    ValueError naming ``name`` for any other shape, which reshaping would have made rows of
    other numbers (an (N, 2) array's, a single vector's components)."""
    a = np.asarray(a, dtype=np.float64)
    if a.size == 0:
        return np.zeros((0, 3))
    if a.ndim != 2 or a.shape[1] != 3:
        raise ValueError(f"{name} must be an (N, 3) array, got shape {a.shape}")
    return np.ascontiguousarray(a)


def pair3(positions, velocities) -> tuple[np.ndarray, np.ndarray]:
    """:func:`array3` of both, which must hold as many boids."""
    p, v = array3(positions), array3(velocities, "velocities")
    if len(p) != len(v):
        raise ValueError(f"positions and velocities must hold as many boids, got {len(p):,} and {len(v):,}")
    return p, v


def unit_rows(vectors: np.ndarray, name: str = "velocities") -> np.ndarray:
    """Rows scaled to unit length; zero rows stay zero (they carry no direction), and rows not
    finite are NaN (a measure over them is NaN, not one that left them out)."""
    v = array3(vectors, name)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    out = np.divide(v, norms, out=np.zeros_like(v), where=norms > 0.0)
    out[~np.isfinite(norms[:, 0])] = np.nan
    return out


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
