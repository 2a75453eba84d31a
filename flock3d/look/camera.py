"""Where the scene's camera looks from: the view hints (``[view]``) as a point and a distance.

The viewer's cameras and the exported camera (:mod:`flock3d.io.export`) take their framing
from here, so that an exported scene opens where the viewer opens it.
"""

from __future__ import annotations

import math

import numpy as np

from flock3d.core.params import Params

__all__ = [
    "BOX_SHAPES",
    "CAMERA_FOV",
    "FOLLOW_EASE",
    "FollowDistance",
    "arena_bounds",
    "flock_extent",
    "fog_extent",
    "frame_distance",
    "view_angles",
    "view_direction",
    "world_extent",
]

CAMERA_FOV = 45.0
"""Vertical field of view of every camera, degrees."""
BOX_SHAPES = ("box", "periodic", "wrap")
"""Arena shapes that are boxes (of half side lengths ``Params.half_extents``)."""


def frame_distance(radius: float, fov_deg: float = CAMERA_FOV, margin: float = 1.12) -> float:
    """Camera distance at which a sphere of ``radius`` fills the view (with a margin)."""
    return margin * radius / math.sin(math.radians(fov_deg) / 2.0)


def view_direction(azimuth: float, elevation: float, planar: bool = False) -> np.ndarray:
    """(3,) unit vector from the target towards the camera, world up +Y, as the viewer's turntable
    camera (vispy's, up +Y) places it: the one convention of the viewer, renders and exports.

    Args:
        azimuth: degrees around the vertical axis, 0 on -X, 90 on +Z.
        elevation: degrees above the horizon.
        planar: a planar flock (in a z = const plane) is watched from +Z, whatever the angles.
    """
    if planar:
        return np.array([0.0, 0.0, 1.0])
    az, el = math.radians(azimuth), math.radians(elevation)
    return np.array([-math.cos(az) * math.cos(el), math.sin(el), math.sin(az) * math.cos(el)])


def view_angles(direction: np.ndarray) -> tuple[float, float]:
    """(azimuth, elevation), degrees: the inverse of :func:`view_direction` for a unit
    ``direction`` from the target towards the camera; the elevation at most 89.9 degrees either
    way, where the turntable's azimuth still means something."""
    elevation = math.degrees(math.asin(min(1.0, max(-1.0, float(direction[1])))))
    azimuth = math.degrees(math.atan2(float(direction[2]), -float(direction[0])))
    return azimuth, min(89.9, max(-89.9, elevation))


def world_extent(params: Params) -> tuple[np.ndarray, float]:
    """Centre and radius of the world a camera frames: the arena's (:func:`arena_bounds`), or in
    open space an arena object's bounding sphere about its origin (where it starts)."""
    arena = next((o for o in params.objects if o.role == "arena"), None)
    if params.arena_shape != "none" or arena is None:
        return np.asarray(params.arena_center, np.float64), arena_bounds(params)
    from flock3d.look.world import Frames, object_mesh

    origins, rotations = Frames([arena]).at(0.0)
    vertices = origins[0] + object_mesh(arena, 0.0).vertices @ rotations[0].T
    centre = 0.5 * (vertices.min(axis=0) + vertices.max(axis=0))
    return centre, float(np.max(np.linalg.norm(vertices - centre, axis=1)))


def fog_extent(params: Params, centre: np.ndarray, radius: float) -> tuple[np.ndarray, float]:
    """The sphere the fog leaves clear: the world's (``centre``, ``radius``: :func:`world_extent`),
    grown, where the ground lies farther below it, to reach the ground (each plane's or
    heightfield's base, along its up axis). A small arena high above the ground would otherwise
    lose the ground in the fog, which begins at the sphere's far side."""
    from flock3d.look.world import Frames, is_ground

    grounds = [o for o in params.objects if is_ground(o)]
    if not grounds:
        return centre, radius
    origins, rotations = Frames(grounds).at(0.0)
    # A plane's or heightfield's up is its frame's +Y: the distance to its base is along it.
    depths = np.abs(np.einsum("ki,ki->k", np.asarray(centre, np.float64) - origins, rotations[:, :, 1]))
    return centre, max(radius, float(depths.max()))


def arena_bounds(params: Params) -> float:
    """Radius of the smallest sphere about the arena's centre that holds the whole arena: a
    box's half diagonal (in its plane when planar), so that a camera framing it shows every
    corner from any side."""
    if params.arena_shape in BOX_SHAPES:
        half = np.asarray(params.half_extents, np.float64)[: 2 if params.dimensions == 2 else 3]
        return float(np.linalg.norm(half))
    return params.arena_radius


def flock_extent(points: np.ndarray, boid_size: float) -> tuple[np.ndarray, float]:
    """Centre of the flock at ``points`` (N >= 1, 3, finite) and the radius holding 90 % of it, at
    least 4 boid lengths: what a camera following the flock frames."""
    centre = points.mean(axis=0)
    spread = float(np.percentile(np.linalg.norm(points - centre, axis=1), 90))
    return centre, max(spread, 4.0 * boid_size) if math.isfinite(spread) else 4.0 * boid_size


#: The share of the way a following camera's distance moves, each frame, towards the distance
#: that frames the flock: smooth, yet the flock's spread is caught within a few frames.
FOLLOW_EASE = 0.15


class FollowDistance:
    """The distance of a camera that follows the flock, frame after frame: eased towards the
    distance that frames it (:func:`frame_distance` of its radius, :func:`flock_extent`), so that
    a flock that spreads stays in view and one that gathers stays large, times the zoom the viewer
    chose. A distance changed by someone else since the last frame (a mouse wheel) is that zoom:
    it is kept, and the framing follows the flock from there.
    """

    def __init__(self) -> None:
        self._last: float | None = None
        self.zoom = 1.0

    def next(self, radius: float, current: float | None = None) -> float:
        """The camera's distance this frame, for a flock of ``radius``; ``current``: the camera's
        distance now (None, or the last one given: nobody zoomed)."""
        wanted = frame_distance(radius)
        last = self._last
        if last is not None and current is not None and math.isfinite(current) and current > 0.0:
            if current != last:
                self.zoom *= current / last
            last = current
        target = self.zoom * wanted
        self._last = target if last is None else last + FOLLOW_EASE * (target - last)
        return self._last
