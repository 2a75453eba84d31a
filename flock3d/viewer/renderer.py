"""The flock's visuals in a vispy scene, shared by the viewer, the notebook and ``flock3d render``.

:class:`FlockVisuals` holds no simulation state: each frame the caller pushes a
flock state in with :meth:`FlockVisuals.update` (style guide: the viewer reads
state and never owns it). What it draws, back to front:

- a sky (``view.sky``: day, dusk or night, :mod:`flock3d.look.sky`): a vertical gradient
  and its sun's disc;
- the boids: one instanced mesh (:mod:`flock3d.viewer.visuals`); per boid only its
  position, heading, colour and bank angle go to the GPU, which builds its rotation,
  beats its wings and keeps it at least :data:`MIN_BOID_PIXELS` long on screen;
  far boids fade towards the sky (depth cue). Species with a mesh of their own
  (``mesh`` in a ``[[species]]`` table) get one instanced mesh per shape;
- predators, larger, in a saturated red, each ringed by a halo;
- optional fading trails (the last seconds of each path) and debug lines
  (each boid's velocity and its last step's steering);
- a quiet outline of the arena (the sphere's rim as seen from the camera and its
  equator; a box's edges), obstacles, and the guides: the path and attractors;
- the world's objects, lit by the sun and the sky and fading into the sky beyond the world,
  a grid on the ground and the flock's shadows on it (:mod:`flock3d.viewer.scenery`).

Light: one sun, fixed in the world (the sky's, where its disc is drawn), lights the objects and the
boids, whose faces are shaded by their normals: a boid banking into a turn catches the light or
loses it; the objects cast their shadows away from it.

Banking: a boid rolls into a turn as an aircraft does, by ``atan(a_lat / g)`` where
``a_lat`` is its acceleration across its heading in the last step (smoothed over
about :data:`BANK_SECONDS`); it is drawn only and never changes the model. In aerodynamic
flight (``flock.flight = "aerodynamic"``) the model banks the birds itself: the drawn roll is
the one their orientations carry.
"""

from __future__ import annotations

import itertools
import logging
import math
import threading
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from vispy import scene

from flock3d.core import compiling, elsewhere, quaternion
from flock3d.core.neighbors import count_within
from flock3d.core.objects import shape_of
from flock3d.core.params import Params
from flock3d.core.state import FlockState, up_axis
from flock3d.core.terms.flight import bank_angles
from flock3d.look.boids import PREDATOR_SCALE, mesh, speck, wing_beat
from flock3d.look.camera import (
    BOX_SHAPES,
    CAMERA_FOV,
    arena_bounds,
    flock_extent,
    frame_distance,
    world_extent,
)
from flock3d.look.colors import (
    PREDATOR_COLOR,
    SKY_BOTTOM,
    SKY_TOP,
    heading_colors,
    ramp_colors,
    species_colors,
    uniform_colors,
)
from flock3d.look.sky import sky_look
from flock3d.scene.schema import COLOR_MODES, ViewHints
from flock3d.viewer.cameras import CameraFrame, aim, camera_frame, new_camera
from flock3d.viewer.scenery import Scenery, grid_spacing
from flock3d.viewer.sun import Sun
from flock3d.viewer.visuals import Boids, Segments, Sky, Trails

__all__ = [
    "FlockVisuals",
    "ARENA_COLOR",
    "BOX_SHAPES",
    "CAMERA_FOV",
    "MIN_BOID_PIXELS",
    "frame_distance",
    "arena_lines",
    "arena_bounds",
    "world_extent",
    "sun_direction",
]

ARENA_COLOR = (0.6, 0.72, 1.0, 0.16)
OBSTACLE_COLOR = (1.0, 0.62, 0.3, 0.55)
PATH_COLOR = (0.45, 1.0, 0.6, 0.6)
ATTRACTOR_COLOR = (1.0, 0.92, 0.4, 1.0)
TRAIL_COLOR = (0.8, 0.88, 1.0, 0.55)
VELOCITY_COLOR = (0.45, 0.95, 1.0, 0.9)
STEERING_COLOR = (1.0, 0.55, 0.2, 0.9)
SELECTION_COLOR = (0.35, 0.95, 1.0, 0.95)
"""The outline of what is selected for editing."""
MIN_BOID_PIXELS = 7.0
"""A boid is drawn at least this many canvas pixels long, however far away."""
SPECK_PIXELS = 8.0
"""A boid shorter than this on screen is drawn with two triangles (a V with beating wing
tips) instead of its shape: at that size they look alike, and the vertex work, done on
one core by software OpenGL, is a fifth of the bird's."""
FOG_MAX = 0.4
"""The farthest boids take this much of the sky's colour (the depth cue)."""
GRAVITY = 9.81
"""For banking, world units/s^2."""
MAX_BANK = math.radians(70.0)
BANK_SECONDS = 0.15
"""Banking follows the lateral acceleration with this time constant (simulated seconds)."""
WING_BEATS_PER_SECOND = 3.0
WING_BEAT = 0.3
"""The bird's wing tips move this many body lengths up and down."""
TRAIL_SLOTS = 16
"""Samples per trail; half as many above TRAIL_FINE_BOIDS boids (each sample is 2N vertices a frame)."""
TRAIL_FINE_BOIDS = 5_000
VELOCITY_SECONDS = 0.4
"""A velocity line shows where the boid will be in this many seconds."""
STEERING_SECONDS2 = 0.05
"""A steering line is the acceleration times this (s^2): 20 units/s^2 draws one unit."""
SUN = (0.6, 0.5, 0.8)
"""Towards the sun in a world whose up is +y (x, up, z): low (27 degrees up), a dusk sun to match the sky."""
FOG_HORIZON = 4.0
"""Objects are lost in the fog this many world diameters beyond the far side of the world."""
PLANE_EXTENT = 25.0
"""A plane is drawn this many world radii (:func:`world_extent`) each way, far into the fog."""


def _ring(centre, a, b, radius: float, points: int = 128) -> np.ndarray:
    """Segments (2K, 3) of a circle of ``radius`` around ``centre`` in the plane of unit vectors a, b."""
    t = np.linspace(0.0, 2.0 * np.pi, points + 1)
    ring = np.asarray(centre, np.float64) + radius * (np.outer(np.cos(t), a) + np.outer(np.sin(t), b))
    return np.repeat(ring, 2, axis=0)[1:-1].astype(np.float32)


def _sphere_lines(
    radius: float, center, meridians: int = 6, parallels: int = 3, points: int = 48
) -> np.ndarray:
    """Line segments (2K, 3) tracing meridians and parallels of a sphere (for obstacles)."""
    c = np.asarray(center, dtype=np.float64)
    segments = []
    for k in range(meridians):
        phi = np.pi * k / meridians
        segments.append(_ring(c, (0, 1, 0), (np.cos(phi), 0, np.sin(phi)), radius, points))
    for k in range(1, parallels + 1):
        lat = -np.pi / 2 + np.pi * k / (parallels + 1)
        segments.append(
            _ring(c + (0, radius * np.sin(lat), 0), (1, 0, 0), (0, 0, 1), radius * np.cos(lat), points)
        )
    return np.vstack(segments)


def _box_lines(half, center, planar: bool) -> np.ndarray:
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
            return _ring(c, (1, 0, 0), (0, 1, 0), r)
        parts = [_ring(c, (1, 0, 0), (0, 0, 1), r)]
        rim = _sphere_rim(c, r, eye, into)
        if rim is not None:
            parts.append(rim)
        return np.vstack(parts)
    if params.arena_shape in BOX_SHAPES:
        return _box_lines(np.asarray(params.half_extents, np.float64), c, planar)
    return np.zeros((0, 3), np.float32)


def sun_direction(up) -> np.ndarray:
    """Unit vector towards the sun in a world whose up is ``up`` (+y, or +z for a planar flock)."""
    x, high, z = SUN
    sun = np.array([x, high, z]) if up[1] == 1.0 else np.array([x, z, high])
    return sun / np.linalg.norm(sun)


def _arena_of(params: Params) -> tuple:
    """What :func:`world_extent` depends on."""
    arena = next((o for o in params.objects if o.role == "arena"), None)
    return (params.arena_shape, params.arena_radius, params.arena_center, params.half_extents,
            params.dimensions, arena)  # fmt: skip


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
    return _ring(centre, a, np.cross(axis, a), radius)


def obstacle_lines(params: Params) -> np.ndarray:
    """Segments of a light wireframe around each obstacle (circles in a planar flock)."""
    if params.dimensions == 2:
        parts = [_ring(o.center, (1, 0, 0), (0, 1, 0), o.radius) for o in params.obstacles]
    else:
        parts = [_sphere_lines(o.radius, o.center) for o in params.obstacles]
    return np.vstack(parts) if parts else np.zeros((0, 3), np.float32)


def path_lines(params: Params) -> np.ndarray:
    """Segments joining the waypoints of the path in a closed loop."""
    if params.path is None:
        return np.zeros((0, 3), np.float32)
    points = np.asarray(params.path.points, dtype=np.float32)
    return np.stack([points, np.roll(points, -1, axis=0)], axis=1).reshape(-1, 3)


class MeshGroup(NamedTuple):
    """The boids drawn with one mesh when species have meshes of their own."""

    name: str
    visual: Boids
    boids: np.ndarray
    """(N,) bool: the boids of the species drawn with this mesh."""


def _flap(name: str) -> float:
    """How far the wing tips of mesh ``name`` beat, body lengths: only the bird has wings."""
    return WING_BEAT if name == "bird" else 0.0


_log = logging.getLogger("flock3d")

#: numba functions the window calls, by name: the thread loading each (compiled by a child).
_compiles: dict[str, threading.Thread] = {}


def compiled_elsewhere(function, *example) -> bool:
    """Whether the numba ``function`` is ready to call on the UI thread; if not, a thread of its
    own loads it from numba's cache from ``example`` arguments, after a child process compiled it
    there where the cache lacks it (:mod:`flock3d.core.elsewhere`), and this says False until that
    is done. A compile on the UI thread froze the window for seconds; one on another thread of its
    process, holding the GIL, held the window's turns up to 0.4 s."""
    if function.signatures:
        return True
    py_func = function.py_func
    name = py_func.__qualname__
    if name not in _compiles:
        target = f"{py_func.__module__}:{name}"

        def load() -> None:
            try:
                if not elsewhere.load_or_compile(
                    lambda: function(*example), target, example, line=compiling.COMPILING_MEASUREMENTS
                ):
                    del _compiles[name]  # cancelled (a window closed): a later frame starts again
            except elsewhere.CompileFailed as error:
                _log.warning("flock3d: %s", error)  # the mode stays uniform; the window goes on

        _compiles[name] = threading.Thread(target=load, name=f"compile {name}", daemon=True)
        _compiles[name].start()
    return False


@dataclass
class FrameData:
    """What was drawn last: the colours and the neighbour counts (if computed)."""

    colors: np.ndarray
    neighbour_counts: np.ndarray | None = None


class FlockVisuals:
    """Sky, boids, predators, trails, the arena, obstacles, the path, attractors and axes in a ``ViewBox``.

    Args:
        view: the ViewBox to draw in (its camera is set up by :meth:`make_camera`).
        hints: the scene's viewing hints (mesh, size, colour mode, arena, axes, trails).
        params: model parameters (arena size, speed range for colours).
        pixel_scale: canvas pixels per pixel of the final picture (a supersampled canvas
            is larger): sizes in pixels (the smallest boid, line widths) scale with it.
        responsive: a window's: a colour mode whose numba function is not compiled yet draws
            uniform colours while it compiles on another thread, where a picture (a video, a
            still) waits for it.
    """

    def __init__(
        self,
        view: scene.ViewBox,
        hints: ViewHints,
        params: Params,
        pixel_scale: float = 1.0,
        responsive: bool = False,
    ) -> None:
        self.view = view
        self.responsive = responsive
        self.pixel_scale = pixel_scale
        self.hints = hints
        self.params = params
        self.color_mode = hints.color_mode
        self.boid_size = hints.boid_size
        self.mesh_name = hints.mesh
        self.trail_seconds = hints.trails
        self.show_vectors = hints.show_vectors
        self.last: FrameData | None = None
        self.camera_frame: CameraFrame | None = None
        self._state: FlockState | None = None
        self._bank = np.zeros(0)
        self._time: float | None = None
        self._trail: dict | None = None

        self.sky = Sky(SKY_TOP, SKY_BOTTOM, parent=view.scene)
        self.sky.order = -1000  # first, behind everything
        self.sun = Sun(parent=view.scene)
        self.sun.order = -999  # on the sky, behind whatever is drawn after it
        self.sun.fov = CAMERA_FOV
        self.look = sky_look(hints.sky)
        self.show_guides = hints.show_guides
        self.scenery = Scenery(view)
        self._world = world_extent(params)
        self._world_of = _arena_of(params)
        vertices, faces = mesh(hints.mesh)
        self.boids = Boids(vertices, faces, wing_beat(hints.mesh), parent=view.scene)
        self.species_boids: dict[str, Boids] = {}
        """A visual for each mesh of a species' own other than :attr:`mesh_name`, made when first needed."""
        self._groups: list[MeshGroup] | None = None
        self._grouped_for: tuple | None = None
        self.specks = Boids(*speck(), wing_beat("speck"), parent=view.scene)
        self._phases = np.zeros(0)
        self.predators = Boids(*mesh("cone"), parent=view.scene)
        self.halos = self._segments(width=1.5)
        self.trails = Trails(TRAIL_SLOTS, TRAIL_COLOR, width=pixel_scale, parent=view.scene)
        self.trails.order = 5  # after the boids: trails do not hide them
        self.trails.visible = False
        self.vectors = self._segments()
        self.arena = self._segments()
        self.obstacles = self._segments()
        self.path = self._segments(width=2.0)
        self.selected = self._segments(width=2.0)
        # Markers without data break vispy's bounds computation, even hidden: start with a point.
        self.attractors = scene.visuals.Markers(pos=np.zeros((1, 3), np.float32), parent=view.scene)
        self.attractors.set_gl_state("translucent", depth_test=True)
        self.axes = scene.visuals.XYZAxis(parent=view.scene)
        self._show_world(params, hints.show_arena)
        self.axes.visible = hints.show_axes
        self.set_look(hints)

    def _segments(self, width: float = 1.0):
        lines = Segments(width=width * self.pixel_scale, parent=self.view.scene)
        lines.order = 10
        lines.visible = False
        return lines

    def _show_world(self, params: Params, show_arena: bool) -> None:
        """(Re)build the objects, obstacles, path and attractors; the arena outline follows the camera."""
        self.show_arena = show_arena  # wished for; an open arena has nothing to show
        if _arena_of(params) != self._world_of:
            self._world, self._world_of = world_extent(params), _arena_of(params)
        extent = PLANE_EXTENT * self._world[1]
        if params.objects != self.scenery.objects or extent != self.scenery.extent:
            self.scenery.set_objects(params.objects, extent)
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
        self._outline_arena(params)

    def _outline_arena(self, params: Params) -> None:
        frame = self.camera_frame
        lines = arena_lines(params, frame.eye if frame else None, frame.into if frame else None)
        self.arena.set_segments(lines, ARENA_COLOR)
        self.arena.visible = self.show_arena and len(lines) > 0

    # -- configuration ------------------------------------------------------------------

    def set_params(self, params: Params, show_arena: bool | None = None) -> None:
        """New model parameters: redraw the arena and the world features if they changed.

        ``show_arena`` says whether the arena outline is wanted (default: as it was).
        """

        def layout(p: Params):
            arena = (p.arena_radius, p.arena_center, p.arena_shape, p.dimensions)
            return arena + (p.obstacles, p.path, p.attractors, p.objects)

        show = self.show_arena if show_arena is None else show_arena
        if show_arena is not None or layout(params) != layout(self.params):
            self.params = params
            self._show_world(params, show)
        self.params = params

    def set_look(self, hints: ViewHints) -> None:
        """The scene's sky, ground grid and guides (``view.sky``, ``view.ground_grid``,
        ``view.show_guides``)."""
        self.look = sky_look(hints.sky)
        self.sky.top, self.sky.bottom = np.asarray(self.look.top), np.asarray(self.look.bottom)
        self.sun.uniforms["u_disc"] = self.look.disc
        self.scenery.grid_opacity = hints.ground_grid
        self.set_guides(hints.show_guides)
        self.view.canvas.update()

    def set_guides(self, on: bool) -> None:
        """Show or hide the guides: the path's waypoints and line and the attractors."""
        self.show_guides = bool(on)
        self._show_world(self.params, self.show_arena)

    def set_mesh(self, name: str) -> None:
        """The panel's mesh: the shape of every boid whose species has no mesh of its own."""
        vertices, faces = mesh(name)
        self.mesh_name = name
        self.boids.set_mesh(vertices, faces, wing_beat(name))

    def set_color_mode(self, mode: str) -> None:
        if mode not in COLOR_MODES:
            raise ValueError(f"unknown colour mode {mode!r}; choose one of {', '.join(COLOR_MODES)}")
        self.color_mode = mode

    def set_trails(self, seconds: float) -> None:
        """Trails of the last ``seconds`` of each path (0: none)."""
        self.trail_seconds = max(float(seconds), 0.0)
        self._trail = None  # start afresh
        self.trails.visible = False

    def _place_axes(self, params: Params) -> None:
        from vispy.visuals.transforms import STTransform

        r = 0.25 * params.arena_radius
        self.axes.transform = STTransform(scale=(r, r, r), translate=params.arena_center)

    # -- camera -------------------------------------------------------------------------

    def make_camera(
        self,
        kind: str = "orbit",
        positions: np.ndarray | None = None,
        target: tuple[np.ndarray, float] | None = None,
    ) -> scene.cameras.BaseCamera:
        """A camera of ``kind`` (:func:`~flock3d.viewer.cameras.new_camera`) in the view, framing
        the arena, or the flock at ``positions`` when the arena is open space; ``follow`` frames
        the flock itself. ``target`` (centre, radius) frames that sphere instead."""
        if kind == "follow" and target is None and positions is not None and len(positions):
            target = flock_extent(positions, self.boid_size)
        self.view.camera = new_camera(kind)
        self.frame(positions, target)
        return self.view.camera

    def frame(
        self, positions: np.ndarray | None = None, target: tuple[np.ndarray, float] | None = None
    ) -> None:
        """Point the camera at the arena (or the flock, or ``target``: centre, radius) from the
        scene's hinted angles, framing it whole (:func:`~flock3d.viewer.cameras.aim`)."""
        h = self.hints
        if target is None:
            target, radius = self.framed(positions)
            distance = h.camera_distance or frame_distance(radius)
        else:
            target, radius = target
            distance = frame_distance(radius)
        planar = self.params.dimensions == 2
        aim(self.view.camera, target, distance, h.camera_azimuth, h.camera_elevation, planar)

    def framed(self, positions: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """Centre and radius of what the camera should frame: the arena, or the flock in open space."""
        p = self.params
        if p.arena_shape != "none" or positions is None or len(positions) == 0 or self._has_arena_object():
            return self._world
        return flock_extent(positions, self.boid_size)

    def show_selection(self, selection) -> None:
        """Outline what is selected for editing, where it is drawn now: ``selection`` (kind,
        index) of :class:`~flock3d.viewer.editing.Selection`, or None for nothing."""
        if selection is None or self._state is None:
            self.selected.visible = False
            return
        kind, k = selection
        if kind == "object":
            lines = self._object_outline(k)
        else:
            state = self._state
            centre = (
                self.params.attractors[k].position if kind == "attractor" else state.predator_positions[k]
            )
            half = 1.5 * self.boid_size * (PREDATOR_SCALE if kind == "predator" else 1.0)
            lines = _box_lines(np.full(3, half), centre, planar=False)
        self.selected.set_segments(lines, SELECTION_COLOR)

    def _object_outline(self, k: int) -> np.ndarray:
        """The edges of object ``k``'s box in its own frame (a plane's: a square the world's size)."""
        mesh = self.scenery.meshes[k]
        low, high = mesh.vertices.min(axis=0).astype(float), mesh.vertices.max(axis=0).astype(float)
        if shape_of(self.params.objects[k]).edgeless:
            r = self._world[1]
            low, high = np.array([-r, 0.0, -r]), np.array([r, 0.0, r])
        lines = _box_lines(0.5 * (high - low), 0.5 * (high + low), planar=False)
        return self.scenery.origins[k] + lines @ self.scenery.rotations[k].T

    @property
    def world_radius(self) -> float:
        """Radius of the world the camera frames (:func:`world_extent`), world units."""
        return self._world[1]

    def _has_arena_object(self) -> bool:
        return any(o.role == "arena" for o in self.params.objects)

    def _aim(self, state: FlockState) -> None:
        """Per frame: light from just above and left of the viewer, fog across what is framed,
        the minimum boid size, and the arena's rim as seen from the camera now."""
        frame = camera_frame(self.view)
        if frame is None:
            return
        moved = self.camera_frame is None or not (
            np.allclose(frame.into, self.camera_frame.into)
            and (frame.eye is None) == (self.camera_frame.eye is None)
            and (frame.eye is None or np.allclose(frame.eye, self.camera_frame.eye))
        )
        self.camera_frame = frame
        world_up = up_axis(self.params)
        towards_light = self.look.sun_direction(world_up)
        self.sun.uniforms["u_light"] = tuple(float(x) for x in towards_light)
        centre, radius = self.framed(state.positions)
        tr = self.view.scene.node_transform(self.view.canvas.scene)
        w_near, w_far = tr.map(np.array([centre - radius * frame.into, centre + radius * frame.into]))[:, 3]
        fogged = frame.eye is not None and w_far > w_near
        # The world's objects clear up to the far side of the world (the flock's ball in open
        # space would fog the objects around it), then lost in the sky FOG_HORIZON diameters on.
        world_centre, world_radius = self._world
        near, far = tr.map(np.array([world_centre - world_radius * frame.into,
                                     world_centre + world_radius * frame.into]))[:, 3]  # fmt: skip
        self.scenery.aim(
            towards_light, world_up, frame.eye if frame.eye is not None else centre - 1e9 * frame.into,
            (self.look.top, self.look.bottom), self.look,
            (far, far + FOG_HORIZON * (far - near)) if fogged and far > near else (1e30, 2e30),
            grid_spacing(world_radius),
        )  # fmt: skip
        w, h = self.view.canvas.size
        bodies = (self.boids, *self.species_boids.values(), self.specks)
        sizes = [(body, self.boid_size) for body in bodies]
        sizes.append((self.predators, self.boid_size * PREDATOR_SCALE))
        for visual, size in sizes:
            u = visual.uniforms
            u["u_up"] = tuple(float(x) for x in world_up)
            u["u_size"] = float(size)
            u["u_min_px"] = MIN_BOID_PIXELS * self.pixel_scale
            u["u_half_viewport"] = (w / 2.0, h / 2.0)
            u["u_camera_right"] = tuple(float(x) for x in frame.right)
            u["u_light"] = tuple(float(x) for x in towards_light)
            u["u_fog_color"] = tuple(0.5 * (np.asarray(self.look.top) + np.asarray(self.look.bottom)))
            u["u_tint"] = self.look.boid_tint
            if fogged:
                u["u_fog"] = (float(w_near + 0.3 * (w_far - w_near)), float(w_far))
                u["u_fog_max"] = FOG_MAX
            else:
                u["u_fog_max"] = 0.0
        self.boids.uniforms["u_flap"] = _flap(self.mesh_name)
        for name, visual in self.species_boids.items():
            visual.uniforms["u_flap"] = _flap(name)
        drawn = [self.mesh_name] if self._groups is None else [group.name for group in self._groups]
        self.specks.uniforms["u_flap"] = max(_flap(name) for name in drawn)
        if moved and self.show_arena:
            self._outline_arena(self.params)

    # -- per frame ----------------------------------------------------------------------

    def colors_for(self, state: FlockState) -> FrameData:
        """Per-boid colours for the current colour mode."""
        n = len(state)
        if self.color_mode == "heading":
            return FrameData(heading_colors(quaternion.forward(state.orientations)))
        if self.color_mode == "speed":
            speeds = np.linalg.norm(state.velocities, axis=1)
            return FrameData(ramp_colors(speeds, self.params.min_speed, self.params.max_speed))
        if self.color_mode == "neighbours":
            if self.responsive and not compiled_elsewhere(count_within, np.zeros((2, 3)), 1.0):
                return FrameData(uniform_colors(n))  # for the second it loads, not a frozen window
            radius = self.params.perception_distance
            radius = radius if math.isfinite(radius) else 1e300
            counts = count_within(state.positions, radius) if n else np.zeros(0, np.int64)
            top = max(10.0, float(np.percentile(counts, 95))) if n else 10.0
            return FrameData(ramp_colors(counts, 0.0, top), counts)
        if self.color_mode == "species":
            own = tuple(look.color for look in self.hints.species)
            return FrameData(species_colors(self.params.species_of_boids[:n], own))
        return FrameData(uniform_colors(n))

    def _banks(
        self, forwards: np.ndarray, acceleration: np.ndarray | None, time: float, orientations: np.ndarray
    ) -> np.ndarray:
        """(N,) smoothed bank angles (radians) from the lateral acceleration of the last step; in
        aerodynamic flight, the roll of each orientation (N, 4)."""
        n = len(forwards)
        elapsed = 0.0 if self._time is None else time - self._time
        if len(self._bank) != n or elapsed < 0:
            self._bank = np.zeros(n)  # a new flock (or a reset)
        self._time = time
        if self.params.flight == "aerodynamic":
            self._bank = bank_angles(orientations, up_axis(self.params))
            return self._bank
        if acceleration is None or len(acceleration) != n or n == 0:
            return self._bank
        right = np.cross(np.asarray(up_axis(self.params)), forwards)
        norm = np.linalg.norm(right, axis=1)
        lateral = np.einsum("ij,ij->i", acceleration, right) / np.where(norm > 1e-9, norm, np.inf)
        target = np.clip(np.arctan(lateral / GRAVITY), -MAX_BANK, MAX_BANK)
        if elapsed > 0:  # paused, the boids hold their roll
            self._bank += (target - self._bank) * (1.0 - math.exp(-elapsed / BANK_SECONDS))
        return self._bank

    def _mesh_groups(self, n: int) -> list[MeshGroup] | None:
        """The boids of each mesh when species have meshes of their own (species sharing a
        mesh share its visual), or None when all ``n`` boids take :attr:`mesh_name`."""
        meshes = tuple(look.mesh or self.mesh_name for look in self.hints.species)
        key = (self.mesh_name, meshes, tuple(s.count for s in self.params.species), n)
        if key != self._grouped_for:
            self._grouped_for, self._groups = key, None
            for visual in self.species_boids.values():
                visual.visible = False  # until a group draws with it again
            kinds = self.params.species_of_boids
            # A flock of another size than its species hold (being changed): one mesh for all.
            if set(meshes) - {self.mesh_name} and len(kinds) == n:
                self._groups = []
                for name in dict.fromkeys((self.mesh_name, *meshes)):
                    species = [k for k, m in enumerate(meshes) if m == name]
                    self._groups.append(MeshGroup(name, self._visual_of(name), np.isin(kinds, species)))
        return self._groups

    def _visual_of(self, name: str) -> Boids:
        """The instanced visual drawing mesh ``name``."""
        if name == self.mesh_name:
            return self.boids
        if name not in self.species_boids:
            self.species_boids[name] = Boids(*mesh(name), wing_beat(name), parent=self.view.scene)
        return self.species_boids[name]

    def _specks(self, positions: np.ndarray) -> np.ndarray:
        """(N,) bool: the boids shorter on screen than SPECK_PIXELS (and in front of the camera)."""
        if len(positions) == 0 or self.camera_frame is None:
            return np.zeros(len(positions), bool)
        mvp = self.boids.clip_matrix()
        w = positions @ mvp[:3, 3] + mvp[3, 3]  # clip w: depth for a perspective camera
        length = self.boids.pixels_per_unit(mvp) * self.boid_size / np.where(w > 1e-9, w, np.inf)
        return length < SPECK_PIXELS * self.pixel_scale

    def _update_trails(self, positions: np.ndarray, time: float) -> None:
        if self.trail_seconds <= 0 or len(positions) == 0:
            self.trails.visible = False
            self._trail = None
            return
        slots = TRAIL_SLOTS if len(positions) <= TRAIL_FINE_BOIDS else TRAIL_SLOTS // 2
        interval = self.trail_seconds / slots
        p = np.asarray(positions, np.float32)
        # A boid moving further than this between samples went through a periodic wall.
        jump = self.params.arena_radius if self.params.arena_shape == "periodic" else np.inf
        trail = self._trail
        if trail is None or trail["n"] != len(p) or time < trail["time"]:
            self.trails.reset(p, slots)
            self._trail = trail = {"n": len(p), "time": time, "newest": p.copy()}
        elif time - trail["time"] >= interval:
            start = _unwrapped(trail["newest"], p, jump)
            self.trails.add_sample(start, p)
            trail["newest"] = p.copy()
            trail["time"] += interval * math.floor((time - trail["time"]) / interval)
        frac = min((time - trail["time"]) / interval, 1.0)
        self.trails.set_live(_unwrapped(trail["newest"], p, jump), p, frac)
        self.trails.visible = True

    def _update_vectors(self, state: FlockState, acceleration: np.ndarray | None) -> None:
        if not self.show_vectors or len(state) == 0:
            self.vectors.visible = False
            return
        p = state.positions
        ends = [p + VELOCITY_SECONDS * state.velocities]
        colors = [VELOCITY_COLOR]
        if acceleration is not None and len(acceleration) == len(p):
            ends.append(p + STEERING_SECONDS2 * acceleration)
            colors.append(STEERING_COLOR)
        points = np.empty((len(ends), len(p), 2, 3), np.float32)
        rgba = np.empty((len(ends), len(p), 2, 4), np.float32)
        for k, (end, color) in enumerate(zip(ends, colors, strict=True)):
            points[k, :, 0], points[k, :, 1] = p, end
            rgba[k] = color
        self.vectors.set_segments(points.reshape(-1, 3), rgba.reshape(-1, 4))

    def _update_halos(self, state: FlockState) -> None:
        frame = self.camera_frame
        if state.n_predators == 0 or frame is None:
            self.halos.visible = False
            return
        radius = 1.1 * self.boid_size * PREDATOR_SCALE
        rings = [_ring(p, frame.right, frame.up, radius, 24) for p in state.predator_positions]
        self.halos.set_segments(np.vstack(rings), PREDATOR_COLOR[:3] + (0.85,))

    def update(
        self, state: FlockState, colors: np.ndarray | None = None, acceleration: np.ndarray | None = None
    ) -> FrameData:
        """Push a flock state to the GPU buffers.

        Args:
            state: the flock to draw.
            colors: (N, 4) colours overriding the colour mode (e.g. the focus view's).
            acceleration: (N, 3) of the last step, units/s^2, for banking and the steering
                lines (None: no banking).
        """
        frame = self.colors_for(state) if colors is None else FrameData(np.asarray(colors, np.float32))
        n = len(state)
        groups = self._mesh_groups(n)  # before aiming: a new visual takes the uniforms too
        self._aim(state)
        forwards = quaternion.forward(state.orientations)
        banks = self._banks(forwards, acceleration, state.time, state.orientations)
        if len(self._phases) != n:  # each boid beats its wings at a phase of its own
            self._phases = np.random.default_rng(7).uniform(0.0, 2.0 * np.pi, n)
        beat = 2.0 * math.pi * WING_BEATS_PER_SECOND * (state.time % 3600.0)
        rolls = np.c_[np.cos(banks), np.sin(banks)]
        wings = np.sin(beat + self._phases)
        data = (state.positions, forwards, frame.colors, rolls, wings)
        small = self._specks(state.positions)
        none = tuple(a[:0] for a in data)
        if groups is not None:
            for name, visual, mine in groups:
                if not _flap(name):
                    wings[mine] = 0.0  # a mesh without wings: its specks keep still (its body ignores them)
                visual.set_instances(*(a[mine & ~small] for a in data))
            self.specks.set_instances(*(a[small] for a in data))
        elif not small.any():
            self.boids.set_instances(*data)
            self.specks.set_instances(*none)
        elif small.all():  # a large flock seen whole: no copies needed
            self.boids.set_instances(*none)
            self.specks.set_instances(*data)
        else:
            self.boids.set_instances(*(a[~small] for a in data))
            self.specks.set_instances(*(a[small] for a in data))
        m = state.n_predators
        self.predators.set_instances(
            state.predator_positions,
            quaternion.forward(state.predator_orientations) if m else np.zeros((0, 3)),
            np.tile(np.asarray(PREDATOR_COLOR, np.float32), (m, 1)),
        )
        self._update_halos(state)
        bodies = [
            (state.positions, self.boid_size),
            (state.predator_positions, self.boid_size * PREDATOR_SCALE),
        ]
        self.scenery.update(state.time, bodies, up_axis(self.params))
        self._state = state
        self._update_trails(state.positions, state.time)
        self._update_vectors(state, acceleration)
        self.last = frame
        return frame


def _unwrapped(start: np.ndarray, end: np.ndarray, jump: float) -> np.ndarray:
    """``start`` with the points that jumped further than ``jump`` moved onto ``end`` (no segment)."""
    if not math.isfinite(jump):
        return start
    far = np.any(np.abs(end - start) > jump, axis=1)
    if not far.any():
        return start
    start = start.copy()
    start[far] = end[far]
    return start
