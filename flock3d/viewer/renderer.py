"""The flock's visuals in a vispy scene, shared by the viewer, the notebook and ``flock3d render``.

:class:`FlockVisuals` holds no simulation state: each frame the caller pushes a
flock state in with :meth:`FlockVisuals.update` (style guide: the viewer reads
state and never owns it). What it draws, back to front:

- a sky (``view.sky``: day, dusk or night, :mod:`flock3d.look.sky`): a vertical gradient
  and its sun's disc;
- the boids (:mod:`flock3d.viewer.bodies`): instanced meshes, kept at least
  :data:`MIN_BOID_PIXELS` long on screen and drawn as specks below :data:`SPECK_PIXELS`,
  banked into their turns and beating their wings (:mod:`flock3d.look.motion`); far boids
  fade towards the sky (depth cue). Species with a mesh of their own (``mesh`` in a
  ``[[species]]`` table) get one instanced mesh per shape;
- predators, larger, in a saturated red, each ringed by a halo;
- optional fading trails (the last seconds of each path) and debug lines
  (each boid's velocity and its last step's steering; :mod:`flock3d.viewer.tracks`);
- a quiet outline of the arena (the sphere's rim as seen from the camera and its
  equator; a box's edges), obstacles, and the guides: the path and attractors
  (:mod:`flock3d.viewer.guides`);
- the world's objects, lit by the sun and the sky and fading into the sky beyond the world,
  a grid on the ground and the flock's shadows on it (:mod:`flock3d.viewer.scenery`).

Light: one sun, fixed in the world (the sky's, where its disc is drawn), lights the objects and the
boids, whose faces are shaded by their normals: a boid banking into a turn catches the light or
loses it; the objects cast their shadows away from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from vispy import scene

from flock3d.core import compiling, elsewhere, quaternion
from flock3d.core.neighbors import count_within
from flock3d.core.params import Params
from flock3d.core.space import up_axis
from flock3d.core.state import FlockState
from flock3d.look.boids import PREDATOR_SCALE
from flock3d.look.camera import (
    BOX_SHAPES,
    CAMERA_FOV,
    FollowDistance,
    arena_bounds,
    flock_extent,
    fog_extent,
    frame_distance,
    world_extent,
)
from flock3d.look.colors import (
    SKY_BOTTOM,
    SKY_TOP,
    heading_colors,
    ramp_colors,
    species_colors,
    uniform_colors,
)
from flock3d.look.motion import follow_banks
from flock3d.look.outlines import arena_lines
from flock3d.look.sky import sky_look
from flock3d.scene.schema import COLOR_MODES, ViewHints
from flock3d.viewer.bodies import Bodies
from flock3d.viewer.cameras import CameraFrame, Framing, aim, camera_frame, new_camera, renew
from flock3d.viewer.guides import ARENA_COLOR, Guides
from flock3d.viewer.scenery import Scenery, WorldArrays, grid_spacing, sunlight
from flock3d.viewer.sun import Sun
from flock3d.viewer.tracks import Tracks
from flock3d.viewer.visuals import Sky

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

MIN_BOID_PIXELS = 7.0
"""A boid is drawn at least this many canvas pixels long, however far away."""
SPECK_PIXELS = 8.0
"""A boid shorter than this on screen is drawn with two triangles (a V with beating wing
tips) instead of its shape: at that size they look alike, and the vertex work, done on
one core by software OpenGL, is a fifth of the bird's."""
SUN = (0.6, 0.5, 0.8)
"""Towards the sun in a world whose up is +y (x, up, z): low (27 degrees up), a dusk sun to match the sky."""
FOG_HORIZON = 4.0
"""Objects are lost in the fog this many world diameters beyond the far side of the world."""
PLANE_EXTENT = 25.0
"""A plane is drawn this many world radii (:func:`world_extent`) each way, far into the fog."""


def _cleared(params: Params, world: tuple[np.ndarray, float]) -> tuple[tuple[np.ndarray, float], float]:
    """The sphere the fog leaves clear (:func:`fog_extent` of the ``world`` sphere), and how far a
    plane is drawn each way: :data:`PLANE_EXTENT` of its radius, far into the fog."""
    fogged = fog_extent(params, *world)
    return fogged, PLANE_EXTENT * fogged[1]


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


#: numba functions the window calls, by name: the thread loading each (compiled by a child).
_compiles: dict[str, elsewhere.Loading] = {}


def compiled_elsewhere(function, *example, line: str = compiling.COMPILING_MEASUREMENTS) -> bool:
    """Whether the numba ``function`` is ready to call on the UI thread; if not, a thread of its
    own loads it from numba's cache from ``example`` arguments, after a child process compiled it
    there where the cache lacks it (:class:`~flock3d.core.elsewhere.Loading`), and this says False until that
    is done (the wait shown as ``line``). A compile on the UI thread froze the window for seconds;
    one on another thread of its process, holding the GIL, held the window's turns up to 0.4 s."""
    if function.signatures:
        return True
    name = function.py_func.__qualname__
    loading = _compiles.get(name)
    if loading is None:
        _compiles[name] = loading = elsewhere.Loading(function, example, line=line)
        loading.start()
    elif not loading.is_alive() and not loading.loaded and loading.failed is None:
        del _compiles[name]  # cancelled (a window closed): a later frame starts again
    return False  # after a failure (logged) the mode stays uniform; the window goes on


#: Arguments :func:`follow_banks` is compiled for, as BoidMotion passes them (float64, C-contiguous).
_BANKS = (np.zeros((1, 4)), np.zeros((1, 3)), np.zeros(3), 0.5, 9.81, 1.0, np.zeros(1))


@dataclass
class FrameData:
    """What was drawn last: the colours (None: by heading, on the GPU) and the neighbour counts
    (if computed)."""

    colors: np.ndarray | None
    neighbour_counts: np.ndarray | None = None


class FlockVisuals:
    """Sky, boids, predators, trails, the arena, obstacles, the path, attractors and axes in a ``ViewBox``.

    It composes the roles: the bodies (:class:`~flock3d.viewer.bodies.Bodies`), the trails and
    debug lines (:class:`~flock3d.viewer.tracks.Tracks`), the outlines and guides
    (:class:`~flock3d.viewer.guides.Guides`) and the world's objects
    (:class:`~flock3d.viewer.scenery.Scenery`), and it aims the camera, the light and the fog.

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
        self.last: FrameData | None = None
        self.camera_frame: CameraFrame | None = None
        self._state: FlockState | None = None
        self.framing = Framing()

        # Made in the order they draw in, within an order of their own (vispy keeps that order).
        self.sky = Sky(SKY_TOP, SKY_BOTTOM, parent=view.scene)
        self.sky.order = -1000  # first, behind everything
        self.sun = Sun(parent=view.scene)
        self.sun.order = -999  # on the sky, behind whatever is drawn after it
        self.sun.fov = CAMERA_FOV
        self.look = sky_look(hints.sky)
        self.scenery = Scenery(view)
        self._world = world_extent(params)
        self._world_of = _arena_of(params)
        self.bodies = Bodies(view, hints.mesh, pixel_scale)
        self.tracks = Tracks(view, pixel_scale, hints.trails, hints.show_vectors)
        self.guides = Guides(view, pixel_scale)
        self.guides.show_guides = hints.show_guides
        self._show_world(params, hints.show_arena)
        self.axes.visible = hints.show_axes
        self.set_look(hints)

    # -- the roles' visuals and settings, by the names the callers use --------------------

    boids = property(lambda self: self.bodies.boids, doc="The boids drawn with :attr:`mesh_name`.")
    specks = property(lambda self: self.bodies.specks, doc="The boids too small for their shape.")
    predators = property(lambda self: self.bodies.predators)
    axes = property(lambda self: self.guides.axes, doc="The axes at the arena's centre.")
    mesh_name = property(lambda self: self.bodies.mesh_name, doc="The panel's mesh.")
    trail_seconds = property(lambda self: self.tracks.trail_seconds, doc="Seconds of trail (0: none).")
    show_arena = property(lambda self: self.guides.show_arena, doc="Whether the arena's outline is wanted.")
    show_guides = property(lambda self: self.guides.show_guides, doc="Whether the guides are shown.")

    show_vectors = property(lambda self: self.tracks.show_vectors,
                            lambda self, on: setattr(self.tracks, "show_vectors", on),
                            doc="Whether each boid's velocity and steering lines are drawn.")  # fmt: skip

    def _show_world(self, params: Params, show_arena: bool, world: WorldArrays | None = None) -> None:
        """(Re)build the objects, obstacles, path and attractors (the objects from ``world`` when it
        was made for them); the arena outline follows the camera."""
        self.guides.show_arena = show_arena  # wished for; an open arena has nothing to show
        if _arena_of(params) != self._world_of:
            self._world, self._world_of = world_extent(params), _arena_of(params)
        self._fogged, extent = _cleared(params, self._world)
        if world is not None and world.objects == params.objects and world.extent == extent:
            self.scenery.show(world)
        elif params.objects != self.scenery.objects or extent != self.scenery.extent:
            self.scenery.set_objects(params.objects, extent)
        self.guides.show(params, self.camera_frame)

    def world_arrays(self, params: Params, hints: ViewHints) -> WorldArrays:
        """What drawing ``params``' objects takes, their shadows cast from the sun of ``hints``'
        sky (:meth:`~flock3d.viewer.scenery.Scenery.arrays`): no OpenGL, nothing drawn changed.
        A window makes a scene's beside its event loop as it opens (meshes and shadows of a world's
        objects: about 0.1 s) and hands them to :meth:`set_params`."""
        up = up_axis(params)
        light = sunlight(sky_look(hints.sky).sun_direction(up), up)
        return self.scenery.arrays(params.objects, _cleared(params, world_extent(params))[1], light)

    # -- configuration ------------------------------------------------------------------

    def set_params(
        self, params: Params, show_arena: bool | None = None, world: WorldArrays | None = None
    ) -> None:
        """New model parameters: redraw the arena and the world features if they changed.

        ``show_arena`` says whether the arena outline is wanted (default: as it was); ``world``
        (:meth:`world_arrays`) has the objects' meshes made already.
        """

        def layout(p: Params):
            arena = (p.arena_radius, p.arena_center, p.arena_shape, p.dimensions)
            return arena + (p.obstacles, p.path, p.attractors, p.objects)

        show = self.show_arena if show_arena is None else show_arena
        if show_arena is not None or layout(params) != layout(self.params):
            self.params = params
            self._show_world(params, show, world)
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
        self.guides.show_guides = bool(on)
        self._show_world(self.params, self.show_arena)

    def set_mesh(self, name: str) -> None:
        """The panel's mesh: the shape of every boid whose species has no mesh of its own."""
        self.bodies.set_mesh(name)

    def set_color_mode(self, mode: str) -> None:
        if mode not in COLOR_MODES:
            raise ValueError(f"unknown colour mode {mode!r}; choose one of {', '.join(COLOR_MODES)}")
        self.color_mode = mode

    def set_trails(self, seconds: float) -> None:
        """Trails of the last ``seconds`` of each path (0: none)."""
        self.tracks.set_trails(seconds)

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
        self.framing.follow_distance = FollowDistance()
        replaced = self.view.camera
        if replaced is None or not renew(replaced, kind):
            self.view.camera = new_camera(kind)
            if replaced is not None:
                replaced.parent = None  # a view keeps each camera it was given among its scene's nodes
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
        self.framing.aimed(target, h.camera_azimuth, h.camera_elevation, distance, planar)

    def framed(self, positions: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """Centre and radius of what the camera should frame: the arena, or the flock in open space."""
        p = self.params
        if p.arena_shape != "none" or positions is None or len(positions) == 0 or self._has_arena_object():
            return self._world
        return flock_extent(positions, self.boid_size)

    def show_selection(self, selection) -> None:
        """Outline what is selected for editing, where it is drawn now: ``selection`` (kind,
        index) of :class:`~flock3d.viewer.editing.Selection`, or None for nothing."""
        state = self._state
        self.guides.show_selection(
            None if state is None else selection, self.params,
            None if state is None else state.predator_positions, self.boid_size, self.scenery, self._world[1],
        )  # fmt: skip

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
        # Objects clear up to the far side of the world and its ground (the flock's ball in open
        # space would fog the objects around it), then lost in the sky FOG_HORIZON diameters on.
        world_centre, world_radius = self._fogged
        near, far = tr.map(np.array([world_centre - world_radius * frame.into,
                                     world_centre + world_radius * frame.into]))[:, 3]  # fmt: skip
        self.scenery.aim(
            towards_light, world_up, frame.eye if frame.eye is not None else centre - 1e9 * frame.into,
            (self.look.top, self.look.bottom), self.look,
            (far, far + FOG_HORIZON * (far - near)) if fogged and far > near else (1e30, 2e30),
            grid_spacing(self._world[1]),
        )  # fmt: skip
        fog = (float(w_near + 0.3 * (w_far - w_near)), float(w_far)) if fogged else None
        self.bodies.aim(frame, world_up, towards_light, self.look, fog, self.boid_size,
                        MIN_BOID_PIXELS * self.pixel_scale)  # fmt: skip
        if moved and self.show_arena:
            self.guides.outline_arena(self.params, frame)

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

    def update(
        self, state: FlockState, colors: np.ndarray | None = None, acceleration: np.ndarray | None = None
    ) -> FrameData:
        """Push a flock state to the GPU buffers.

        Args:
            state: the flock to draw.
            colors: (N, 4) colours overriding the colour mode (e.g. the focus view's).
            acceleration: (N, 3) of the last steps, units/s^2, for banking and the steering
                lines (None: no banking).
        """
        if colors is not None:
            frame = FrameData(np.asarray(colors, np.float32))
        elif self.color_mode == "heading":
            frame = FrameData(None)  # the GPU colours each boid from its orientation
        else:
            frame = self.colors_for(state)
        banking = acceleration  # None while a window loads the compiled banks: level, not frozen
        if acceleration is not None and self.responsive:
            if not compiled_elsewhere(follow_banks, *_BANKS, line=compiling.COMPILING_DRAWING):
                banking = None
        # Grouped before aiming: a new visual takes the uniforms too.
        self.bodies.group(tuple(look.mesh for look in self.hints.species), self.params, len(state))
        self._aim(state)
        self.bodies.update(state, frame.colors, self.params, banking, self.camera_frame, self.boid_size,
                           SPECK_PIXELS * self.pixel_scale)  # fmt: skip
        bodies = [
            (state.positions, self.boid_size),
            (state.predator_positions, self.boid_size * PREDATOR_SCALE),
        ]
        self.scenery.update(state.time, bodies, up_axis(self.params))
        self._state = state
        self.tracks.update(state, acceleration, self.params)
        self.last = frame
        return frame
