"""The viewer's cameras: making one of each kind, aiming it at what is framed, and reading back
where it is.

What a camera should frame (the arena, the flock) and from which angles is the scene's and the
renderer's business (:mod:`flock3d.look.camera` holds the numpy-only framing the exports share);
this module turns that into vispy cameras.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from vispy import scene

from flock3d.core import quaternion
from flock3d.look.camera import CAMERA_FOV, FollowDistance, view_angles, view_direction

__all__ = ["CameraFrame", "FLY_KEYS", "Framing", "aim", "camera_frame", "new_camera", "placement", "renew"]

#: The fly camera's keys, chosen to leave the viewer's own shortcuts alone:
#: arrows move forward, back and sideways, page up/down rise and sink,
#: I/K pitch, J/L turn, Q/E roll; dragging with the mouse looks around.
FLY_KEYS = {
    "Up": (+1, 1), "Down": (-1, 1), "Right": (+1, 2), "Left": (-1, 2),
    "PageUp": (+1, 3), "PageDown": (-1, 3),
    "I": (+1, 4), "K": (-1, 4), "L": (+1, 5), "J": (-1, 5), "Q": (+1, 6), "E": (-1, 6),
}  # fmt: skip


@dataclass
class CameraFrame:
    """Where the camera is, in world coordinates: unit vectors and the eye (None: orthographic)."""

    into: np.ndarray
    up: np.ndarray
    right: np.ndarray
    eye: np.ndarray | None


def new_camera(kind: str = "orbit") -> scene.cameras.BaseCamera:
    """A camera of ``kind``: orbit, follow and fixed are turntables (up +y), arcball, or fly
    (moved by :data:`FLY_KEYS`)."""
    if kind == "arcball":
        return scene.cameras.ArcballCamera(fov=CAMERA_FOV)
    if kind == "fly":
        camera = scene.cameras.FlyCamera(fov=CAMERA_FOV)
        camera.keymap.clear()
        camera.keymap.update(FLY_KEYS)
        return camera
    return scene.cameras.TurntableCamera(fov=CAMERA_FOV, up="+y")


def renew(camera, kind: str) -> bool:
    """Make ``camera`` as :func:`new_camera` makes one of ``kind`` (before it is aimed), when it is
    a turntable and ``kind`` is one: level, at the viewer's field of view. False when it is not.

    A view given a new camera rebuilds every visual's transform chain on its next update (about
    70 ms of the UI thread for a world in software OpenGL): a scene opened with the camera kind
    it had keeps its camera."""
    if kind in ("arcball", "fly") or type(camera) is not scene.cameras.TurntableCamera:
        return False
    camera.roll, camera.fov, camera.up = 0.0, CAMERA_FOV, "+y"
    return True


def aim(camera, target: np.ndarray, distance: float, azimuth: float, elevation: float, planar: bool) -> None:
    """Point ``camera`` at ``target`` (3,) from ``distance`` away at the turntable's angles
    (degrees, :func:`~flock3d.look.camera.view_direction`); a planar flock (in a z = const plane)
    is watched from above: along -z, with +y up."""
    if planar:
        azimuth, elevation = 90.0, 0.0
    if isinstance(camera, scene.cameras.TurntableCamera):
        camera.center, camera.distance = tuple(target), distance
        camera.azimuth, camera.elevation = azimuth, elevation
    elif isinstance(camera, scene.cameras.FlyCamera):
        offset = view_direction(azimuth, elevation, planar)
        _aim_fly_camera(camera, target + distance * offset, target, planar)
        camera.scale_factor = distance / 3.0  # speed: units per second
    else:
        camera.center = tuple(target)
        camera.distance = distance
        if isinstance(camera, scene.cameras.ArcballCamera):
            _turn_arcball(camera, -view_direction(azimuth, elevation, planar))
    camera.view_changed()


def _turn_arcball(camera, into: np.ndarray) -> None:
    """Turn an ArcballCamera to look along ``into`` (unit), the world's +y up, as the turntables
    look from the same angles. Unturned, vispy's arcball looks along +y with +z up (from below,
    for a world whose up is +y), and it turns by its quaternion's axis with y and z swapped."""
    from pyquaternion import Quaternion as Rotation
    from vispy.util.quaternion import Quaternion

    up = np.array([0.0, 1.0, 0.0]) - into[1] * into
    if np.linalg.norm(up) < 1e-9:  # looking straight down or up: any level direction is up
        up = np.array([0.0, 0.0, -1.0])
    up /= np.linalg.norm(up)
    # Rows: where the camera's right (+x), forward (+y) and up (+z) go; vispy maps p to p @ turn.
    turn = np.array([np.cross(into, up), into, up])
    rotation = Rotation(matrix=turn.T)
    x, y, z = rotation.axis if rotation.angle != 0.0 else (0.0, 0.0, 1.0)
    camera._quaternion = Quaternion.create_from_axis_angle(rotation.angle, x, z, y)


def camera_frame(view) -> CameraFrame | None:
    """The directions and eye of ``view``'s camera in the world, whatever its kind.

    Found by mapping canvas points back into the scene, which holds for every camera
    and needs no knowledge of their conventions.
    """
    tr = view.scene.node_transform(view.canvas.scene)
    w, h = view.canvas.size
    cx, cy = w / 2, h / 2
    points = np.array([[cx, cy, 0.0, 1.0], [cx, cy, 0.5, 1.0], [cx, cy - 1, 0.0, 1.0],
                       [cx + 1, cy, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.5, 1.0]])  # fmt: skip
    mapped = tr.imap(points)
    with np.errstate(all="ignore"):
        centre, deeper, up, right, corner, corner_deeper = mapped[:, :3] / mapped[:, 3:4]
    into, up, right = deeper - centre, up - centre, right - centre
    norms = [np.linalg.norm(v) for v in (into, up, right)]
    if min(norms) == 0 or not np.all(np.isfinite(norms)):
        return None
    into, up, right = into / norms[0], up / norms[1], right / norms[2]
    # The eye: where the central ray and a corner ray meet (parallel rays: orthographic).
    d2 = corner_deeper - corner
    eye = None
    if np.all(np.isfinite(d2)) and np.linalg.norm(d2) > 0:
        d2 = d2 / np.linalg.norm(d2)
        a = np.c_[into, -d2]
        if abs(np.dot(into, d2)) < 0.999999:
            t, _ = np.linalg.lstsq(a, corner - centre, rcond=None)[0]
            eye = centre + t * into
    return CameraFrame(into, up, right, eye)


def placement(view, target: np.ndarray) -> tuple[float, float, float] | None:
    """Where ``view``'s camera is, as a scene's view hints place one: (azimuth, elevation,
    distance) about ``target`` (a turntable's own centre); None for a camera seen from no point."""
    camera = view.camera
    if isinstance(camera, scene.cameras.TurntableCamera) and camera.distance is not None:
        return float(camera.azimuth), float(camera.elevation), float(camera.distance)
    frame = camera_frame(view)
    if frame is None or frame.eye is None:
        return None
    offset = frame.eye - target
    distance = float(np.linalg.norm(offset))
    return (*view_angles(offset / distance), distance) if distance > 0.0 else None


class Framing:
    """Where a view's camera was last aimed from the scene's hints, and the distance its follow
    camera keeps: what tells a camera the user moved from one left alone, and what eases a
    following camera's distance (:class:`~flock3d.look.camera.FollowDistance`)."""

    def __init__(self) -> None:
        self.follow_distance = FollowDistance()
        self.target = np.zeros(3)
        self.placement = (math.nan, math.nan, math.nan)

    def aimed(self, target: np.ndarray, azimuth: float, elevation: float, distance: float, planar: bool):
        """The camera was aimed at ``target`` from these hints (as :func:`aim` turns it)."""
        self.target = np.asarray(target, np.float64)
        self.placement = (90.0, 0.0, distance) if planar else (azimuth, elevation, distance)

    def follow(self, camera, centre: np.ndarray, radius: float) -> None:
        """One frame of a follow camera: centred on ``centre``, its distance eased towards the
        one framing ``radius`` at the zoom the viewer chose."""
        camera.center = tuple(centre)
        camera.distance = self.follow_distance.next(radius, camera.distance)

    def by_hand(self, view) -> tuple[float, float, float] | None:
        """``view``'s camera's (azimuth, elevation, distance) (:func:`placement`) where it was
        turned or zoomed since it was last aimed, else None."""
        now = placement(view, self.target)
        return None if now is None or np.allclose(now, self.placement, rtol=1e-6, atol=1e-6) else now


def _aim_fly_camera(camera, eye: np.ndarray, target: np.ndarray, planar: bool) -> None:
    """Put a FlyCamera at ``eye`` looking at ``target``, level with the world's up."""
    from vispy.util.quaternion import Quaternion

    forward = np.asarray(target, np.float64) - eye
    forward /= np.linalg.norm(forward)
    world_up = np.array([0.0, 1.0, 0.0])
    # q turns the camera's axes (right +x, up +y, looking along -z) onto the world's.
    q = quaternion.look_rotation(-forward[None], up=world_up)[0]
    camera.center = tuple(eye)
    camera.rotation1 = Quaternion(q[0], -q[1], -q[2], -q[3])
    camera.rotation2 = Quaternion()
    if planar:
        camera.auto_roll = False
