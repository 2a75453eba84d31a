"""The thin lines and markers over the world: the arena's outline, the obstacles, the guides
(the path and the attractors), the axes and the outline of what is selected for editing.

:class:`Guides` holds their visuals; :class:`~flock3d.viewer.renderer.FlockVisuals` says what to
show (the geometry is :mod:`flock3d.look.outlines`'s).
"""

from __future__ import annotations

import numpy as np
from vispy import scene

from flock3d.core.objects import shape_of
from flock3d.core.params import Params
from flock3d.look.boids import PREDATOR_SCALE
from flock3d.look.outlines import arena_lines, box_lines, obstacle_lines, path_lines
from flock3d.viewer.cameras import CameraFrame
from flock3d.viewer.visuals import Segments

__all__ = ["Guides", "segments", "ARENA_COLOR", "SELECTION_COLOR"]

ARENA_COLOR = (0.6, 0.72, 1.0, 0.16)
OBSTACLE_COLOR = (1.0, 0.62, 0.3, 0.55)
PATH_COLOR = (0.45, 1.0, 0.6, 0.6)
ATTRACTOR_COLOR = (1.0, 0.92, 0.4, 1.0)
SELECTION_COLOR = (0.35, 0.95, 1.0, 0.95)
"""The outline of what is selected for editing."""


def segments(view: scene.ViewBox, width: float) -> Segments:
    """Hidden line segments in ``view``, ``width`` canvas pixels wide, drawn over the boids."""
    lines = Segments(width=width, parent=view.scene)
    lines.order = 10
    lines.visible = False
    return lines


class Guides:
    """The outlines and markers of a :class:`~flock3d.viewer.renderer.FlockVisuals`.

    Args:
        view: the ViewBox to draw in.
        pixel_scale: canvas pixels per pixel of the final picture (line widths scale with it).

    Attributes:
        show_arena: whether the arena's outline is wanted (an open arena has none to show).
        show_guides: whether the path's waypoints and line and the attractors are shown.
    """

    def __init__(self, view: scene.ViewBox, pixel_scale: float) -> None:
        self.show_arena = False
        self.show_guides = False
        self.arena = segments(view, pixel_scale)
        self.obstacles = segments(view, pixel_scale)
        self.path = segments(view, 2.0 * pixel_scale)
        self.selected = segments(view, 2.0 * pixel_scale)
        # Markers without data break vispy's bounds computation, even hidden: start with a point.
        self.attractors = scene.visuals.Markers(pos=np.zeros((1, 3), np.float32), parent=view.scene)
        self.attractors.set_gl_state("translucent", depth_test=True)
        self.axes = scene.visuals.XYZAxis(parent=view.scene)

    def show(self, params: Params, frame: CameraFrame | None) -> None:
        """(Re)build the obstacles, path, attractors, axes and the arena's outline for ``params``."""
        self.obstacles.set_segments(obstacle_lines(params), OBSTACLE_COLOR)
        self.path.set_segments(path_lines(params), PATH_COLOR)
        n_attractors = len(params.attractors)
        points = [a.position for a in params.attractors] + list(params.path.points if params.path else [])
        if points:
            waypoints = len(points) - n_attractors
            colors = [ATTRACTOR_COLOR] * n_attractors + [PATH_COLOR] * waypoints
            sizes = np.array([16.0] * n_attractors + [9.0] * waypoints)
            self.attractors.set_data(
                np.asarray(points, np.float32), face_color=colors, edge_width=0, size=sizes, symbol="disc"
            )
        self.attractors.visible = bool(points) and self.show_guides
        self.path.visible = self.path.visible and self.show_guides
        self._place_axes(params)
        self.outline_arena(params, frame)

    def outline_arena(self, params: Params, frame: CameraFrame | None) -> None:
        """The arena's outline as seen from the camera's ``frame`` (a sphere's rim follows it)."""
        lines = arena_lines(params, frame.eye if frame else None, frame.into if frame else None)
        self.arena.set_segments(lines, ARENA_COLOR)
        self.arena.visible = self.show_arena and len(lines) > 0

    def _place_axes(self, params: Params) -> None:
        from vispy.visuals.transforms import STTransform

        r = 0.25 * params.arena_radius
        self.axes.transform = STTransform(scale=(r, r, r), translate=params.arena_center)

    def show_selection(self, selection, params: Params, predators: np.ndarray, boid_size: float, scenery,
                       world_radius: float) -> None:  # fmt: skip
        """Outline ``selection`` (kind, index) of :class:`~flock3d.viewer.editing.Selection` where
        it is drawn now (None: nothing): an object's box, or a box around an attractor or one of
        the ``predators`` (M, 3) as drawn ``boid_size`` long [world units]."""
        if selection is None:
            self.selected.visible = False
            return
        kind, k = selection
        if kind == "object":
            lines = _object_outline(scenery, params.objects[k], k, world_radius)
        else:
            centre = params.attractors[k].position if kind == "attractor" else predators[k]
            half = 1.5 * boid_size * (PREDATOR_SCALE if kind == "predator" else 1.0)
            lines = box_lines(np.full(3, half), centre, planar=False)
        self.selected.set_segments(lines, SELECTION_COLOR)


def _object_outline(scenery, obj, k: int, world_radius: float) -> np.ndarray:
    """The edges of object ``k``'s box in its own frame (a plane's: a square the world's size)."""
    mesh = scenery.meshes[k]
    low, high = mesh.vertices.min(axis=0).astype(float), mesh.vertices.max(axis=0).astype(float)
    if shape_of(obj).edgeless:
        r = world_radius
        low, high = np.array([-r, 0.0, -r]), np.array([r, 0.0, r])
    lines = box_lines(0.5 * (high - low), 0.5 * (high + low), planar=False)
    return scenery.origins[k] + lines @ scenery.rotations[k].T
