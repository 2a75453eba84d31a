"""The world drawn: objects lit by the sun, a grid on the ground, the flock's shadows on it.

:class:`Scenery` holds no simulation state: the renderer hands it the objects when they change
(:meth:`Scenery.set_objects`), the light and the fog once a frame (:meth:`Scenery.aim`), and
the flock and its time (:meth:`Scenery.update`). What it draws:

- the objects that stay put, as one mesh in world coordinates (one draw call however many);
  an arena object as the inside of a place: its near wall cut away by a vertical plane facing
  the camera (:func:`cut_plane`), so that its far walls, its roof and its floor frame the
  flock; what reaches out through it (a stalactite's root) ends at its wall
  (:func:`~flock3d.look.world.pull_inside`);
- each moving object as a mesh of its own, placed each frame by its frame at the simulated time;
- on planes and heightfields (the ground) a grid (``view.ground_grid``: its opacity), every
  fifth line brighter, and the ground shaded by its height and slope
  (:func:`~flock3d.look.world.ground_colors`);
- the objects' shadows on the ground, cast away from the sun
  (:mod:`~flock3d.viewer.castshadows`);
- under each boid and predator a soft dark disc where the vertical through it meets the ground
  (:func:`~flock3d.look.world.ground_under`), larger and fainter the higher it flies (of a
  flock of more than :data:`MAX_SHADOWS`, every k-th).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from vispy import scene

from flock3d.core.objects import Object, shape_of
from flock3d.look.world import (
    Frames,
    Ground,
    ObjectMesh,
    cast_shadow,
    ground_colors,
    ground_of,
    ground_under,
    is_ground,
    object_color,
    object_mesh,
    pull_inside,
    ray_distances,
    shape_key,
)
from flock3d.viewer.castshadows import CastShadows
from flock3d.viewer.visuals import Objects, Shadows

__all__ = [
    "Scenery", "WorldArrays", "sunlight", "cut_plane", "grid_spacing", "SHADOW_RADIUS", "SHADOW_DARKNESS"
]  # fmt: skip

SHADOW_RADIUS = 0.45
"""A shadow's radius on the ground under a boid flying low, body lengths."""
SHADOW_DARKNESS = 0.55
"""How dark a shadow is under a boid flying low (its opacity at the middle)."""
SHADOW_SPREAD = 0.02
"""A shadow's radius grows by this much per unit of height (a soft sun)."""
CAST_SEGMENTS = 16
"""Segments around a round object as its shadow is cast: a shadow's outline needs fewer than the
object's own (and each triangle costs software OpenGL a setup however small)."""
MAX_SHADOWS = 2000
"""Shadows drawn at most: of a larger flock every k-th boid's (their blending is most of their
cost, and under a dense flock the ground is as dark either way)."""


def grid_spacing(size: float) -> float:
    """The ground grid's spacing for a world of ``size`` units: a round number (1, 2 or 5 times
    a power of ten) near a sixth of it."""
    target = max(size, 1e-9) / 6.0
    power = 10.0 ** math.floor(math.log10(target))
    return power * min((1.0, 2.0, 5.0, 10.0), key=lambda m: abs(math.log(m * power / target)))


CUT_DEPTH = 0.5
"""The cutaway through an arena object removes its near wall up to this share of the way from
its side nearest the camera to its middle."""


def cut_plane(centre, half, eye, up) -> tuple[float, float, float, float]:
    """The cutaway through an arena object of box ``centre`` and half sides ``half``: a vertical
    plane facing the camera at ``eye`` (world units; ``up`` unit), :data:`CUT_DEPTH` of the way
    from the box's middle to its side nearest the camera. What lies on the camera's side of it,
    where ``dot(normal, p) > offset``, is not drawn. Returns ``(*normal, offset)``; seen from
    straight above, nothing is cut (the normal is zero and the offset 1)."""
    u = np.asarray(up, np.float64)
    centre = np.asarray(centre, np.float64)
    towards = np.asarray(eye, np.float64) - centre
    towards = towards - (towards @ u) * u
    length = float(np.linalg.norm(towards))
    if length < 1e-9:
        return (0.0, 0.0, 0.0, 1.0)
    normal = towards / length
    reach = float(np.abs(normal) @ np.asarray(half, np.float64))  # the box's half depth along the normal
    return (*(float(x) for x in normal), float(normal @ centre) + (1.0 - CUT_DEPTH) * reach)


class WorldArrays(NamedTuple):
    """What :class:`Scenery` draws of a set of objects (:meth:`Scenery.arrays`), made without OpenGL."""

    objects: tuple[Object, ...]
    extent: float
    """How far planes are drawn each way from their origins, world units."""
    meshes: dict[Object, ObjectMesh]
    """Each shape's triangles in its scaled local frame, by :func:`~flock3d.look.world.shape_key`."""
    grounds: dict[Object, Ground]
    """The grounds' heights, by shape key."""
    fills: dict[str | int, tuple]
    """Each still visual's mesh (by its attribute's name) and each moving object's (by its index):
    the arguments of :meth:`~flock3d.viewer.visuals.ObjectsVisual.set_mesh`."""
    cut_box: tuple[np.ndarray, np.ndarray] | None
    """The arena objects' box where they start: its centre and half sides, world units."""
    cast: tuple | None
    """The still objects' shadows: ((towards the sun, up), the meshes cast by index, (points,
    normals)); None when no light was given or nothing has a ground to fall on."""


class _Placed(NamedTuple):
    """Objects, their meshes and their frames (origins (K, 3), rotations (K, 3, 3)) at one time."""

    objects: Sequence[Object]
    meshes: Sequence[ObjectMesh]
    origins: np.ndarray
    rotations: np.ndarray

    def vertices(self, k: int) -> np.ndarray:
        """(V, 3) object ``k``'s vertices in the world."""
        return self.origins[k] + self.meshes[k].vertices.astype(np.float64) @ self.rotations[k].T

    def triangles(self, k: int) -> np.ndarray:
        """(F, 3, 3) object ``k``'s triangles in the world."""
        mesh = self.meshes[k]
        corners = mesh.vertices.astype(np.float64)[mesh.faces.astype(np.int64)]
        return self.origins[k] + corners @ self.rotations[k].T

    def fill(self, indices: list[int], placed: bool, walls: np.ndarray | None = None) -> tuple:
        """One visual's mesh of objects ``indices``: in world coordinates at their frames when
        ``placed`` (still objects), else in their own (moved by ``u_model``); those reaching out
        through ``walls`` (T, 3, 3), the arena objects' triangles (a cave's roof), drawn inside
        them."""
        parts = []
        base = 0
        for k in indices:
            mesh = self.meshes[k]
            v, n = mesh.vertices.astype(np.float64), mesh.normals.astype(np.float64)
            grid = v[:, [0, 2]] if mesh.ground else np.zeros((len(v), 2))
            if placed:
                rotation = self.rotations[k]
                v, n = self.origins[k] + v @ rotation.T, n @ rotation.T
                if walls is not None and not mesh.ground:
                    v = pull_inside(v, walls)
            color = np.broadcast_to(object_color(self.objects[k]), v.shape)
            if mesh.ground:
                color = ground_colors(mesh, color[0])
            ground = np.full(len(v), float(mesh.ground))
            parts.append((v, n, mesh.faces.astype(np.int64) + base, color, grid, ground))
            base += len(v)
        if not parts:
            return np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3), np.uint32), np.zeros((0, 3))
        return tuple(np.concatenate(column) for column in zip(*parts, strict=True))

    def cast(
        self, casting: dict[int, ObjectMesh], grounds: list[Ground], light, up
    ) -> tuple[np.ndarray, np.ndarray]:
        """The shadows (points, normals) of the objects in ``casting`` (their meshes cast, by index)
        on ``grounds``, away from ``light`` (towards the sun) under ``up``."""
        parts = [np.zeros((0, 3)), np.zeros((0, 3))]
        for k, mesh in casting.items():
            v = self.origins[k] + mesh.vertices.astype(np.float64) @ self.rotations[k].T
            points, normals = cast_shadow(v, mesh.faces, grounds, self.origins, self.rotations, light, up)
            parts = [np.concatenate([parts[0], points]), np.concatenate([parts[1], normals])]
        return parts[0], parts[1]


def sunlight(towards, up) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The light as :class:`Scenery` keeps it: (towards the sun, the world's up), each a tuple of
    3 floats. Still objects' shadows are cast again when it changes."""
    return tuple(float(x) for x in towards), tuple(float(x) for x in up)


def _casters(objects: Sequence[Object], moving: bool) -> list[int]:
    """The objects that cast shadows (not the ground, not an arena), still or moving."""
    return [
        k
        for k, o in enumerate(objects)
        if not is_ground(o) and o.role != "arena" and (o.motion is not None) == moving
    ]


def _casting_mesh(o: Object, mesh: ObjectMesh) -> ObjectMesh:
    """The mesh ``o``'s shadow is cast from: a round shape's coarser (:data:`CAST_SEGMENTS`)."""
    return object_mesh(o, 0.0, CAST_SEGMENTS) if shape_of(o).round else mesh


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
        self.still = self._visual(arena=False, grid=False)
        self.still_closed = self._visual(arena=False, grid=False, closed=True)  # back faces culled
        self.still_ground = self._visual(arena=False)
        # After what stands on it: where an object is in front of the ground, the ground's pixels
        # fail the depth test before they are shaded (most of a frame in software OpenGL).
        self.still_ground.order = -9
        self.still_arena = self._visual(arena=True, cut=True, grid=False)
        self.moving: dict[int, Objects] = {}
        self.shadows = Shadows(parent=view.scene)
        self.shadows.order = 3  # after the ground it lies on
        self.shadows.visible = False
        self.cast = CastShadows(parent=view.scene)
        self.cast.order = 2  # after the ground it lies on, before the flock's
        self.cast.visible = False
        self._cast_still: tuple[np.ndarray, np.ndarray] | None = None
        self._casting: dict[int, ObjectMesh] = {}
        """By object: the coarser mesh its shadow is cast from."""
        self._cast_light: tuple | None = None
        self._uniforms: dict = {}
        self.grid_opacity = 0.2
        """The ground's grid's opacity (``view.ground_grid``)."""
        self._cut_box: tuple[np.ndarray, np.ndarray] | None = None
        """The arena objects' box where they start: its centre and half sides, world units."""
        self._primed: list = []
        """The visuals :meth:`prime` showed with nothing to draw, until :meth:`unprime`."""

    def _visual(self, arena: bool, cut: bool = False, grid: bool = True, closed: bool = False) -> Objects:
        visual = Objects(arena=arena, cut=cut, grid=grid, closed=closed, parent=self.view.scene)
        visual.order = -10  # opaque, before the flock: the boids' pixels then fail the depth test less
        visual.visible = False
        return visual

    def set_objects(self, objects: Sequence[Object], extent: float) -> None:
        """Draw ``objects`` (valid); planes reach ``extent`` units each way from their origins."""
        self.show(self.arrays(objects, extent))

    def arrays(self, objects: Sequence[Object], extent: float, light: tuple | None = None) -> WorldArrays:
        """What drawing ``objects`` (valid) takes, planes reaching ``extent`` units each way from
        their origins, and their shadows when the sun is ``light`` (towards the sun and the
        world's up, as :func:`sunlight` gives them), made without OpenGL and without changing what
        is drawn: a window makes a scene's beside its event loop as the scene opens, and
        :meth:`show` draws them."""
        objects = tuple(objects)
        cached = self._meshes if extent == self.extent else {}  # shapes already made keep their meshes
        grounds_cached = self._ground_of if extent == self.extent else {}
        keys = [shape_key(o) for o in objects]
        meshes, grounds = {}, {}
        for key, o in zip(keys, objects, strict=True):
            if key not in meshes:
                meshes[key] = cached[key] if key in cached else object_mesh(o, extent)
            if is_ground(o) and key not in grounds:
                grounds[key] = grounds_cached[key] if key in grounds_cached else ground_of(o, -1, extent)
        placed = _Placed(objects, [meshes[key] for key in keys], *Frames(objects).at(0.0))
        arenas = [k for k, o in enumerate(objects) if o.role == "arena"]
        cut_box = None
        if arenas:
            corners = np.concatenate([placed.vertices(k) for k in arenas])
            cut_box = 0.5 * (corners.min(axis=0) + corners.max(axis=0)), 0.5 * np.ptp(corners, axis=0)
        still = [k for k, o in enumerate(objects) if o.motion is None and o.role != "arena"]
        walls = np.concatenate([placed.triangles(k) for k in arenas]) if arenas else None
        objects_of = {  # the still objects that are not the ground, by whether they are closed
            closed: [k for k in still if not is_ground(objects[k]) and placed.meshes[k].closed == closed]
            for closed in (False, True)
        }
        fills = {
            "still_arena": placed.fill([k for k in arenas if objects[k].motion is None], True),
            "still": placed.fill(objects_of[False], True, walls),
            "still_closed": placed.fill(objects_of[True], True, walls),
            "still_ground": placed.fill([k for k in still if is_ground(objects[k])], True),
        }
        for k, o in enumerate(objects):
            if o.motion is not None:
                fills[k] = placed.fill([k], False)
        cast = None
        if light is not None and grounds:
            ground_list = [grounds[key]._replace(index=k) for k, key in enumerate(keys) if key in grounds]
            casting = {k: _casting_mesh(objects[k], meshes[keys[k]]) for k in _casters(objects, moving=False)}
            cast = light, casting, placed.cast(casting, ground_list, *light)
        return WorldArrays(objects, extent, meshes, grounds, fills, cut_box, cast)

    def show(self, world: WorldArrays) -> None:
        """Draw the objects of ``world`` (:meth:`arrays`)."""
        self._primed = []  # each visual drawn from here shows what it has
        self._meshes, self._ground_of, self.extent = world.meshes, world.grounds, world.extent
        self.objects = world.objects
        keys = [shape_key(o) for o in self.objects]
        self.meshes = [self._meshes[key] for key in keys]
        self.frames = Frames(self.objects)
        self._grounds = [
            self._ground_of[key]._replace(index=k) for k, key in enumerate(keys) if key in self._ground_of
        ]
        self.origins, self.rotations = self.frames.at(0.0)
        for visual in self.moving.values():
            visual.parent = None
        self.moving = {}
        self._cut_box = world.cut_box
        for name in ("still_arena", "still", "still_closed", "still_ground"):
            getattr(self, name).set_mesh(*world.fills[name])
        for k in self.frames.moving:
            arena = self.objects[k].role == "arena"
            visual = self.moving[k] = self._visual(
                arena=arena, cut=arena, grid=is_ground(self.objects[k]), closed=self.meshes[k].closed
            )
            visual.set_mesh(*world.fills[k])
        self._cast_still = self._cast_light = None
        self._casting = {}
        if world.cast is not None:  # made for the light of the scene's sky: the first frame's
            self._cast_light, casting, self._cast_still = world.cast
            self._casting = dict(casting)
            self.cast.set_triangles(*self._cast_still)  # the moving objects' join them each frame
        for visual in self._visuals():
            visual.uniforms.update(self._uniforms)

    def prime(self) -> None:
        """Show each visual this scene hides (no objects, no ground under the flock) with one
        triangle of no area, until :meth:`unprime`: drawn, it draws no pixel but builds its
        shaders, which otherwise fall in the first frame of the first world opened (in software
        OpenGL 10-15 ms each, and that frame the window's longest)."""
        nothing, face = np.zeros((3, 3)), np.array([[0, 1, 2]])
        primed = []
        for visual in (self.still, self.still_closed, self.still_ground, self.still_arena):
            if not visual.visible:  # as ground (with its grid): its branch of the shader runs too
                visual.set_mesh(nothing, nothing, face, nothing, np.zeros((3, 2)), np.ones(3))
                primed.append(visual)
        if not self._grounds:  # the flock's shadows and the objects' fall on the ground
            self.shadows.set_shadows(np.zeros((1, 3)), np.array([[0.0, 1.0, 0.0]]), np.zeros(1), np.zeros(1))
            self.cast.set_triangles(nothing, np.tile([0.0, 1.0, 0.0], (3, 1)))
            primed += [self.shadows, self.cast]
        self._primed = primed

    def unprime(self) -> None:
        """Hide again what :meth:`prime` showed, unless objects were shown since (their own)."""
        for visual in self._primed:
            visual.visible = False
        self._primed = []

    def _visuals(self) -> list[Objects]:
        return [self.still, self.still_closed, self.still_ground, self.still_arena, *self.moving.values()]

    def _cast(self, indices: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The shadows of objects ``indices`` where they are now, under the light of the last aim."""
        for k in indices:
            if k not in self._casting:
                self._casting[k] = _casting_mesh(self.objects[k], self.meshes[k])
        placed = _Placed(self.objects, self.meshes, self.origins, self.rotations)
        casting = {k: self._casting[k] for k in indices}
        return placed.cast(casting, self._grounds, self._uniforms["u_light"], self._uniforms["u_up"])

    # -- per frame --------------------------------------------------------------------------

    def aim(self, light, up, eye, sky, look, fog, cell: float) -> None:
        """The light and the fog: ``light`` towards the sun and ``up`` (unit vectors), the
        camera's ``eye``, the sky's colours at the top and bottom of the picture (the fog takes
        the sky's colour behind it), the sky's light (``look``, a
        :class:`~flock3d.look.sky.SkyLook`), the fog's depths (clip w where it starts and
        where it hides everything) and the ground grid's spacing, world units."""
        top, bottom = sky
        light, up = sunlight(light, up)
        self._uniforms = dict(
            u_light=light,
            u_up=up,
            u_eye=tuple(float(x) for x in eye),
            u_sky_top=tuple(float(x) for x in top),
            u_sky_bottom=tuple(float(x) for x in bottom),
            u_fog=tuple(float(x) for x in fog),
            u_cell=float(cell),
            u_sunlight=tuple(float(x) for x in look.sunlight),
            u_skylight=tuple(float(x) for x in look.ambient),
            u_grid=float(self.grid_opacity),
        )
        for visual in self._visuals():
            visual.uniforms.update(self._uniforms)
        if self._cut_box is not None:
            cut = cut_plane(*self._cut_box, eye, up)
            for visual in self._visuals():
                if "u_cut" in visual.uniforms:  # the visuals made with a cut
                    visual.uniforms["u_cut"] = cut
        self.shadows.uniforms["u_fog"] = self._uniforms["u_fog"]
        self.cast.uniforms["u_fog"] = self._uniforms["u_fog"]

    def update(self, time: float, bodies: Sequence[tuple[np.ndarray, float]], up) -> None:
        """Place the moving objects at simulated ``time`` (s), and the shadows of ``bodies``:
        (positions (N, 3), body length) pairs (the boids, the predators), under the world's ``up``."""
        if self.frames.moving:
            self.origins, self.rotations = self.frames.at(time)
            for k, visual in self.moving.items():
                visual.set_frame(self.origins[k], self.rotations[k])
        if not self._grounds:
            if not self._primed:
                self.shadows.visible = self.cast.visible = False
            return
        self._update_cast()
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

    def _update_cast(self) -> None:
        """The objects' shadows: the still ones' when the sun or the objects changed, the
        moving ones' every frame."""
        light = (self._uniforms.get("u_light"), self._uniforms.get("u_up"))
        if light[0] is None:
            return
        moving = _casters(self.objects, moving=True)
        if self._cast_still is None or light != self._cast_light:
            self._cast_still, self._cast_light = self._cast(_casters(self.objects, moving=False)), light
        elif not moving:
            return  # the shadows on the GPU are still right
        points, normals = self._cast_still
        if moving:
            more = self._cast(moving)
            points, normals = np.concatenate([points, more[0]]), np.concatenate([normals, more[1]])
        self.cast.set_triangles(points, normals)

    # -- picking ----------------------------------------------------------------------------

    def triangles(self, k: int) -> np.ndarray:
        """(F, 3, 3) object ``k``'s triangles in the world where it is drawn now."""
        return _Placed(self.objects, self.meshes, self.origins, self.rotations).triangles(k)

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
