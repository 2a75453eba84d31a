"""Rendering without a window (EGL): frames as numpy images, for ``flock3d render`` and tests.

Headless OpenGL needs ``EGL_PLATFORM=surfaceless`` and ``PYOPENGL_PLATFORM=egl``
set before vispy creates anything, and vispy's ``egl`` app with the ``gl+``
backend (instanced meshes need it). ``PYOPENGL_PLATFORM=egl`` breaks window
backends, so a process renders either offscreen or in a window, not both.
"""

from __future__ import annotations

import os

import numpy as np

from flock3d.core.state import FlockState
from flock3d.errors import Flock3dError
from flock3d.look.camera import flock_extent, view_angles
from flock3d.scene import Scene

__all__ = [
    "RenderError",
    "use_offscreen",
    "OffscreenRenderer",
    "CAMERAS",
    "ORBIT_DEGREES_PER_SECOND",
    "downsample",
    "flock_png",
]

CAMERAS = ("orbit", "follow", "fixed", "axis")
#: How far the axis camera turns towards the flock's axis each frame (1: at once).
AXIS_EASING = 0.1
ORBIT_DEGREES_PER_SECOND = 12.0
"""How fast the orbiting camera circles the arena (one turn in 30 s)."""
SUPERSAMPLE = 2
"""Offscreen frames are drawn at this many times the size and averaged down (anti-aliasing)."""


def downsample(image: np.ndarray, factor: int) -> np.ndarray:
    """(H * f, W * f, 3) uint8 -> (H, W, 3): each f x f block of pixels averaged (anti-aliasing)."""
    if factor == 1:
        return image
    h, w = image.shape[0] // factor, image.shape[1] // factor
    total = np.zeros((h, w, 3), np.uint16)
    for dy in range(factor):
        for dx in range(factor):
            total += image[dy : h * factor : factor, dx : w * factor : factor, :3]
    total += factor * factor // 2
    return (total // (factor * factor)).astype(np.uint8)


class RenderError(Flock3dError):
    """Offscreen rendering is not possible here (no EGL/OpenGL)."""


_selected = False


def use_offscreen() -> None:
    """Select vispy's headless EGL backend for this process (idempotent)."""
    global _selected
    if _selected:
        return
    os.environ.setdefault("EGL_PLATFORM", "surfaceless")
    os.environ["PYOPENGL_PLATFORM"] = "egl"
    import vispy

    try:
        vispy.use(app="egl", gl="gl+")
    except Exception as error:  # vispy raises RuntimeError or ImportError with a long text
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise RenderError(f"offscreen rendering needs EGL (libEGL/Mesa): {first}") from None
    _selected = True


class OffscreenRenderer:
    """Draws flock states into images of a fixed size, with the viewer's look.

    Args:
        scene: supplies the arena, the viewing hints and the speed range for colours.
        size: (width, height) in pixels.
        camera: ``orbit`` (circles the arena), ``follow`` (tracks the flock's
            centre), ``fixed`` (the scene's camera hints) or ``axis`` (looks down the axis
            the flock turns about, its angular momentum about its centre: a mill is seen
            face-on, its empty core in the middle); None: the scene's ``view.camera`` when it
            is one of these, else ``orbit``.
        fps: frames per second of the output, for the orbit's pace.
        supersample: anti-aliasing: each frame is drawn this many times larger in both
            directions and averaged down (1: none).
    """

    def __init__(
        self,
        scene: Scene,
        size: tuple[int, int] = (800, 600),
        camera: str | None = None,
        fps: float = 30.0,
        supersample: int = SUPERSAMPLE,
    ):
        if camera is None:
            camera = scene.view.camera if scene.view.camera in CAMERAS else "orbit"
        if camera not in CAMERAS:
            raise ValueError(f"unknown camera {camera!r}; choose one of {', '.join(CAMERAS)}")
        use_offscreen()
        from flock3d.look.colors import BACKGROUND
        from flock3d.viewer.canvas import Canvas
        from flock3d.viewer.renderer import FlockVisuals

        self.supersample = s = max(1, int(supersample))
        self.size = tuple(size)
        try:
            # Drawn s times larger and averaged down: vispy's render(size=...) does not scale
            # a ViewBox, so the canvas itself is the larger one.
            self.canvas = Canvas(size=(size[0] * s, size[1] * s), show=False, bgcolor=BACKGROUND)
        except Exception as error:
            raise RenderError(f"cannot create an offscreen OpenGL context: {error}") from None
        self.view = self.canvas.central_widget.add_view(border_width=0)
        self.visuals = FlockVisuals(self.view, scene.view, scene.params, pixel_scale=s)
        self.camera = self.visuals.make_camera("orbit")
        self.mode = camera
        self.fps = fps
        self.frames_rendered = 0
        self._start_azimuth = self.camera.azimuth
        self._axis: np.ndarray | None = None

    def render(self, state: FlockState, acceleration: np.ndarray | None = None) -> np.ndarray:
        """The next frame: (height, width, 3) uint8 RGB. ``acceleration`` (N, 3) of the
        last step banks the boids into their turns."""
        self.visuals.update(state, acceleration=acceleration)
        if self.mode == "orbit":
            seconds = self.frames_rendered / self.fps
            self.camera.azimuth = self._start_azimuth + ORBIT_DEGREES_PER_SECOND * seconds
        elif self.mode == "axis" and len(state):
            self._look_down_the_axis(state)
        elif self.mode == "follow" and len(state):
            self.visuals.framing.follow(self.camera, *flock_extent(state.positions, self.visuals.boid_size))
        self.frames_rendered += 1
        return downsample(self.canvas.render(alpha=False), self.supersample)

    def _look_down_the_axis(self, state: FlockState) -> None:
        """Turn the camera, eased, to look along the flock's angular momentum about its centre,
        from above (the axis's upper end): a mill face-on whatever plane it formed in."""
        offsets = state.positions - state.positions.mean(axis=0)
        momentum = np.cross(offsets, state.velocities).sum(axis=0)
        size = float(np.linalg.norm(momentum))
        if not np.isfinite(size) or size == 0.0:
            return
        axis = momentum / size * (1.0 if momentum[1] >= 0.0 else -1.0)
        eased = self._axis if self._axis is not None else axis
        eased = eased + AXIS_EASING * (axis - eased)
        self._axis = eased = eased / np.linalg.norm(eased)
        self.camera.azimuth, self.camera.elevation = view_angles(eased)

    def project(self, points: np.ndarray) -> np.ndarray:
        """(K, 2) pixel positions in the rendered images of world ``points`` (K, 3)."""
        tr = self.view.scene.node_transform(self.canvas.scene)  # scene -> canvas pixels
        mapped = tr.map(np.asarray(points, dtype=float))
        return mapped[:, :2] / mapped[:, 3:4] / self.supersample

    def close(self) -> None:
        self.canvas.close()

    def __enter__(self) -> OffscreenRenderer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def flock_png(flock, size: tuple[int, int] = (480, 360)) -> bytes | None:
    """A PNG of ``flock`` as it is now, with the viewer's look (``Flock._repr_png_``).

    The camera frames the arena (the flock itself in open space). None where offscreen
    OpenGL (EGL) or the packages for drawing are missing, so a notebook falls back to text.
    """
    try:
        import imageio.v3 as iio

        from flock3d.scene import Scene, ViewHints

        scene = Scene(params=flock.params, view=ViewHints(mesh="bird"))
        camera = "follow" if flock.params.arena_shape == "none" else "fixed"
        with OffscreenRenderer(scene, size=size, camera=camera) as renderer:
            image = renderer.render(flock.state)
        return iio.imwrite("<bytes>", image, extension=".png")
    except (ImportError, RenderError):
        return None
