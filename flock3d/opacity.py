"""How much a flock hides: its opacity seen from afar, and what each bird can see out of it.

Pearce, Miller, Rowlands & Turner (2014, PNAS 111:10422) found that starling flocks are
*marginally opaque*: seen from the ground, a flock hides between about a quarter and
three fifths of the sky behind it, and a bird inside it can still see out in many directions.
Both measures need a body: each bird is a sphere of ``radius`` (a disc in a planar flock).

- :func:`sky_opacity`: a flock seen from afar along one direction (a photograph from the
  ground), the fraction of sightlines through the flock that meet a bird. "Through the flock"
  means through its equivalent ellipsoid (the uniform solid ellipsoid with the flock's second
  moments, :func:`flock3d.metrics.principal_axes`), whose outline a photograph's flock fills.
- :func:`view_opacity`: from points (by default each bird, which does not hide itself), the
  fraction of all directions (the sphere of view; the circle in a planar flock) that a bird
  blocks.

Both are Monte Carlo estimates over fixed samples: the same flock gives the same number every
call, within about ``0.5 / sqrt(samples)`` of the exact fraction.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from flock3d.core.neighbors import axis_span, build_grid
from flock3d.metrics.anisotropy import even_directions

__all__ = ["sky_opacity", "view_opacity"]


def _checked(positions, radius: float) -> np.ndarray:
    p = np.ascontiguousarray(np.asarray(positions, dtype=np.float64).reshape(-1, 3))
    if len(p) == 0:
        raise ValueError("the flock is empty: opacity needs at least one bird")
    if not np.all(np.isfinite(p)):
        raise ValueError("positions must be finite to measure opacity")
    if not (math.isfinite(radius) and radius > 0.0):
        raise ValueError(f"radius must be a finite number > 0, a bird's body radius (got {radius!r})")
    return p


def _dimensions(dimensions: int) -> int:
    if dimensions not in (2, 3):
        raise ValueError(f"dimensions must be 2 or 3 (got {dimensions!r})")
    return dimensions


def sky_opacity(
    positions, radius: float, direction=(0.0, 1.0, 0.0), samples: int = 20_000, dimensions: int = 3
) -> float:
    """The fraction of sightlines through the flock, seen from afar along ``direction``, that
    meet a bird.

    Args:
        positions: (N, 3) float64, world units.
        radius: a bird's body radius, world units (> 0).
        direction: the line of sight (3,), any length > 0; the default looks up from the ground
            (+y is up).
        samples: sightlines, spread evenly over the flock's outline (a fixed low-discrepancy
            set, so a flock gives the same number every call).
        dimensions: 2 for a planar flock (the xy plane), seen edge-on within its plane
            (``direction`` must then have z = 0).

    Returns:
        The opacity in [0, 1]: 0 when every sightline passes between the birds, 1 when the
        flock is a wall.
    """
    p = _checked(positions, radius)
    d = np.asarray(direction, dtype=np.float64).reshape(3)
    if not (np.all(np.isfinite(d)) and np.any(d)):
        raise ValueError(f"direction must be 3 finite numbers, not all 0 (got {direction!r})")
    d = d / np.linalg.norm(d)
    planar = _dimensions(dimensions) == 2
    if planar and abs(d[2]) > 1e-12:
        raise ValueError("a planar flock is seen within its plane: direction must have z = 0")
    # An orthonormal basis of the picture plane (one axis for a planar flock).
    helper = np.array([0.0, 0.0, 1.0]) if planar or abs(d[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    e1 = np.cross(helper, d)
    e1 /= np.linalg.norm(e1)
    basis = e1[None] if planar else np.stack([e1, np.cross(d, e1)])
    centred = p - p.mean(axis=0)
    seen = centred @ basis.T  # (N, 1 or 2): each bird in the picture
    # The outline: the equivalent uniform solid ellipsoid (a disc in a plane: factor 4, not 5),
    # projected. Its points are {L u : |u| <= 1} with L L^T = factor * covariance in the picture.
    factor = 4.0 if planar else 5.0
    cov = np.atleast_2d(factor * (seen.T @ seen) / len(p))
    lower = np.linalg.cholesky(cov + 1e-300 * np.eye(len(cov)))
    u = _unit_ball(seen.shape[1], samples)
    points = u @ lower.T
    flat = np.zeros((len(p), 3))
    flat[:, : seen.shape[1]] = seen
    queries = np.zeros((len(points), 3))
    queries[:, : seen.shape[1]] = points
    return float(np.mean(_covered(flat, queries, radius)))


def _unit_ball(dimensions: int, count: int) -> np.ndarray:
    """(count, dimensions) points spread evenly over the unit disc (a Fibonacci spiral, equal areas)
    or the segment [-1, 1]."""
    k = np.arange(count) + 0.5
    if dimensions == 1:
        return (2.0 * k / count - 1.0)[:, None]
    rho = np.sqrt(k / count)
    a = np.pi * (1.0 + 5.0**0.5) * k
    return np.stack([rho * np.cos(a), rho * np.sin(a)], axis=1)


@numba.njit(cache=True, parallel=True)
def _covered(centres, queries, radius):
    """(Q,) whether each query point lies within ``radius`` of a centre (both (., 3))."""
    grid = build_grid(centres, radius)
    order, start, nx, ny, nz = grid.order, grid.cell_start, grid.nx, grid.ny, grid.nz
    ox, oy, oz, inv = grid.origin_x, grid.origin_y, grid.origin_z, 1.0 / grid.cell_size
    r2 = radius * radius
    out = np.zeros(queries.shape[0], dtype=np.bool_)
    for q in numba.prange(queries.shape[0]):
        px, py, pz = queries[q, 0], queries[q, 1], queries[q, 2]
        x0, x1 = axis_span(px, radius, ox, inv, nx)
        y0, y1 = axis_span(py, radius, oy, inv, ny)
        z0, z1 = axis_span(pz, radius, oz, inv, nz)
        hit = False
        for z in range(z0, z1 + 1):
            for y in range(y0, y1 + 1):
                row = (z * ny + y) * nx
                for k in range(start[row + x0], start[row + x1 + 1]):
                    j = order[k]
                    dx, dy, dz = centres[j, 0] - px, centres[j, 1] - py, centres[j, 2] - pz
                    if dx * dx + dy * dy + dz * dz <= r2:
                        hit = True
                        break
                if hit:
                    break
            if hit:
                break
        out[q] = hit
    return out


def view_opacity(
    positions, radius: float, points=None, samples: int = 256, dimensions: int = 3
) -> np.ndarray:
    """From each point, the fraction of all directions in which a bird blocks the view.

    Args:
        positions: (N, 3) float64, world units.
        radius: a bird's body radius, world units (> 0).
        points: (P, 3) where to look from; None: from each bird, which does not block itself.
        samples: directions, spread evenly over the sphere (the circle in a plane).
        dimensions: 2 for a planar flock (the xy plane): it looks around within its plane.

    Returns:
        (P,) or (N,) fractions in [0, 1]: 0 sees out everywhere, 1 sees only birds.
    """
    p = _checked(positions, radius)
    dims = _dimensions(dimensions)
    if points is None:
        eyes, own = p, np.arange(len(p))
    else:
        eyes = np.ascontiguousarray(np.asarray(points, dtype=np.float64).reshape(-1, 3))
        if not np.all(np.isfinite(eyes)):
            raise ValueError("points must be finite to measure opacity")
        own = np.full(len(eyes), -1)
    return _blocked(eyes, own, p, radius, even_directions(dims, samples))


@numba.njit(cache=True, parallel=True)
def _blocked(eyes, own, positions, radius, dirs):
    """(P,) the fraction of ``dirs`` along which a ray from each eye meets a sphere of ``radius``
    around a position (but its own, index ``own[e]``)."""
    r2 = radius * radius
    out = np.empty(eyes.shape[0])
    for e in numba.prange(eyes.shape[0]):
        ex, ey, ez = eyes[e, 0], eyes[e, 1], eyes[e, 2]
        blocked = 0
        for s in range(dirs.shape[0]):
            ux, uy, uz = dirs[s, 0], dirs[s, 1], dirs[s, 2]
            for j in range(positions.shape[0]):
                if j == own[e]:
                    continue
                dx, dy, dz = positions[j, 0] - ex, positions[j, 1] - ey, positions[j, 2] - ez
                t = dx * ux + dy * uy + dz * uz
                d2 = dx * dx + dy * dy + dz * dz
                # Inside the sphere, or ahead of the eye and passing within the radius of it.
                if d2 <= r2 or (t > 0.0 and d2 - t * t <= r2):
                    blocked += 1
                    break
        out[e] = blocked / dirs.shape[0]
    return out
