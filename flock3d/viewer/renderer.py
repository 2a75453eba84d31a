"""The flock's visuals in a vispy scene, shared by the viewer and ``flock3d render``.

:class:`FlockVisuals` holds no simulation state: each frame the caller pushes
the flock's state in with :meth:`FlockVisuals.update` (style guide: the viewer
reads state and never owns it). Boids are one instanced mesh whose per-boid
buffers are rewritten in place, which avoids re-allocating GPU buffers and
re-linking the shader every frame (5-20 ms per frame, rendering notes).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from vispy import scene
from vispy.visuals.filters import InstancedShadingFilter

from flock3d.core import quaternion
from flock3d.core.neighbors import count_within
from flock3d.core.params import Params
from flock3d.core.state import FlockState
from flock3d.scene.schema import COLOR_MODES, ViewHints
from flock3d.viewer.colors import heading_colors, ramp_colors, uniform_colors
from flock3d.viewer.meshes import mesh

__all__ = ["FlockVisuals", "ARENA_COLOR", "CAMERA_FOV", "frame_distance"]

ARENA_COLOR = (0.55, 0.7, 1.0, 0.13)
OBSTACLE_COLOR = (1.0, 0.62, 0.3, 0.55)
PATH_COLOR = (0.45, 1.0, 0.6, 0.6)
ATTRACTOR_COLOR = (1.0, 0.92, 0.4, 1.0)
PREDATOR_COLOR = (0.95, 0.18, 0.22, 1.0)
PREDATOR_SCALE = 2.2
"""Predators are drawn this many times larger than boids."""
CAMERA_FOV = 45.0


def frame_distance(radius: float, fov_deg: float = CAMERA_FOV, margin: float = 1.12) -> float:
    """Camera distance at which a sphere of ``radius`` fills the view (with a margin)."""
    return margin * radius / math.sin(math.radians(fov_deg) / 2.0)


class _InstancedBoids(scene.visuals.InstancedMesh):
    """An InstancedMesh whose per-instance buffers can be rewritten in place.

    The only place that touches vispy's private buffer names.
    """

    shading: InstancedShadingFilter | None = None

    def set_instances(self, positions: np.ndarray, matrices: np.ndarray, colors: np.ndarray) -> None:
        n = len(positions)
        if n == 0:
            # vispy cannot hold zero instances: draw one of zero size instead.
            positions, matrices, colors = np.zeros((1, 3)), np.zeros((1, 3, 3)), np.zeros((1, 4))
            n = 1
        if self.instance_positions is None or len(self.instance_positions) != n:
            # A new count: allocate (rare: the count changed).
            self.instance_positions = positions
            self.instance_transforms = matrices
            self.instance_colors = colors
            if self.shading is not None:
                # The shading filter reads the rotations for its normals from the old buffers.
                for axis, vbo in zip("xyz", self._instance_transforms_vbos, strict=True):
                    self.shading.vshader[f"instance_transform_{axis}"] = vbo
            return
        self._instance_positions[...] = positions
        self._instance_positions_vbo.set_data(self._instance_positions)
        m = matrices.astype(np.float32)
        for axis, vbo in enumerate(self._instance_transforms_vbos):
            vbo.set_data(np.ascontiguousarray(m[:, :, axis]))
        self._instance_colors_vbo.set_data(np.ascontiguousarray(colors, dtype=np.float32))
        self.update()


def _sphere_lines(
    radius: float, center, meridians: int = 8, parallels: int = 5, points: int = 96
) -> np.ndarray:
    """Line segments (2K, 3) tracing meridians and parallels of a sphere."""
    c = np.asarray(center, dtype=np.float64)
    t = np.linspace(0.0, 2.0 * np.pi, points + 1)
    segments = []
    for k in range(meridians):
        phi = np.pi * k / meridians
        ring = np.c_[np.sin(t) * np.cos(phi), np.cos(t), np.sin(t) * np.sin(phi)]
        segments.append(np.repeat(ring, 2, axis=0)[1:-1])
    for k in range(1, parallels + 1):
        lat = -np.pi / 2 + np.pi * k / (parallels + 1)
        ring = np.c_[np.cos(lat) * np.cos(t), np.full_like(t, np.sin(lat)), np.cos(lat) * np.sin(t)]
        segments.append(np.repeat(ring, 2, axis=0)[1:-1])
    return (np.vstack(segments) * radius + c).astype(np.float32)


def _circle_lines(radius: float, center, points: int = 128) -> np.ndarray:
    """Segments of a circle in the z = center z plane (a planar flock's round arena)."""
    t = np.linspace(0.0, 2.0 * np.pi, points + 1)
    ring = np.c_[np.cos(t), np.sin(t), np.zeros_like(t)] * radius + np.asarray(center, dtype=np.float64)
    return np.repeat(ring, 2, axis=0)[1:-1].astype(np.float32)


def _box_lines(half: float, center, planar: bool) -> np.ndarray:
    """Segments of the edges of a cube of side 2 * half (a square when planar)."""
    c = np.asarray(center, dtype=np.float64)
    if planar:
        corners = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], dtype=np.float64)
        edges = [(0, 1), (1, 2), (2, 3), (3, 0)]
    else:
        corners = np.array(list(itertools.product((-1, 1), repeat=3)), dtype=np.float64)
        edges = [(a, b) for a in range(8) for b in range(a + 1, 8) if np.sum(corners[a] != corners[b]) == 1]
    return (corners[np.array(edges).ravel()] * half + c).astype(np.float32)


def arena_lines(params: Params) -> np.ndarray:
    """Segments outlining the arena for its shape (empty for open space)."""
    planar = params.dimensions == 2
    if params.arena_shape == "sphere":
        if planar:
            return _circle_lines(params.arena_radius, params.arena_center)
        return _sphere_lines(params.arena_radius, params.arena_center)
    if params.arena_shape in ("box", "periodic"):
        return _box_lines(params.arena_radius, params.arena_center, planar)
    return np.zeros((0, 3), np.float32)


def obstacle_lines(params: Params) -> np.ndarray:
    """Segments of a light wireframe around each obstacle (circles in a planar flock)."""
    if params.dimensions == 2:
        parts = [_circle_lines(o.radius, o.center) for o in params.obstacles]
    else:
        parts = [_sphere_lines(o.radius, o.center, 6, 3, 48) for o in params.obstacles]
    return np.vstack(parts) if parts else np.zeros((0, 3), np.float32)


def path_lines(params: Params) -> np.ndarray:
    """Segments joining the waypoints of the path in a closed loop."""
    if params.path is None:
        return np.zeros((0, 3), np.float32)
    points = np.asarray(params.path.points, dtype=np.float32)
    return np.stack([points, np.roll(points, -1, axis=0)], axis=1).reshape(-1, 3)


def _set_lines(visual, segments: np.ndarray, shown: bool = True) -> None:
    """Give a Line visual new segments; an empty set hides it (vispy cannot draw nothing)."""
    if len(segments) == 0:
        visual.visible = False
        return
    visual.set_data(pos=segments)
    visual.visible = shown


@dataclass
class FrameData:
    """What was drawn last: the colours and the neighbour counts (if computed)."""

    colors: np.ndarray
    neighbour_counts: np.ndarray | None = None


class FlockVisuals:
    """Boids, predators, the arena, obstacles, the path, attractors and axes in a vispy ``ViewBox``.

    Args:
        view: the ViewBox to draw in (its camera is set up by :meth:`frame`).
        hints: the scene's viewing hints (mesh, size, colour mode, arena, axes).
        params: model parameters (arena size, speed range for colours).
    """

    def __init__(self, view: scene.ViewBox, hints: ViewHints, params: Params) -> None:
        self.view = view
        self.hints = hints
        self.params = params
        self.color_mode = hints.color_mode
        self.boid_size = hints.boid_size
        self.last: FrameData | None = None
        vertices, faces = mesh(hints.mesh)
        self.boids = _InstancedBoids(
            vertices=vertices,
            faces=faces,
            color=(1.0, 1.0, 1.0, 1.0),  # vispy's default mesh colour (light blue) would tint every boid
            instance_positions=np.zeros((1, 3), np.float32),
            instance_transforms=np.zeros((1, 3, 3), np.float32),  # nothing drawn until update()
            instance_colors=np.zeros((1, 4), np.float32),
            parent=view.scene,
        )
        self.shading = InstancedShadingFilter(
            "flat",
            light_dir=(0.0, -1.0, 0.0),  # aimed from the camera at every update
            ambient_light=(1, 1, 1, 0.18),
            diffuse_light=(1, 1, 1, 1.0),
            specular_light=(1, 1, 1, 0.15),
            shininess=24,
        )
        self.boids.attach(self.shading)
        self.boids.shading = self.shading
        self.predators = _InstancedBoids(
            vertices=mesh("cone")[0],
            faces=mesh("cone")[1],
            color=(1.0, 1.0, 1.0, 1.0),
            instance_positions=np.zeros((1, 3), np.float32),
            instance_transforms=np.zeros((1, 3, 3), np.float32),
            instance_colors=np.zeros((1, 4), np.float32),
            parent=view.scene,
        )
        self.predator_shading = InstancedShadingFilter(
            "flat", light_dir=(0.0, -1.0, 0.0), ambient_light=(1, 1, 1, 0.3), diffuse_light=(1, 1, 1, 1.0)
        )
        self.predators.attach(self.predator_shading)
        self.predators.shading = self.predator_shading
        self.arena = self._lines(ARENA_COLOR)
        self.obstacles = self._lines(OBSTACLE_COLOR)
        self.path = self._lines(PATH_COLOR, width=2.0)
        # Markers without data break vispy's bounds computation, even hidden: start with a point.
        self.attractors = scene.visuals.Markers(pos=np.zeros((1, 3), np.float32), parent=view.scene)
        self.attractors.set_gl_state("translucent", depth_test=True)
        self.axes = scene.visuals.XYZAxis(parent=view.scene)
        self._show_world(params, hints.show_arena)
        self.axes.visible = hints.show_axes

    def _lines(self, color, width: float = 1.0) -> scene.visuals.Line:
        line = scene.visuals.Line(
            np.zeros((2, 3), np.float32), color=color, width=width, connect="segments", antialias=False,
            parent=self.view.scene,
        )  # fmt: skip
        line.set_gl_state("translucent", depth_test=True)
        return line

    def _show_world(self, params: Params, show_arena: bool) -> None:
        """(Re)build the arena outline, obstacles, path and attractors for ``params``."""
        self.show_arena = show_arena  # wished for; an open arena has nothing to show
        _set_lines(self.arena, arena_lines(params), show_arena)
        _set_lines(self.obstacles, obstacle_lines(params))
        _set_lines(self.path, path_lines(params))
        n_attractors = len(params.attractors)
        points = [a.position for a in params.attractors] + list(params.path.points if params.path else [])
        if points:
            waypoints = len(points) - n_attractors
            colors = [ATTRACTOR_COLOR] * n_attractors + [PATH_COLOR] * waypoints
            sizes = np.array([16.0] * n_attractors + [9.0] * waypoints)
            self.attractors.set_data(
                np.asarray(points, np.float32), face_color=colors, edge_width=0, size=sizes, symbol="disc"
            )
        self.attractors.visible = bool(points)
        self._place_axes(params)

    # -- configuration ------------------------------------------------------------------

    def set_params(self, params: Params, show_arena: bool | None = None) -> None:
        """New model parameters: redraw the arena and the world features if they changed.

        ``show_arena`` says whether the arena outline is wanted (default: as it was).
        """

        def layout(p: Params):
            arena = (p.arena_radius, p.arena_center, p.arena_shape, p.dimensions)
            return arena + (p.obstacles, p.path, p.attractors)

        show = self.show_arena if show_arena is None else show_arena
        if show_arena is not None or layout(params) != layout(self.params):
            self._show_world(params, show)
        self.params = params

    def set_mesh(self, name: str) -> None:
        vertices, faces = mesh(name)
        self.boids.set_data(vertices=vertices, faces=faces)

    def set_color_mode(self, mode: str) -> None:
        if mode not in COLOR_MODES:
            raise ValueError(f"unknown colour mode {mode!r}; choose one of {', '.join(COLOR_MODES)}")
        self.color_mode = mode

    def _place_axes(self, params: Params) -> None:
        from vispy.visuals.transforms import STTransform

        r = 0.25 * params.arena_radius
        self.axes.transform = STTransform(scale=(r, r, r), translate=params.arena_center)

    # -- camera -------------------------------------------------------------------------

    def make_camera(self, kind: str = "orbit") -> scene.cameras.BaseCamera:
        """A camera of ``kind`` (orbit, arcball, fly; follow and fixed use a turntable)."""
        if kind == "arcball":
            camera = scene.cameras.ArcballCamera(fov=CAMERA_FOV)
        elif kind == "fly":
            camera = scene.cameras.FlyCamera(fov=CAMERA_FOV)
        else:
            camera = scene.cameras.TurntableCamera(fov=CAMERA_FOV, up="+y")
        self.view.camera = camera
        self.frame()
        return camera

    def frame(self) -> None:
        """Point the camera at the arena from the scene's hinted angles, framing it whole."""
        camera = self.view.camera
        h = self.hints
        distance = h.camera_distance or frame_distance(self.params.arena_radius)
        center = tuple(self.params.arena_center)
        # A planar flock (in a z = const plane) is watched from above: along -z, with +y up.
        planar = self.params.dimensions == 2
        azimuth, elevation = (90.0, 0.0) if planar else (h.camera_azimuth, h.camera_elevation)
        if isinstance(camera, scene.cameras.TurntableCamera):
            camera.center, camera.distance = center, distance
            camera.azimuth, camera.elevation = azimuth, elevation
        elif isinstance(camera, scene.cameras.FlyCamera):
            az, el = math.radians(azimuth), math.radians(elevation)
            eye = np.asarray(center) + distance * np.array(
                [math.sin(az) * math.cos(el), math.sin(el), math.cos(az) * math.cos(el)]
            )
            camera.center = tuple(eye)
            camera.scale_factor = distance
        else:
            camera.center = center
            camera.distance = distance
        camera.view_changed()

    def _aim_light(self) -> None:
        """Light the boids from just above and left of the viewer, wherever the camera is.

        The viewing directions come from mapping canvas points back into the scene,
        which holds for every camera kind and needs no knowledge of their conventions.
        """
        tr = self.view.scene.node_transform(self.view.canvas.scene)
        w, h = self.view.canvas.size
        points = np.array([[w / 2, h / 2, 0.0, 1.0], [w / 2, h / 2, 0.5, 1.0], [w / 2, h / 2 - 1, 0.0, 1.0],
                           [w / 2 + 1, h / 2, 0.0, 1.0]])  # fmt: skip
        mapped = tr.imap(points)
        centre, deeper, up, right = mapped[:, :3] / mapped[:, 3:4]
        into = deeper - centre
        up, right = up - centre, right - centre
        norms = [np.linalg.norm(v) for v in (into, up, right)]
        if min(norms) == 0 or not np.all(np.isfinite(norms)):
            return
        # light_dir is the direction the light travels: into the scene, downwards, rightwards.
        direction = into / norms[0] - 0.55 * up / norms[1] + 0.3 * right / norms[2]
        light = tuple(direction / np.linalg.norm(direction))
        self.shading.light_dir = self.predator_shading.light_dir = light

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
            radius = self.params.perception_distance
            radius = radius if math.isfinite(radius) else 1e300
            counts = count_within(state.positions, radius) if n else np.zeros(0, np.int64)
            top = max(10.0, float(np.percentile(counts, 95))) if n else 10.0
            return FrameData(ramp_colors(counts, 0.0, top), counts)
        return FrameData(uniform_colors(n))

    def update(self, state: FlockState, colors: np.ndarray | None = None) -> FrameData:
        """Push a flock state to the GPU buffers; ``colors`` (N, 4) overrides the colour mode."""
        frame = self.colors_for(state) if colors is None else FrameData(np.asarray(colors, np.float32))
        matrices = quaternion.to_matrices(state.orientations) * self.boid_size
        self._aim_light()
        positions = state.positions.astype(np.float32)
        self.boids.set_instances(positions, matrices.astype(np.float32), frame.colors)
        hunters = quaternion.to_matrices(state.predator_orientations) * (self.boid_size * PREDATOR_SCALE)
        self.predators.set_instances(
            state.predator_positions.astype(np.float32),
            hunters.astype(np.float32),
            np.tile(np.asarray(PREDATOR_COLOR, np.float32), (state.n_predators, 1)),
        )
        self.last = frame
        return frame
