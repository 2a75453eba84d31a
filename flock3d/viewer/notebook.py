"""The viewer inline in a Jupyter notebook: ``flock3d.show(flock_or_scene)``.

The canvas is vispy's ``jupyter_rfb`` backend (a remote frame buffer widget: the
kernel renders, the browser shows the frames and sends back mouse and keyboard
events), drawn with the same renderer as the window, beside ipywidgets controls:
play/pause, reset, camera, colours, boid shape and trails. The flock steps on a
worker thread in real time, as in the window. Rendering needs no display: the
kernel draws with EGL (headless OpenGL), so it works on a remote server too.

Needs the ``jupyter_rfb`` package (and ``ipywidgets``, which it brings).
"""

from __future__ import annotations

import numpy as np

from flock3d import extras
from flock3d.core.fields import checked_count
from flock3d.errors import Flock3dError
from flock3d.look.camera import flock_extent
from flock3d.scene import Scene, resolve_scene

__all__ = ["NotebookViewer", "show"]

FRAME_INTERVAL_S = 1.0 / 30.0


#: The cameras :meth:`NotebookViewer.set_camera` takes.
CAMERA_KINDS = ("orbit", "arcball", "follow")


def _scene_and_flock(source, seed: int | None):
    """(scene, flock or None) from a Flock, a Scene, or a scene name or path."""
    from flock3d.flock import Flock

    if isinstance(source, Flock):
        if seed is not None:
            raise ValueError(
                "seed is for a scene: a Flock shows its own state (Flock(params, seed) draws it)"
            )
        scene = Scene(params=source.params, seed=source.seed if source.seed is not None else 0)
        return scene, source
    if isinstance(source, Scene):
        return (source if seed is None else source.replace(seed=seed)), None
    if isinstance(source, str) or hasattr(source, "__fspath__"):
        scene = resolve_scene(str(source))
        return (scene if seed is None else scene.replace(seed=seed)), None
    raise TypeError(f"show() takes a Flock, a Scene or a scene name or path, not {type(source).__name__}")


#: What the notebook viewer imports of the viewer extra: an EGL canvas in a frame-buffer widget.
NOTEBOOK_MODULES = ("vispy", "OpenGL", "jupyter_rfb", "ipywidgets")


class NotebookViewer:
    """A flock playing inline in a notebook, with its controls (see :func:`show`).

    Attributes:
        session: the :class:`~flock3d.viewer.session.Session` stepping the flock (:attr:`flock`).
        canvas: the vispy canvas; ``canvas.native`` is the frame-buffer widget.
        widget: the whole ipywidgets box (canvas and controls), what the notebook displays.
        controls: the control widgets by name: ``play``, ``reset``, ``camera``, ``colors``,
            ``mesh``, ``trails``.
    """

    def __init__(self, scene: Scene, flock=None, size: tuple[int, int] = (720, 480), play: bool = True):
        extras.require("viewer", "the notebook viewer", NOTEBOOK_MODULES)
        import ipywidgets
        from vispy import app

        from flock3d.look.colors import BACKGROUND
        from flock3d.viewer.canvas import Canvas
        from flock3d.viewer.offscreen import use_offscreen
        from flock3d.viewer.renderer import FlockVisuals
        from flock3d.viewer.session import Session

        use_offscreen()  # the frame buffer widget draws in an EGL context: no display needed
        import vispy.ext.egl  # noqa: F401  (so that vispy's offscreen context picks EGL first)

        try:
            application = app.Application("jupyter_rfb")
        except Exception as error:
            raise Flock3dError(f"the notebook viewer needs jupyter_rfb: {error}") from None
        from IPython.utils.capture import capture_output

        self.size = tuple(size)
        self.session = Session(scene, flock)
        # The frame buffer widget displays an output area of its own (for errors in its
        # callbacks) the moment it exists: a stray "RFBOutputContext()" line in plain Python, an
        # empty output in a notebook. That display is swallowed, and the area goes in our box.
        with capture_output(stdout=True, stderr=False, display=True):
            # FXAA: the kernel draws with software OpenGL as a rule, without multisampling.
            self.canvas = Canvas(app=application, size=size, bgcolor=BACKGROUND, keys=None, fxaa=True)
        errors = getattr(self.canvas.native, "_output_context", None)
        self.view = self.canvas.central_widget.add_view(border_width=0)
        self.visuals = FlockVisuals(self.view, scene.view, self.session.params, responsive=True)
        self.camera_kind = (
            scene.view.camera if scene.view.camera in ("orbit", "arcball", "follow") else "orbit"
        )
        self._snapshot = self.session.snapshot()
        self.set_camera(self.camera_kind)

        from flock3d.scene.schema import COLOR_MODES, MESHES

        layout = ipywidgets.Layout(width="auto")
        self.controls = {
            "play": ipywidgets.ToggleButton(value=play, description="Pause" if play else "Play",
                                            tooltip="Play or pause the simulation"),
            "reset": ipywidgets.Button(description="Reset", tooltip="Start over from the same seed"),
            "camera": ipywidgets.Dropdown(options=list(CAMERA_KINDS), value=self.camera_kind,
                                          description="Camera", layout=layout),
            "colors": ipywidgets.Dropdown(options=list(COLOR_MODES), value=self.visuals.color_mode,
                                          description="Colour by", layout=layout),
            "mesh": ipywidgets.Dropdown(options=list(MESHES), value=self.visuals.mesh_name,
                                        description="Shape", layout=layout),
            "trails": ipywidgets.FloatSlider(value=self.visuals.trail_seconds, min=0.0, max=10.0, step=0.5,
                                             description="Trails (s)", layout=layout),
        }  # fmt: skip
        c = self.controls
        c["play"].observe(lambda change: self.set_playing(change["new"]), names="value")
        c["reset"].on_click(lambda _: self.reset())
        c["camera"].observe(lambda change: self.set_camera(change["new"]), names="value")
        c["colors"].observe(lambda change: self.visuals.set_color_mode(change["new"]), names="value")
        c["mesh"].observe(lambda change: self.visuals.set_mesh(change["new"]), names="value")
        c["trails"].observe(lambda change: self.visuals.set_trails(change["new"]), names="value")
        self.widget = ipywidgets.VBox(
            [self.canvas.native, ipywidgets.HBox([c["play"], c["reset"], c["camera"], c["colors"]]),
             ipywidgets.HBox([c["mesh"], c["trails"]]), *([errors] if errors is not None else [])]
        )  # fmt: skip
        self.canvas.events.draw.connect(self._before_draw, position="first")
        self.session.paused = not play
        self.session.start()
        self.timer = app.Timer(FRAME_INTERVAL_S, connect=lambda _: self.canvas.update(), app=application)
        if _event_loop_running():  # in a notebook's kernel; elsewhere frames are drawn on demand
            self.timer.start()

    # -- controls -------------------------------------------------------------------------

    @property
    def flock(self):
        """The flock stepped now: the one :func:`show` was given, until :meth:`reset` (or the Reset
        button) starts a new one from the same seed. Pause before reading its arrays."""
        return self.session.flock

    def set_playing(self, playing: bool) -> None:
        """Play (True) or pause (False), as the Play/Pause button does; the button follows."""
        self.session.paused = not playing
        button = self.controls["play"]
        button.value, button.description = bool(playing), "Pause" if playing else "Play"

    def reset(self) -> None:
        """Start over from the same seed: a new flock (:attr:`flock`), the same parameters."""
        self.session.reset()
        self.canvas.update()

    def set_camera(self, kind: str) -> None:
        """orbit or arcball (framing the arena, or the flock in open space), or follow the flock.

        Raises:
            ValueError: another name.
        """
        if kind not in CAMERA_KINDS:
            raise ValueError(f"camera must be one of {', '.join(CAMERA_KINDS)} (got {kind!r})")
        self.camera_kind = kind
        self.visuals.make_camera(kind, self._snapshot.state.positions)
        self.canvas.update()

    # -- drawing --------------------------------------------------------------------------

    def _before_draw(self, event=None) -> None:
        """Each frame: the latest snapshot of the flock into the visuals."""
        snap = self._snapshot = self.session.snapshot()
        self.visuals.update(snap.state, acceleration=snap.acceleration)
        if self.camera_kind == "follow" and len(snap.state):
            self.visuals.framing.follow(
                self.view.camera, *flock_extent(snap.state.positions, self.visuals.boid_size)
            )

    def frame(self) -> np.ndarray:
        """Draw now and return the widget's frame, (H, W, 3) uint8, as the notebook shows it."""
        rfb = self.canvas.native
        if rfb._vispy_get_physical_size()[0] <= 1:  # not shown yet: size it as it will be
            w, h = self.size
            rfb.handle_event({"type": "resize", "width": w, "height": h, "ratio": 1.0})
        image = rfb.get_frame()
        return np.asarray(image)[..., :3]

    def close(self) -> None:
        """Stop the simulation and the frame timer, and close the widget."""
        if self.timer.running:
            self.timer.stop()
        self.session.stop()
        self.canvas.close()

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)

    def __repr__(self) -> str:
        snap = self._snapshot
        return f"NotebookViewer({len(snap.state)} boids, t={snap.time:.2f} s, camera={self.camera_kind!r})"


def _event_loop_running() -> bool:
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def show(source="default", *, seed: int | None = None, size: tuple[int, int] = (720, 480), play: bool = True):
    """Watch a flock inline in a Jupyter notebook: the viewer's canvas and its controls.

    Args:
        source: a :class:`~flock3d.Flock` (the viewer steps it, in the background: pause
            before reading its arrays), a :class:`~flock3d.Scene`, or a scene's name or path.
        seed: seed for a scene (default: the scene's); none for a Flock, which has its state.
        size: canvas size (width, height) [pixels], each 16 to 8,192.
        play: start playing (True) or paused.

    Returns:
        A :class:`NotebookViewer`; as the last expression of a cell it displays itself.
        Drag to orbit, scroll to zoom; ``.set_playing(False)`` pauses, ``.close()`` stops it.

    Raises:
        TypeError, ValueError: a ``size`` that is not two whole numbers from 16 to 8,192, or a
            ``seed`` given with a Flock.

    Examples:
        >>> import flock3d
        >>> flock3d.show("torus")  # doctest: +SKIP
    """
    if not isinstance(size, (tuple, list)) or len(size) != 2:
        raise TypeError(f"size must be (width, height) in pixels (got {size!r})")
    size = tuple(checked_count(v, "size", least=16, most=8192) for v in size)
    scene, flock = _scene_and_flock(source, seed)
    return NotebookViewer(scene, flock, size=size, play=play)
