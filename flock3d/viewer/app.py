"""The interactive viewer: a vispy canvas beside a panel of live controls (Qt).

The simulation steps on a worker thread in real time (a fixed time step,
decoupled from the frame rate; :mod:`flock3d.viewer.session`). Each tick of a
timer takes the latest snapshot of the flock, pushes it into the renderer and
redraws, so a frame never waits for a step. Controls, shortcuts and edits of the
world change parameters between steps.

:class:`ViewerWindow` composes the viewer's roles and wires them to the panel,
the keys and the mouse: the renderer (:mod:`~flock3d.viewer.renderer`), the panel
(:mod:`~flock3d.viewer.panel`), the HUD (:mod:`~flock3d.viewer.hud`), picking and
the focus view (:mod:`~flock3d.viewer.picking`), editing the world by mouse and World tab
(:mod:`~flock3d.viewer.edit_controller`), what the controls and keys do
(:mod:`~flock3d.viewer.bindings`), opening, saving and exporting scenes
(:mod:`~flock3d.viewer.scene_controller`), each frame (:mod:`~flock3d.viewer.frame_loop`), and
screenshots and recordings (:mod:`~flock3d.viewer.record_controller`,
:mod:`~flock3d.viewer.recording`), which play at the simulation's pace whatever
frame rate the machine reached.
"""

from __future__ import annotations

import gc
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from flock3d.core import compiling
from flock3d.errors import Flock3dError
from flock3d.look.camera import flock_extent
from flock3d.scene import Scene
from flock3d.viewer.event_loop import Beside
from flock3d.viewer.frame_loop import START_HINT, watch_input
from flock3d.viewer.hud import COMPILING_TEXT
from flock3d.viewer.picking import screen_positions

__all__ = ["ViewerWindow", "run_viewer", "check_display", "COMPILING_TEXT", "START_HINT"]

FRAME_INTERVAL_MS = 16
ANTIALIAS_SAMPLES = 4
"""Multisampling of the window's OpenGL surface (anti-aliasing) on a GPU. Software OpenGL
(Mesa's llvmpipe) gets none: it rasterises the extra samples on the CPU, at the cost of
the frame rate; its window is anti-aliased by FXAA, one pass over the finished picture
(:mod:`flock3d.viewer.canvas`)."""
SOFTWARE_RENDERERS = ("llvmpipe", "softpipe", "swrast", "swiftshader")
WINDOW_SIZE = (1280, 800)
#: The least size of the 3D view: the window's minimum width is the panel's and this, and the
#: splitter cannot collapse the view (the panel alone once filled a window at its minimum width,
#: and a view of no width draws nothing).
CANVAS_MIN_SIZE = (320, 240)


def _main_window(view: Any, panel: Any) -> Any:
    """The window: the 3D view, which takes what the window gains and keeps its least size, and
    the panel beside it."""
    from PySide6 import QtWidgets

    from flock3d.viewer.panel import apply_dark_theme

    window = QtWidgets.QMainWindow()
    apply_dark_theme(window)
    splitter = QtWidgets.QSplitter()
    splitter.addWidget(view)
    splitter.addWidget(panel)
    splitter.setStretchFactor(0, 1)
    splitter.setStretchFactor(1, 0)
    view.setMinimumSize(*CANVAS_MIN_SIZE)
    splitter.setCollapsible(0, False)
    window.setCentralWidget(splitter)
    window.resize(*WINDOW_SIZE)
    return window


def seconds_since_process_start() -> float | None:
    """Wall-clock age of this process (Linux /proc), so start-up includes imports; else None."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started_ticks = int(fields[19])  # field 22 of the whole line: start time after boot
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return uptime - started_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def check_display() -> None:
    """Raise a one-line :class:`Flock3dError` when no screen is available for a window.

    An X display that is set but cannot be reached, or a system library missing for
    Qt's X11 plugin, would make Qt abort the process, so both are tried first (the
    display with the XCB library Qt itself uses; the libraries by :mod:`flock3d.viewer.xcb`).
    """
    if not sys.platform.startswith("linux"):
        return
    display, wayland = os.environ.get("DISPLAY"), os.environ.get("WAYLAND_DISPLAY")
    if not (display or wayland):
        raise Flock3dError(
            "no display found (DISPLAY is not set), so no window can open; "
            "render without a screen with `flock3d render SCENE --out movie.mp4`"
        )
    if display and not wayland and _x_display_reachable(display) is False:
        raise Flock3dError(
            f"cannot open the display {display!r} (no X server answers there), so no window can open; "
            "render without a screen with `flock3d render SCENE --out movie.mp4`"
        )
    from flock3d.viewer.xcb import check_xcb_libraries, qt_platform

    if qt_platform() == "xcb":
        check_xcb_libraries()


def _x_display_reachable(display: str) -> bool | None:
    """Whether an X server answers on ``display``; None if that cannot be told (no libxcb)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("xcb")
    if name is None:
        return None
    try:
        xcb = ctypes.CDLL(name)
    except OSError:
        return None
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    xcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
    connection = xcb.xcb_connect(display.encode(), None)
    try:
        return not connection or xcb.xcb_connection_has_error(connection) == 0
    finally:
        if connection:
            xcb.xcb_disconnect(connection)


def _use_qt() -> None:
    if os.environ.get("PYOPENGL_PLATFORM") == "egl":
        del os.environ["PYOPENGL_PLATFORM"]  # set for offscreen rendering; breaks window backends
    import vispy

    try:
        vispy.use(app="pyside6", gl="gl+")
    except Exception as error:
        text = str(error).strip().splitlines()
        raise Flock3dError(f"cannot start the Qt window system: {text[0] if text else error}") from None


def opengl_renderer() -> str:
    """The OpenGL renderer's name (GL_RENDERER) as Qt's default context reports it; "" if unknown."""
    from PySide6 import QtGui

    surface = QtGui.QOffscreenSurface()
    surface.create()
    context = QtGui.QOpenGLContext()
    try:
        if not (context.create() and context.makeCurrent(surface)):
            return ""
        name = context.functions().glGetString(0x1F01)  # GL_RENDERER
        context.doneCurrent()
        return str(name or "")
    finally:
        surface.destroy()


def antialias_samples() -> int:
    """Multisampling for the window: ANTIALIAS_SAMPLES on a GPU, none in software OpenGL."""
    renderer = opengl_renderer().lower()
    return 0 if any(name in renderer for name in SOFTWARE_RENDERERS) else ANTIALIAS_SAMPLES


class ViewerWindow:
    """The viewer's main window and everything it drives.

    Args:
        scene: the scene to open.
        output_dir: where screenshots and recordings go.
        started: ``time.perf_counter()`` at the start, to time the first frame; by default
            the process's own start (so imports count too) where the system tells it.
        dialogs: show message boxes for errors (tests turn them off; the status bar
            always shows the message).
        threaded: step the simulation on a worker thread (the default); without it
            each frame runs the steps due itself, on the GUI thread.
        samples: multisampling (anti-aliasing) of the canvas; None: :func:`antialias_samples`.
    """

    def __init__(
        self,
        scene: Scene,
        output_dir: str | Path = ".",
        started: float | None = None,
        dialogs: bool = True,
        threaded: bool = True,
        samples: int | None = None,
        rules=(),
        forces=(),
        engine: str | None = None,
    ) -> None:
        from PySide6 import QtCore, QtWidgets

        from flock3d.look.colors import BACKGROUND
        from flock3d.viewer.bindings import Bindings
        from flock3d.viewer.canvas import Canvas
        from flock3d.viewer.edit_controller import EditController
        from flock3d.viewer.frame_loop import FrameLoop
        from flock3d.viewer.hud import Hud
        from flock3d.viewer.panel import ControlPanel, WorldPanel
        from flock3d.viewer.picking import FocusVisuals
        from flock3d.viewer.record_controller import RecordController
        from flock3d.viewer.recording import Recorder
        from flock3d.viewer.renderer import FlockVisuals
        from flock3d.viewer.scene_browser import SceneBrowser, scene_entries
        from flock3d.viewer.scene_controller import SceneController
        from flock3d.viewer.session import Session

        # A window's process leaves every compile it can to a child process (see elsewhere.py).
        compiling.children_only()
        if started is None:
            age = seconds_since_process_start()
            started = time.perf_counter() - (age or 0.0)
        self.started = started
        self.first_frame_seconds: float | None = None
        self.frames_drawn = 0
        self.closed = False  # set when the window closes: a scene still opening is dropped
        self.beside = Beside()  # its waits beside the event loop, one at a time
        self.output_dir = Path(output_dir)
        self.dialogs = dialogs
        self.threaded = threaded
        self.session = Session(scene, rules=rules, forces=forces, engine=engine)
        self.focused: int | None = None
        self.camera_kind = "orbit"
        self.snapshot = self.session.snapshot()

        self.samples = antialias_samples() if samples is None else samples
        self.canvas = Canvas(
            keys=None, bgcolor=BACKGROUND, size=(960, 720), config={"samples": self.samples},
            fxaa=self.samples == 0,
        )  # fmt: skip
        self.view = self.canvas.central_widget.add_view(border_width=0)
        self.visuals = FlockVisuals(self.view, scene.view, scene.params, responsive=True)
        self.focus = FocusVisuals(self.view)
        self.hud = Hud(self.canvas.native)
        self.recorder = Recorder(self.canvas, self.output_dir)
        self.panel = ControlPanel()
        self.world_panel = WorldPanel()
        self.browser = SceneBrowser(scene_entries())
        self.tabs = QtWidgets.QTabWidget()
        self.tabs.addTab(self.panel, "Flock")
        self.tabs.addTab(self.world_panel, "World")
        self.tabs.addTab(self.browser, "Scenes")
        self.editing = EditController(self)
        self.scenes = SceneController(self)
        self.records = RecordController(self)
        self.bindings = Bindings(self)

        self.window = _main_window(self.canvas.native, self.tabs)
        self.status = self.window.statusBar()

        self.frames = FrameLoop(self)
        self._input = watch_input(self.frames)
        QtWidgets.QApplication.instance().installEventFilter(self._input)
        self.bindings.connect()
        self.editing.connect()
        # Around the canvas's own draw handler: the frame's draw is timed between them.
        self.canvas.events.draw.connect(self.frames.draw_begins, position="first")
        self.canvas.events.draw.connect(self.frames.drawn, position="last")
        self.window.closeEvent = self._close_event  # type: ignore[method-assign]

        self.scenes.apply(scene)
        self.visuals.scenery.prime()  # until the first frame is drawn (FrameLoop.drawn)
        # What is built so far (numba, vispy, Qt: about 200,000 objects) lives as long as the
        # window. A full collection walked it all for 100-170 ms on the UI thread whenever an
        # open's allocations set one off; frozen, one walks only what came after. Closing thaws it.
        gc.collect()
        gc.freeze()
        self.timer = QtCore.QTimer()
        self.timer.timeout.connect(self.tick)
        self.timer.start(FRAME_INTERVAL_MS)
        if threaded:
            self.session.start()
            self.session.precompile_shipped()  # the other shipped scenes, compiled in the background

    # -- scenes and files (:mod:`~flock3d.viewer.scene_controller`) -------------------------

    def open_scene(self, path: str | Path) -> bool:
        """Switch to the scene in ``path`` (or a shipped scene's name); on a bad file, say why
        and keep the current one."""
        return self.scenes.open_scene(path)

    def save_scene(self, path: str | Path) -> Path:
        """Write the current parameters and seed as a scene file."""
        return self.scenes.save_scene(path)

    def export(self, path: str | Path, seconds: float = 20.0):
        """Export the flock as it runs now to ``path`` from a process of its own; returns the
        ``QProcess`` (:meth:`~flock3d.viewer.scene_controller.SceneController.export`)."""
        return self.scenes.export(path, seconds)

    def warn(self, title: str, text: str) -> None:
        """Say ``text`` in the status bar (its first line) and, with dialogs, in a message box."""
        from PySide6 import QtWidgets

        self.status.showMessage(text.splitlines()[0], 8000)
        if self.dialogs:
            QtWidgets.QMessageBox.warning(self.window, title, text)

    # -- live edits -----------------------------------------------------------------------

    def set_param(self, field: str, value: float) -> None:
        """Change one parameter of the running flock (applied before the next step); ``count``
        starts a flock of that many over (:meth:`restart`)."""
        try:
            if field == "count":
                self.restart(self.session.seed, self.session.params.replace(count=int(value)))
                params = self.session.params
            else:
                params = self.session.set_param(field, value)
        except ValueError as error:
            self.status.showMessage(f"not applied: {error}", 6000)
            params = self.session.params
        self.panel.show_params(params)
        self.visuals.set_params(params)
        if field == "count":
            self.set_focus(None)
            self._push_state()

    def set_time_scale(self, value: float) -> None:
        self.session.time_scale = value

    def set_paused(self, paused: bool) -> None:
        self.session.paused = paused
        self.panel.buttons["pause"].setText("Play" if paused else "Pause")

    def single_step(self) -> None:
        self.session.single_step()
        self._push_state()

    def reset(self) -> None:
        if self.restart(self.session.seed):
            self.status.showMessage(f"reset (seed {self.session.seed})", 3000)

    def reseed(self) -> None:
        if self.restart(self.session.seed + 1):
            self.status.showMessage(f"reseeded: seed {self.session.seed}", 3000)

    def busy(self, ms: int = 5000) -> bool:
        """Whether a job runs beside the event loop (:attr:`beside`: a scene opening, a grid
        read, boids placed); then the status bar says so for ``ms`` and the caller starts
        nothing, since their nested loops would each act on the world the other left."""
        if self.beside.running is None:
            return False
        self.status.showMessage(f"still {self.beside.running}", ms)
        return True

    def restart(self, seed: int, params=None) -> bool:
        """Start the flock over from ``seed`` (with ``params``: the current ones by default);
        whether it did.

        Its boids are placed beside the event loop, as a scene's are when it opens: in a world
        on a fresh install, that waits for a child compiling the objects' distances (11 s after
        the first object was added to the default scene). One wait at a time: asked for during
        another, or when the parameters changed meanwhile (a slider moved), it says so and
        starts nothing over.
        """
        if self.busy():
            return False
        params = self.session.params if params is None else params
        now = self.session.params
        self.status.showMessage("placing the boids...")
        flock = self.beside.run("placing the boids", lambda: self.session.new_flock(params, seed))
        if self.closed:
            return False
        if self.session.params is not now:
            self.status.showMessage("not started over: the flock changed meanwhile", 5000)
            return False
        self.session.restart(flock, seed)
        self.editing.world_changed()
        if self.status.currentMessage() == "placing the boids...":  # not a message said since
            self.status.clearMessage()
        return True

    def set_camera(self, kind: str) -> None:
        """Switch to camera ``kind``; every kind starts framing the arena, or the flock in open space
        (follow: the flock, or the focused boid's neighbourhood)."""
        self.camera_kind = kind
        positions = self.snapshot.state.positions
        target = self.follow_target() if kind == "follow" and len(positions) else None
        self.visuals.make_camera(kind, positions, target)
        self._push_state()

    def follow_target(self) -> tuple[np.ndarray, float]:
        """Centre and radius the follow camera frames: the focused boid's view, or the flock."""
        state = self.snapshot.state
        if self.focused is not None and self.focused < len(state):
            reach = self.session.params.perception_distance
            radius = 3.0 * reach if math.isfinite(reach) else 10.0 * self.visuals.boid_size
            return state.positions[self.focused], radius
        return flock_extent(state.positions, self.visuals.boid_size)

    def set_focus(self, index: int | None) -> None:
        """Single out boid ``index`` (None: no focus)."""
        self.focused = index
        if index is None:
            self.focus.hide()
        self.panel.quietly(self.panel.focus, lambda: self.panel.focus.setChecked(index is not None))

    # -- files (:mod:`~flock3d.viewer.record_controller`) -----------------------------------

    def screenshot(self, path: str | Path | None = None) -> Path:
        """Save the 3D view as a PNG (in the output folder unless ``path`` is given)."""
        return self.records.screenshot(path)

    def set_recording(self, on: bool) -> None:
        """Start or stop recording the 3D view to an MP4 in the output folder, at the
        simulation's pace (:mod:`flock3d.viewer.recording`)."""
        self.records.set_recording(on)

    def set_antialias(self, on: bool) -> None:
        self.canvas.fxaa = on
        self.canvas.update()

    # -- the loop -------------------------------------------------------------------------

    def tick(self) -> None:
        """One frame (:meth:`~flock3d.viewer.frame_loop.FrameLoop.tick`)."""
        self.frames.tick()

    def _push_state(self) -> None:
        """Draw the session's latest snapshot now."""
        self.frames.push_state()

    def screen_positions(self) -> np.ndarray:
        """(N, 2) canvas pixel positions of the boids as last drawn (NaN behind the camera)."""
        transform = self.view.scene.node_transform(self.canvas.scene)  # scene -> canvas pixels
        return screen_positions(transform, self.snapshot.state.positions)

    # -- lifetime -------------------------------------------------------------------------

    def show(self) -> None:
        """Show the window, raised and active with the canvas focused: the keys work at once,
        with no click first (a window shown from a terminal is not always activated)."""
        self.window.show()
        self.window.raise_()
        self.window.activateWindow()
        self.canvas.native.setFocus()

    def close(self) -> None:
        self.window.close()

    def _close_event(self, event) -> None:
        from PySide6 import QtWidgets

        if not self.closed and not self.scenes.may_leave("quitting"):
            event.ignore()  # the user kept the scene and its changes
            return
        self.closed = True
        self.timer.stop()
        self.session.stop()
        if self.recorder.recording:
            self.set_recording(False)
        QtWidgets.QApplication.instance().removeEventFilter(self._input)
        gc.unfreeze()  # what the window froze (see __init__) is collected again once it is gone
        event.accept()


def run_viewer(scene: Scene, rules=(), forces=(), engine: str | None = None) -> int:
    """Open the viewer on ``scene`` (with your ``rules`` and ``forces``, its flocks stepped by
    ``engine``, else each scene's ``sim.engine``) until its window closes."""
    check_display()
    _use_qt()
    from vispy import app

    application = app.use_app()
    try:
        application.create()
    except Exception as error:
        raise Flock3dError(f"cannot open a window: {error}") from None
    viewer = ViewerWindow(scene, output_dir=Path.cwd(), rules=rules, forces=forces, engine=engine)
    viewer.show()
    application.run()
    return 0
