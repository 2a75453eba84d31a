"""The world drawn: objects lit by the sun, a grid on the ground, the flock's shadows on it.

:class:`Scenery` holds no simulation state: the renderer hands it the objects when they change
(:meth:`Scenery.set_objects`), the light and the fog once a frame (:meth:`Scenery.aim`), and
the flock and its time (:meth:`Scenery.update`). What it draws:

- the objects that stay put, as one mesh in world coordinates (one draw call however many);
  an arena object seen from outside as its far inner wall (the near half culled);
- each moving object as a mesh of its own, placed each frame by its frame at the simulated time;
- on planes and heightfields (the ground) a grid, every fifth line brighter;
- under each boid and predator a soft dark disc where the vertical through it meets the ground
  (:func:`~flock3d.look.world.ground_under`), larger and fainter the higher it flies (of a
  flock of more than :data:`MAX_SHADOWS`, every k-th).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from vispy import scene

from flock3d.core.terms.objects import Object
from flock3d.look.world import (
    Frames,
    Ground,
    ObjectMesh,
    ground_of,
    ground_under,
    is_ground,
    object_color,
    object_mesh,
    ray_distances,
    shape_key,
)
from flock3d.viewer.visuals import Objects, Shadows

__all__ = ["Scenery", "grid_spacing", "SHADOW_RADIUS", "SHADOW_DARKNESS"]

SHADOW_RADIUS = 0.45
"""A shadow's radius on the ground under a boid flying low, body lengths."""
SHADOW_DARKNESS = 0.55
"""How dark a shadow is under a boid flying low (its opacity at the middle)."""
SHADOW_SPREAD = 0.02
"""A shadow's radius grows by this much per unit of height (a soft sun)."""
MAX_SHADOWS = 2000
"""Shadows drawn at most: of a larger flock every k-th boid's (their blending is most of their
cost, and under a dense flock the ground is as dark either way)."""


def grid_spacing(size: float) -> float:
    """The ground grid's spacing for a world of ``size`` units: a round number (1, 2 or 5 times
    a power of ten) near a sixth of it."""
    target = max(size, 1e-9) / 6.0
    power = 10.0 ** math.floor(math.log10(target))
    return power * min((1.0, 2.0, 5.0, 10.0), key=lambda m: abs(math.log(m * power / target)))


class Scenery:
    """The objects, the ground's grid and the shadows in a ``ViewBox`` (see the module docstring).

    Attributes:
        objects: the objects drawn.
        meshes: each object's triangles in its scaled local frame.
    """

    def __init__(self, view: scene.ViewBox) -> None:
        self.view = view
        self.objects: tuple[Object, ...] = ()
        self.meshes: list[ObjectMesh] = []
        self.frames = Frames(())
        self._grounds = []
        self.origins, self.rotations = self.frames.at(0.0)
        """Each object's frame as drawn now: (K, 3) origins and (K, 3, 3) rotations."""
        # By shape_key: an object moved, turned or recoloured keeps its triangles and heights.
        self._meshes: dict[Object, ObjectMesh] = {}
        self._ground_of: dict[Object, Ground] = {}
        self.extent = math.nan
        """How far planes are drawn each way from their origins, world units."""
        self.still = self._visual(arena=False)
        self.still_arena = self._visual(arena=True)
        self.moving: dict[int, Objects] = {}
        self.shadows = Shadows(parent=view.scene)
        self.shadows.order = 3  # after the ground it lies on
        self.shadows.visible = False
        self._uniforms: dict = {}

    def _visual(self, arena: bool) -> Objects:
        visual = Objects(arena=arena, parent=self.view.scene)
        visual.order = -10  # opaque, before the flock: the boids' pixels then fail the depth test less
        visual.visible = False
        return visual

    def set_objects(self, objects: Sequence[Object], extent: float) -> None:
        """Draw ``objects`` (valid); planes reach ``extent`` units each way from their origins."""
        if extent != self.extent:
            self._meshes, self._ground_of, self.extent = {}, {}, extent
        self.objects = tuple(objects)
        keys = [shape_key(o) for o in self.objects]
        for key, o in zip(keys, self.objects, strict=True):
            if key not in self._meshes:
                self._meshes[key] = object_mesh(o, extent)
            if is_ground(o) and key not in self._ground_of:
                self._ground_of[key] = ground_of(o, -1, extent)
        self._meshes = {key: self._meshes[key] for key in keys}  # forget the shapes gone
        self._ground_of = {key: g for key, g in self._ground_of.items() if key in self._meshes}
        self.meshes = [self._meshes[key] for key in keys]
        self.frames = Frames(self.objects)
        self._grounds = [
            self._ground_of[key]._replace(index=k) for k, key in enumerate(keys) if key in self._ground_of
        ]
        self.origins, self.rotations = self.frames.at(0.0)
        for visual in self.moving.values():
            visual.parent = None
        self.moving = {}
        for arena, visual in ((False, self.still), (True, self.still_arena)):
            still = [
                k for k, o in enumerate(self.objects) if o.motion is None and (o.role == "arena") == arena
            ]
            self._fill(visual, still, placed=True)
        for k in self.frames.moving:
            visual = self.moving[k] = self._visual(arena=self.objects[k].role == "arena")
            self._fill(visual, [k], placed=False)
        for visual in self._visuals():
            visual.uniforms.update(self._uniforms)

    def _fill(self, visual: Objects, indices: list[int], placed: bool) -> None:
        """Put the meshes of objects ``indices`` into ``visual``: in world coordinates at their
        frames when ``placed`` (still objects), else in their own (moved by ``u_model``)."""
        parts = []
        base = 0
        for k in indices:
            mesh = self.meshes[k]
            v, n = mesh.vertices.astype(np.float64), mesh.normals.astype(np.float64)
            grid = v[:, [0, 2]] if mesh.ground else np.zeros((len(v), 2))
            if placed:
                rotation = self.rotations[k]
                v, n = self.origins[k] + v @ rotation.T, n @ rotation.T
            color = np.broadcast_to(object_color(self.objects[k]), v.shape)
            ground = np.full(len(v), float(mesh.ground))
            parts.append((v, n, mesh.faces.astype(np.int64) + base, color, grid, ground))
            base += len(v)
        if not parts:
            visual.set_mesh(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3), np.uint32), np.zeros((0, 3)))
            return
        visual.set_mesh(*(np.concatenate(column) for column in zip(*parts, strict=True)))

    def _visuals(self) -> list[Objects]:
        return [self.still, self.still_arena, *self.moving.values()]

    # -- per frame --------------------------------------------------------------------------

    def aim(self, light, up, eye, sky, fog, cell: float) -> None:
        """The light and the fog: ``light`` towards the sun and ``up`` (unit vectors), the
        camera's ``eye``, the sky's colours at the top and bottom of the picture (the fog takes
        the sky's colour behind it), the fog's depths (clip w where it starts and where it hides
        everything) and the ground grid's spacing, world units."""
        top, bottom = sky
        self._uniforms = dict(
            u_light=tuple(float(x) for x in light),
            u_up=tuple(float(x) for x in up),
            u_eye=tuple(float(x) for x in eye),
            u_sky_top=tuple(float(x) for x in top),
            u_sky_bottom=tuple(float(x) for x in bottom),
            u_fog=tuple(float(x) for x in fog),
            u_cell=float(cell),
        )
        for visual in self._visuals():
            visual.uniforms.update(self._uniforms)
        self.shadows.uniforms["u_fog"] = self._uniforms["u_fog"]

    def update(self, time: float, bodies: Sequence[tuple[np.ndarray, float]], up) -> None:
        """Place the moving objects at simulated ``time`` (s), and the shadows of ``bodies``:
        (positions (N, 3), body length) pairs (the boids, the predators), under the world's ``up``."""
        if self.frames.moving:
            self.origins, self.rotations = self.frames.at(time)
            for k, visual in self.moving.items():
                visual.set_frame(self.origins[k], self.rotations[k])
        if not self._grounds:
            self.shadows.visible = False
            return
        step = max(1, math.ceil(sum(len(p) for p, _ in bodies) / MAX_SHADOWS))
        points = np.concatenate([np.asarray(p, np.float64).reshape(-1, 3)[::step] for p, _ in bodies])
        sizes = np.concatenate([np.full(len(p[::step]), size) for p, size in bodies])
        feet, normals, heights = ground_under(points, self._grounds, self.origins, self.rotations, up)
        seen = np.isfinite(heights)
        heights, sizes = heights[seen], sizes[seen]
        radii = SHADOW_RADIUS * sizes + SHADOW_SPREAD * heights
        # Fainter as it spreads (by the radius's ratio, not the area's: high flocks still mark the ground).
        darkness = SHADOW_DARKNESS * (SHADOW_RADIUS * sizes / radii)
        self.shadows.set_shadows(feet[seen], normals[seen], radii, darkness)

    # -- picking ----------------------------------------------------------------------------

    def triangles(self, k: int) -> np.ndarray:
        """(F, 3, 3) object ``k``'s triangles in the world where it is drawn now."""
        mesh = self.meshes[k]
        corners = mesh.vertices.astype(np.float64)[mesh.faces.astype(np.int64)]
        return self.origins[k] + corners @ self.rotations[k].T

    def pick(self, origin, direction) -> tuple[int, float]:
        """The object the ray ``origin + s * direction`` meets first, as drawn now: (its index,
        s), or (-1, inf). An arena is met at its far wall (its near wall is not drawn)."""
        best, which = math.inf, -1
        for k, o in enumerate(self.objects):
            s = ray_distances(origin, direction, self.triangles(k))
            s = s[np.isfinite(s)]
            if len(s) and (hit := s.max() if o.role == "arena" else s.min()) < best:
                best, which = float(hit), k
        return which, best
