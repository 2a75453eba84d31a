"""Order parameters: polarization (all flying one way) and milling (all circling one centre)."""

from __future__ import annotations

import numpy as np

from flock3d.metrics.values import pair3, unit_rows


def polarization(velocities: np.ndarray) -> float:
    """Polarization P = |sum_i v_i / |v_i|| / N: 1 when all boids fly parallel, ~0 when disordered.

    Args:
        velocities: (N, 3) velocities [units/s]; a boid at rest counts in N but adds no direction.

    Returns:
        P in [0, 1]; NaN for an empty flock.
    """
    u = unit_rows(velocities)
    if len(u) == 0:
        return float("nan")
    # A sum of N unit vectors, each rounded, may come out an ulp or two above N: P is at most 1.
    return float(np.minimum(1.0, np.linalg.norm(u.sum(axis=0)) / len(u)))  # NaN stays NaN


def milling(positions: np.ndarray, velocities: np.ndarray) -> float:
    """Milling M = |sum_i (r_i/|r_i|) x (v_i/|v_i|)| / N with r_i from the flock's centroid.

    The normalised angular momentum: 1 for a perfect rotating torus (mill),
    ~0 for a polarized or disordered flock.

    Args:
        positions: (N, 3) positions [units].
        velocities: (N, 3) velocities [units/s].

    Returns:
        M in [0, 1]; NaN for an empty flock.
    """
    p, v = pair3(positions, velocities)
    if len(p) == 0:
        return float("nan")
    r = unit_rows(p - p.mean(axis=0))
    return float(np.minimum(1.0, np.linalg.norm(np.cross(r, unit_rows(v)).sum(axis=0)) / len(p)))  # as P
