"""Line segments outlining the world: the arena, the obstacles, the path and boxes around what is
selected, as ``(2K, 3)`` float32 endpoints, each pair one segment (numpy only).

The viewer draws them as thin lines (:mod:`flock3d.viewer.guides`).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from flock3d.core.params import Params
from flock3d.look.camera import BOX_SHAPES

__all__ = ["ring", "sphere_lines", "box_lines", "arena_lines", "obstacle_lines", "path_lines"]


def ring(centre, a, b, radius: float, points: int = 128) -> np.ndarray:
    """Segments (2K, 3) of a circle of ``radius`` around ``centre`` in the plane of unit vectors a, b."""
    t = np.linspace(0.0, 2.0 * np.pi, points + 1)
    circle = np.asarray(centre, np.float64) + radius * (np.outer(np.cos(t), a) + np.outer(np.sin(t), b))
    return np.repeat(circle, 2, axis=0)[1:-1].astype(np.float32)


def sphere_lines(
    radius: float, center, meridians: int = 6, parallels: int = 3, points: int = 48
) -> np.ndarray:
    """Line segments (2K, 3) tracing meridians and parallels of a sphere (for obstacles)."""
    c = np.asarray(center, dtype=np.float64)
    segments = []
    for k in range(meridians):
        phi = np.pi * k / meridians
        segments.append(ring(c, (0, 1, 0), (np.cos(phi), 0, np.sin(phi)), radius, points))
    for k in range(1, parallels + 1):
        lat = -np.pi / 2 + np.pi * k / (parallels + 1)
        segments.append(
            ring(c + (0, radius * np.sin(lat), 0), (1, 0, 0), (0, 0, 1), radius * np.cos(lat), points)
        )
    return np.vstack(segments)


def box_lines(half, center, planar: bool) -> np.ndarray:
    """Segments of the edges of a box of half side lengths ``half`` (x, y, z) (a rectangle when planar)."""
    c = np.asarray(center, dtype=np.float64)
    if planar:
        corners = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], dtype=np.float64)
        edges = [(0, 1), (1, 2), (2, 3), (3, 0)]
    else:
        corners = np.array(list(itertools.product((-1, 1), repeat=3)), dtype=np.float64)
        edges = [(a, b) for a in range(8) for b in range(a + 1, 8) if np.sum(corners[a] != corners[b]) == 1]
    return (corners[np.array(edges).ravel()] * half + c).astype(np.float32)


def arena_lines(params: Params, eye: np.ndarray | None = None, into: np.ndarray | None = None) -> np.ndarray:
    """Segments outlining the arena for its shape (empty for open space).

    A sphere is drawn as its equator and its rim as seen from ``eye`` (or, without an
    eye, the great circle across the viewing direction ``into``): one quiet circle
    around the flock instead of a wireframe globe.
    """
    planar = params.dimensions == 2
    c = np.asarray(params.arena_center, np.float64)
    r = params.arena_radius
    if params.arena_shape == "sphere":
        if planar:
            return ring(c, (1, 0, 0), (0, 1, 0), r)
        parts = [ring(c, (1, 0, 0), (0, 0, 1), r)]
        rim = _sphere_rim(c, r, eye, into)
        if rim is not None:
            parts.append(rim)
        return np.vstack(parts)
    if params.arena_shape in BOX_SHAPES:
        return box_lines(np.asarray(params.half_extents, np.float64), c, planar)
    return np.zeros((0, 3), np.float32)


def _sphere_rim(c: np.ndarray, r: float, eye, into) -> np.ndarray | None:
    if eye is not None:
        to_eye = np.asarray(eye, np.float64) - c
        d = float(np.linalg.norm(to_eye))
        if d <= r * 1.001:
            return None  # inside the sphere: no rim to see
        axis = to_eye / d
        centre, radius = c + axis * (r * r / d), r * math.sqrt(1.0 - (r / d) ** 2)
    elif into is not None:
        axis = -np.asarray(into, np.float64) / np.linalg.norm(into)
        centre, radius = c, r
    else:
        return None
    a = np.cross(axis, (0.0, 1.0, 0.0) if abs(axis[1]) < 0.9 else (1.0, 0.0, 0.0))
    a /= np.linalg.norm(a)
    return ring(centre, a, np.cross(axis, a), radius)


def obstacle_lines(params: Params) -> np.ndarray:
    """Segments of a light wireframe around each obstacle (circles in a planar flock)."""
    if params.dimensions == 2:
        parts = [ring(o.center, (1, 0, 0), (0, 1, 0), o.radius) for o in params.obstacles]
    else:
        parts = [sphere_lines(o.radius, o.center) for o in params.obstacles]
    return np.vstack(parts) if parts else np.zeros((0, 3), np.float32)


def path_lines(params: Params) -> np.ndarray:
    """Segments joining the waypoints of the path in a closed loop."""
    if params.path is None:
        return np.zeros((0, 3), np.float32)
    points = np.asarray(params.path.points, dtype=np.float32)
    return np.stack([points, np.roll(points, -1, axis=0)], axis=1).reshape(-1, 3)
