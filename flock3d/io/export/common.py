"""What every exporter writes, in the same numbers: the boids' shapes and colours, the world's
objects as meshes with their colours and poses, the arena, the scene's camera, and the
recording's frames read a block at a time and checked as ``flock3d render`` checks them.

Coordinates are flock3d's world coordinates, unchanged: right-handed, lengths in world units,
**+Y up** (the ground is the XZ plane, heightfields rise along +Y), which is USD's and glTF's
up axis too, so nothing is converted. A boid's body frame is forward +Z, up +Y
(:mod:`flock3d.core.quaternion`): its shape is built that way, so the recorded orientation
places it as it flew. A planar flock (``sim.dimensions = 2``) flies in a z = const plane and is
exported there; its camera looks along -Z.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np
from pyquaternion import Quaternion

from flock3d.core.params import Params
from flock3d.core.state import FlockState
from flock3d.errors import Flock3dError
from flock3d.io.playback import PlaybackError, check_drawable, own_rate, recorded_frame
from flock3d.io.trajectory import Trajectory
from flock3d.look.boids import PREDATOR_SCALE, mesh
from flock3d.look.camera import BOX_SHAPES, CAMERA_FOV, frame_distance, view_direction, world_extent
from flock3d.look.colors import BOID_COLOR, PREDATOR_COLOR, linear_from_srgb, species_colors
from flock3d.look.world import Frames, ObjectMesh, ground_colors, is_ground, object_color, object_mesh
from flock3d.scene import Scene

__all__ = [
    "ExportError",
    "Progress",
    "Prototype",
    "WorldObject",
    "Arena",
    "Camera",
    "METERS_PER_UNIT",
    "PLANE_RADII",
    "open_recording",
    "recorded_scene",
    "prototypes",
    "predator_prototype",
    "world_objects",
    "arena_of",
    "camera_of",
    "frame_rate",
    "checked_frames",
    "time_codes",
    "linear",
    "linear_rows",
]

#: Progress callback of a writer: called with the number of frames written so far.
Progress = Callable[[int], None]

METERS_PER_UNIT = 1.0
"""The model has no physical scale (docs/model.md); one world unit is written as one metre,
so that a default flock (boids 1 unit long in a sphere of radius 30) opens at the size of a
flock of large birds in Blender, Unity or Houdini. Scale it there to taste."""
PLANE_RADII = 4.0
"""A plane (which has no edge) is written as a square reaching this many world radii
(:func:`flock3d.look.camera.world_extent`) each way from its origin."""


class ExportError(Flock3dError):
    """A recording that cannot be exported to the file asked for.

    An unknown format, a frame that cannot be drawn, a missing extra, a flock too large for
    the format: each is one line naming the file and the cause.
    """


class Prototype(NamedTuple):
    """One boid shape as it is written: ``vertices`` (V, 3) float32 in the body frame (forward
    +Z, up +Y), world units (the boid's size applied); ``faces`` (F, 3) uint32, counter-clockwise
    seen from outside; ``color`` (3,) sRGB in [0, 1]; ``name`` a valid identifier in every format."""

    name: str
    vertices: np.ndarray
    faces: np.ndarray
    color: tuple[float, float, float]


class WorldObject(NamedTuple):
    """Object ``index`` of ``Params.objects``: its triangles in its scaled local frame
    (:class:`flock3d.look.world.ObjectMesh`), its fill colour (sRGB), its role, whether it is
    ground (plane or heightfield) and whether it moves (then its pose is sampled per frame);
    ``colors``: a ground's (V, 3) colours a vertex by height and slope, sRGB in [0, 1], as the
    viewer draws it (:func:`flock3d.look.world.ground_colors`); None for any other object."""

    index: int
    name: str
    mesh: ObjectMesh
    color: tuple[float, float, float]
    role: str
    ground: bool
    moving: bool
    colors: np.ndarray | None


class Arena(NamedTuple):
    """The arena's wall: ``shape`` ``sphere`` (``radius``) or ``box`` (``half_extents`` (3,)),
    centred at ``center`` (3,), world units."""

    shape: str
    center: np.ndarray
    radius: float
    half_extents: np.ndarray


class Camera(NamedTuple):
    """The scene's view (``[view]``): ``eye`` and ``target`` (3,) world units, ``up`` (3,) unit,
    ``fov`` the vertical field of view, degrees; ``near``/``far`` its clipping range, world units;
    ``orientation`` (4,) the unit quaternion (w, x, y, z) turning a camera that looks along its
    local -Z with +Y up (USD's and glTF's convention) to look from ``eye`` at ``target``."""

    eye: np.ndarray
    target: np.ndarray
    up: np.ndarray
    fov: float
    near: float
    far: float
    orientation: np.ndarray


@contextlib.contextmanager
def open_recording(recording: Trajectory | str | Path) -> Iterator[Trajectory]:
    """The recording as a :class:`Trajectory`: opened (and closed after) when a path is given."""
    if isinstance(recording, Trajectory):
        yield recording
        return
    with Trajectory(recording) as trajectory:
        yield trajectory


def recorded_scene(recording: Trajectory) -> Scene:
    """The scene a flock3d recording holds; one line for an H5MD file from another program."""
    if recording.scene is None:
        raise ExportError(
            f"{recording.path}: an H5MD file from another program (no flock3d scene): export reads "
            "flock3d recordings"
        )
    return recording.scene


def _shape(name: str, size: float) -> tuple[np.ndarray, np.ndarray]:
    vertices, faces = mesh(name)
    return (vertices * np.float32(size)).astype(np.float32), faces.astype(np.uint32)


def prototypes(scene: Scene, n_boids: int) -> tuple[list[Prototype], np.ndarray]:
    """The boid shapes a flock is written with, one per species (its ``mesh`` and colour), or
    one for a flock without species (``view.mesh``, the viewer's uniform colour); and (N,) int
    the prototype of each boid."""
    view, params = scene.view, scene.params
    if not params.species:
        vertices, faces = _shape(view.mesh, view.boid_size)
        return [Prototype(view.mesh, vertices, faces, tuple(BOID_COLOR[:3]))], np.zeros(n_boids, np.int64)
    looks = {look.name: look for look in view.species}
    colors = species_colors(np.arange(len(params.species)), tuple(
        looks[s.name].color if s.name in looks else None for s in params.species
    ))  # fmt: skip
    out = []
    for k, species in enumerate(params.species):
        look = looks.get(species.name)
        shape = (look.mesh if look is not None else None) or view.mesh
        vertices, faces = _shape(shape, view.boid_size)
        out.append(Prototype(f"species_{k}_{shape}", vertices, faces, tuple(float(c) for c in colors[k, :3])))
    return out, params.species_of_boids[:n_boids].astype(np.int64)


def predator_prototype(scene: Scene) -> Prototype:
    """The predators' shape: the scene's boid shape :data:`PREDATOR_SCALE` times larger, red."""
    vertices, faces = _shape(scene.view.mesh, scene.view.boid_size * PREDATOR_SCALE)
    return Prototype(f"predator_{scene.view.mesh}", vertices, faces, tuple(PREDATOR_COLOR[:3]))


def world_objects(params: Params, extent: float | None = None) -> tuple[list[WorldObject], Frames]:
    """The scene's objects as meshes, and their :class:`~flock3d.look.world.Frames` (where each
    is at a time: ``world = origin + R @ local``); a plane reaches ``extent`` world units each way
    (default :data:`PLANE_RADII` of the world's radius)."""
    if extent is None:
        extent = PLANE_RADII * world_extent(params)[1]
    out = []
    for k, o in enumerate(params.objects):
        name = f"object_{k}_{o.shape}"
        mesh_k = object_mesh(o, extent)
        color, ground = object_color(o), is_ground(o)
        colors = ground_colors(mesh_k, color[:3]) if ground else None
        out.append(WorldObject(k, name, mesh_k, color, o.role, ground, o.motion is not None, colors))
    return out, Frames(params.objects)


def arena_of(params: Params) -> Arena | None:
    """The arena's wall, or None in open space (an arena object is one of :func:`world_objects`)."""
    if params.arena_shape == "none":
        return None
    center = np.asarray(params.arena_center, np.float64)
    half = np.asarray(params.half_extents, np.float64)
    if params.dimensions == 2:
        half = np.array([half[0], half[1], 0.0])
    if params.arena_shape in BOX_SHAPES:
        return Arena("box", center, float(np.linalg.norm(half)), half)
    return Arena("sphere", center, float(params.arena_radius), half)


def camera_of(scene: Scene) -> Camera:
    """The scene's camera as the viewer opens it: aimed at the world's centre from the view's
    azimuth and elevation, at ``view.camera_distance`` or the distance framing the world."""
    center, radius = world_extent(scene.params)
    view = scene.view
    distance = view.camera_distance or frame_distance(radius)
    planar = scene.params.dimensions == 2
    back = view_direction(view.camera_azimuth, view.camera_elevation, planar)  # the camera's +Z
    eye = center + distance * back
    # Looking straight down, +Y cannot be up on the picture: -Z is (the far side at the top).
    up = np.array([0.0, 1.0, 0.0]) if abs(back[1]) < 0.999 else np.array([0.0, 0.0, -1.0])
    right = np.cross(up, back)
    right /= np.linalg.norm(right)
    rotation = np.column_stack([right, np.cross(back, right), back])  # local axes in the world
    orientation = np.array(list(Quaternion(matrix=rotation, atol=1e-9).normalised))
    target = np.asarray(center, np.float64)
    return Camera(eye, target, up, CAMERA_FOV, distance / 1000.0, distance * 1000.0, orientation)


def frame_rate(recording: Trajectory, scene: Scene) -> float:
    """Recorded frames per simulated second (a file's time codes per second): the recording's
    own rate, or one frame per ``every`` steps for a recording of a single frame."""
    return own_rate(recording.times) or 1.0 / (scene.params.dt * recording.every)


def checked_frames(recording: Trajectory, progress: Progress | None = None) -> Iterator[FlockState]:
    """The recording's frames in order, read a block at a time, each checked as ``flock3d render``
    checks a frame it draws (:func:`flock3d.io.playback.check_drawable`: finite positions and
    velocities, unit quaternions); ``progress`` is called with the count done after each frame.

    Raises:
        ExportError: a frame that cannot be drawn, named by its number (from 1) and time.
    """
    if recording.n_frames == 0:
        raise ExportError(f"{recording.path}: the trajectory has no frames")
    for k, state in enumerate(recording.frames()):
        try:
            check_drawable(state, f"{recording.path}: {recorded_frame(k, recording.n_frames, state.time)}")
        except PlaybackError as error:
            raise ExportError(str(error)) from None
        yield state
        if progress is not None:
            progress(k + 1)


def time_codes(times: np.ndarray, rate: float) -> np.ndarray:
    """(T,) float64 time codes of frames at ``times`` (s) at ``rate`` codes per second, whole
    numbers where the product is one but for rounding (a 1/60 s step summed 60 times is not 1)."""
    codes = np.asarray(times, np.float64) * rate
    whole = np.round(codes)
    return np.where(np.abs(codes - whole) < 1e-6 * np.maximum(1.0, np.abs(whole)), whole, codes)


def linear(color) -> tuple[float, float, float]:
    """An sRGB colour in [0, 1] as linear-light RGB, what USD's displayColor and glTF's
    baseColorFactor hold."""
    return tuple(float(c) for c in linear_from_srgb(np.asarray(color, np.float64)[:3]))


def linear_rows(colors) -> np.ndarray:
    """(V, 3) sRGB colours in [0, 1] as linear-light float32 rows, what glTF's ``COLOR_0`` and a
    vertex-interpolated displayColor hold."""
    return np.ascontiguousarray(linear_from_srgb(np.asarray(colors, np.float64)[:, :3]), np.float32)
