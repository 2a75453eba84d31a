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
(:mod:`~flock3d.viewer.edit_controller`), and screenshots and recordings
(:mod:`~flock3d.viewer.recording`), which play at the simulation's pace whatever
frame rate the machine reached.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from flock3d.core.compiling import compiling_since
from flock3d.errors import Flock3dError
from flock3d.look.camera import flock_extent
from flock3d.scene import Scene, SceneError, load_scene
from flock3d.viewer.hud import COMPILING_TEXT
from flock3d.viewer.picking import screen_positions

__all__ = ["ViewerWindow", "run_viewer", "run_event_loop", "check_display", "COMPILING_TEXT"]

FRAME_INTERVAL_MS = 16
ANTIALIAS_SAMPLES = 4
"""Multisampling of the window's OpenGL surface (anti-aliasing) on a GPU. Software OpenGL
(Mesa's llvmpipe) gets none: it rasterises the extra samples on the CPU, at the cost of
the frame rate; its window is anti-aliased by FXAA, one pass over the finished picture
(:mod:`flock3d.viewer.canvas`)."""
SOFTWARE_RENDERERS = ("llvmpipe", "softpipe", "swrast", "swiftshader")
WINDOW_SIZE = (1280, 800)


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


#: Simulated seconds the Export button offers.
EXPORT_SECONDS = 20.0
#: The status bar's first words: how to get going (the timing of the first frame is bench's).
START_HINT = "drag to orbit · scroll to zoom · right-click to add things · h for every key"


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
    ) -> None:
        from PySide6 import QtCore, QtGui, QtWidgets

        from flock3d.look.colors import BACKGROUND
        from flock3d.viewer.canvas import Canvas
        from flock3d.viewer.edit_controller import EditController
        from flock3d.viewer.hud import Hud, HudMeter
        from flock3d.viewer.panel import (
            ControlPanel,
            SceneBrowser,
            WorldPanel,
            apply_dark_theme,
            scene_entries,
        )
        from flock3d.viewer.picking import FocusVisuals
        from flock3d.viewer.recording import Recorder
        from flock3d.viewer.renderer import FlockVisuals
        from flock3d.viewer.session import Session

        if started is None:
            age = seconds_since_process_start()
            started = time.perf_counter() - (age or 0.0)
        self.started = started
        self.first_frame_seconds: float | None = None
        self.frames_drawn = 0
        self.output_dir = Path(output_dir)
        self.dialogs = dialogs
        self.threaded = threaded
        self.session = Session(scene, rules=rules, forces=forces)
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

        self.window = QtWidgets.QMainWindow()
        apply_dark_theme(self.window)
        splitter = QtWidgets.QSplitter()
        splitter.addWidget(self.canvas.native)
        splitter.addWidget(self.tabs)
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 0)
        self.window.setCentralWidget(splitter)
        self.window.resize(*WINDOW_SIZE)
        self.status = self.window.statusBar()

        self._connect_panel()
        self._shortcuts = []
        for keys, action in self._key_bindings().items():
            for key in keys:
                shortcut = QtGui.QShortcut(QtGui.QKeySequence(key), self.window)
                shortcut.activated.connect(action)
                self._shortcuts.append(shortcut)
        self.editing.connect()
        self.canvas.events.draw.connect(self._drawn)
        self.window.closeEvent = self._close_event  # type: ignore[method-assign]

        self._exports: list = []
        self._last_tick = time.perf_counter()
        self._meter = HudMeter(time.perf_counter(), self.snapshot)
        self._apply_scene(scene)
        self.timer = QtCore.QTimer()
        self.timer.timeout.connect(self.tick)
        self.timer.start(FRAME_INTERVAL_MS)
        if threaded:
            self.session.start()
            self.session.precompile_shipped()  # the other shipped scenes, compiled in the background

    # -- wiring ---------------------------------------------------------------------------

    def _connect_panel(self) -> None:
        p = self.panel
        p.param_edited.connect(self.set_param)
        p.count_edited.connect(lambda n: self.set_param("count", n))
        p.time_scale_edited.connect(self._set_time_scale)
        p.camera_chosen.connect(self.set_camera)
        p.color_mode_chosen.connect(self.visuals.set_color_mode)
        p.mesh_chosen.connect(self.visuals.set_mesh)
        p.arena_toggled.connect(lambda on: self.visuals.set_params(self.session.params, show_arena=on))
        p.axes_toggled.connect(lambda on: setattr(self.visuals.axes, "visible", on))
        p.guides_toggled.connect(self.visuals.set_guides)
        p.focus_toggled.connect(lambda on: self.set_focus(0 if on and len(self.snapshot.state) else None))
        p.trails_edited.connect(self.visuals.set_trails)
        p.vectors_toggled.connect(lambda on: setattr(self.visuals, "show_vectors", on))
        p.antialias_toggled.connect(self._set_antialias)
        p.quietly(p.antialias, lambda: p.antialias.setChecked(self.canvas.fxaa))
        p.antialias.setVisible(self.samples == 0)  # a multisampled window needs none
        self.browser.scene_chosen.connect(self.open_scene)
        b = p.buttons
        b["pause"].toggled.connect(self.set_paused)
        b["step"].clicked.connect(self.single_step)
        b["reset"].clicked.connect(self.reset)
        b["reseed"].clicked.connect(self.reseed)
        b["open"].clicked.connect(self._open_dialog)
        b["save"].clicked.connect(self._save_dialog)
        b["export"].clicked.connect(self._export_dialog)
        b["screenshot"].clicked.connect(self.screenshot)
        b["record"].toggled.connect(self.set_recording)

    def _key_bindings(self) -> dict[tuple[str, ...], object]:
        from flock3d.scene.schema import COLOR_MODES
        from flock3d.viewer.panel import CAMERA_KINDS, DEFAULT_TRAIL_SECONDS

        def cycle(options, current):
            return options[(options.index(current) + 1) % len(options)] if current in options else options[0]

        p = self.panel
        turn = p.controls["max_turn_rate"]
        return {
            ("Space",): lambda: p.buttons["pause"].toggle(),
            (".",): self.single_step,
            ("R",): self.reset,
            ("N",): self.reseed,
            ("[",): lambda: self.set_param("fov", max(10.0, self.session.params.fov - 10.0)),
            ("]",): lambda: self.set_param("fov", min(360.0, self.session.params.fov + 10.0)),
            ("-",): lambda: self.set_param(
                "max_turn_rate", turn.scaled(self.session.params.max_turn_rate, 0.8)
            ),
            ("=", "+"): lambda: self.set_param(
                "max_turn_rate", turn.scaled(self.session.params.max_turn_rate, 1.25)
            ),
            ("C",): lambda: p.camera.setCurrentText(cycle(CAMERA_KINDS, self.camera_kind)),
            ("V",): lambda: p.color_mode.setCurrentText(cycle(COLOR_MODES, self.visuals.color_mode)),
            ("F",): lambda: self.set_focus(0 if len(self.snapshot.state) else None),
            ("Escape",): lambda: self.set_focus(None),
            ("T",): lambda: p.trails.setValue(0.0 if self.visuals.trail_seconds else DEFAULT_TRAIL_SECONDS),
            ("D",): lambda: p.vectors.toggle(),
            ("P",): self.screenshot,
            ("M",): lambda: p.buttons["record"].toggle(),
            ("A",): lambda: p.arena.toggle(),
            ("G",): lambda: p.guides.toggle(),
            ("X",): lambda: p.axes.toggle(),
            ("Delete", "Backspace"): self.editing.delete_selected,
            ("Ctrl+Z",): self.editing.undo,
            ("H", "?"): self.hud.toggle_help,
            ("Ctrl+Q",): self.close,
        }

    # -- scenes ---------------------------------------------------------------------------

    def _apply_scene(self, scene: Scene) -> None:
        from flock3d.viewer.panel import CAMERA_KINDS

        hints = scene.view
        self.visuals.hints = hints
        self.visuals.boid_size = hints.boid_size
        self.visuals.set_params(scene.params, show_arena=hints.show_arena)
        self.visuals.set_mesh(hints.mesh)
        self.visuals.set_trails(hints.trails)
        self.visuals.show_vectors = hints.show_vectors
        self.visuals.set_look(hints)
        self.set_focus(None)
        p = self.panel
        p.show_params(scene.params)
        p.time_scale.set_value(self.session.time_scale)
        for widget, setter in (
            (p.color_mode, lambda: p.color_mode.setCurrentText(hints.color_mode)),
            (p.mesh, lambda: p.mesh.setCurrentText(hints.mesh)),
            (p.arena, lambda: p.arena.setChecked(hints.show_arena)),
            (p.axes, lambda: p.axes.setChecked(hints.show_axes)),
            (p.guides, lambda: p.guides.setChecked(hints.show_guides)),
            (p.focus, lambda: p.focus.setChecked(False)),
            (p.trails, lambda: p.trails.setValue(hints.trails)),
            (p.vectors, lambda: p.vectors.setChecked(hints.show_vectors)),
        ):
            p.quietly(widget, setter)
        self.visuals.set_color_mode(hints.color_mode)
        self.visuals.axes.visible = hints.show_axes
        self.editing.forget()
        self.camera_kind = hints.camera if hints.camera in CAMERA_KINDS else "orbit"
        p.quietly(p.camera, lambda: p.camera.setCurrentText(self.camera_kind))
        self.snapshot = self.session.snapshot()
        self.set_camera(self.camera_kind)  # re-frames the camera for the new arena
        self.window.setWindowTitle(f"flock3d — {scene.name}")

    def open_scene(self, path: str | Path) -> bool:
        """Switch to the scene in ``path`` (or a shipped scene's name); on a bad file, say why
        and keep the current one."""
        try:
            scene = load_scene(path)
        except SceneError as error:
            self._warn("Cannot open scene", "\n".join(error.problems))
            return False
        self.session.load(scene)
        self._apply_scene(scene)
        self.status.showMessage(f"opened {path}", 5000)
        return True

    def save_scene(self, path: str | Path) -> Path:
        """Write the current parameters and seed as a scene file."""
        view = dataclasses.replace(
            self.session.scene.view,
            mesh=self.panel.mesh.currentText(),
            color_mode=self.visuals.color_mode,
            show_arena=bool(self.visuals.show_arena),
            show_guides=bool(self.visuals.show_guides),
            show_axes=bool(self.visuals.axes.visible),
            trails=float(self.visuals.trail_seconds),
            show_vectors=bool(self.visuals.show_vectors),
        )
        scene = self.session.current_scene().replace(view=view)
        try:
            saved = scene.save(path)
        except OSError as error:  # a full disk, no permission: the scene file there is kept as it was
            self._warn("Scene not saved", f"{path}: {error.strerror or error}")
            return Path(path)
        self.status.showMessage(f"saved {saved}", 5000)
        return saved

    def _open_dialog(self) -> None:
        from PySide6 import QtWidgets

        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self.window, "Open scene", str(self.output_dir), "Scenes (*.toml)"
        )
        if path:
            self.open_scene(path)

    def _save_dialog(self) -> None:
        from PySide6 import QtWidgets

        from flock3d.viewer.recording import slug

        suggested = str(self.output_dir / f"{slug(self.session.scene.name)}.toml")
        path, _ = QtWidgets.QFileDialog.getSaveFileName(
            self.window, "Save scene", suggested, "Scenes (*.toml)"
        )
        if path:
            self.save_scene(path)

    def _export_dialog(self) -> None:
        from PySide6 import QtWidgets

        from flock3d.viewer.recording import slug

        suggested = str(self.output_dir / f"{slug(self.session.scene.name)}.html")
        path, _ = QtWidgets.QFileDialog.getSaveFileName(
            self.window, "Export the flock", suggested,
            "Web page (*.html);;USD (*.usdc *.usd *.usda);;glTF (*.glb *.gltf)",
        )  # fmt: skip
        if path:
            seconds, ok = QtWidgets.QInputDialog.getDouble(
                self.window, "Export the flock", "Simulated seconds:", EXPORT_SECONDS, 0.1, 3600.0, 1
            )
            if ok:
                self.export(path, seconds)

    def export(self, path: str | Path, seconds: float = 20.0):
        """Run the scene as it is now (parameters, world, seed) for ``seconds`` in a process of
        its own and export the flock to ``path`` (``flock3d export``: its suffix picks USD, glTF or
        HTML); the window keeps running, and the status bar says how it went. Returns the
        ``QProcess``."""
        from PySide6 import QtCore

        if self.session.flock.rules or self.session.flock.forces:
            self._warn("Cannot export here", "a flock with your own rules exports from the command "
                       "line: flock3d export SCENE --rules FILE --out FILE")  # fmt: skip
            return None
        folder = Path(tempfile.mkdtemp(prefix="flock3d-export-"))
        scene = self.session.current_scene().save(folder / "scene.toml")
        process = QtCore.QProcess(self.window)
        process.setProgram(sys.executable)
        process.setArguments(["-m", "flock3d.cli", "export", str(scene), "--seconds", f"{seconds:g}",
                              "--out", str(path), "--no-progress"])  # fmt: skip

        def finished(code: int, _status) -> None:
            shutil.rmtree(folder, ignore_errors=True)
            if code == 0:
                self.status.showMessage(f"exported {path}", 8000)
            else:
                lines = bytes(process.readAllStandardError().data()).decode(errors="replace").splitlines()
                said = [line for line in lines if line.startswith("flock3d export:")] or lines[-1:]
                self._warn("Export failed", said[0] if said else f"flock3d export ended with {code}")

        process.finished.connect(finished)
        process.start()
        self.status.showMessage(f"exporting {seconds:g} s of the flock to {path}…")
        self._exports.append(process)  # kept alive while it runs
        return process

    def _warn(self, title: str, text: str) -> None:
        from PySide6 import QtWidgets

        self.status.showMessage(text.splitlines()[0], 8000)
        if self.dialogs:
            QtWidgets.QMessageBox.warning(self.window, title, text)

    # -- live edits -----------------------------------------------------------------------

    def set_param(self, field: str, value: float) -> None:
        """Change one parameter of the running flock (applied before the next step)."""
        try:
            params = self.session.set_param(field, value)
        except ValueError as error:
            self.status.showMessage(f"not applied: {error}", 6000)
            params = self.session.params
        self.panel.show_params(params)
        self.visuals.set_params(params)
        if field == "count":
            self.set_focus(None)
            self._push_state()

    def _set_time_scale(self, value: float) -> None:
        self.session.time_scale = value

    def set_paused(self, paused: bool) -> None:
        self.session.paused = paused
        self.panel.buttons["pause"].setText("Play" if paused else "Pause")

    def single_step(self) -> None:
        self.session.single_step()
        self._push_state()

    def reset(self) -> None:
        self.session.reset()
        self.editing.world_changed()
        self.status.showMessage(f"reset (seed {self.session.seed})", 3000)

    def reseed(self) -> None:
        seed = self.session.reseed()
        self.editing.world_changed()
        self.status.showMessage(f"reseeded: seed {seed}", 3000)

    def set_camera(self, kind: str) -> None:
        """Switch to camera ``kind``; every kind starts framing the arena, or the flock in open space
        (follow: the flock, or the focused boid's neighbourhood)."""
        self.camera_kind = kind
        positions = self.snapshot.state.positions
        target = self._follow_target() if kind == "follow" and len(positions) else None
        self.visuals.make_camera(kind, positions, target)
        self._push_state()

    def _follow_target(self) -> tuple[np.ndarray, float]:
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

    # -- files ----------------------------------------------------------------------------

    def screenshot(self, path: str | Path | None = None) -> Path:
        """Save the 3D view as a PNG (in the output folder unless ``path`` is given)."""
        path = Path(path) if path else self.recorder.path_for(self.session.scene.name, ".png")
        try:
            self.recorder.screenshot(path)
        except Flock3dError as error:
            self._warn("Screenshot not saved", str(error))
            return path
        self.status.showMessage(f"saved screenshot {path}", 5000)
        return path

    def set_recording(self, on: bool) -> None:
        """Start or stop recording the 3D view to an MP4 in the output folder, at the
        simulation's pace (:mod:`flock3d.viewer.recording`)."""
        from flock3d.viewer.recording import VIDEO_FPS

        recorder = self.recorder
        if on and not recorder.recording:
            try:
                path = recorder.start(self.session.scene.name, self.snapshot.time)
            except Flock3dError as error:
                self._warn("Cannot record", str(error))
                button = self.panel.buttons["record"]
                self.panel.quietly(button, lambda: button.setChecked(False))
                return
            self.status.showMessage(f"recording to {path}")
        elif not on and recorder.recording:
            try:
                video = recorder.stop()
            except Flock3dError as error:
                self._warn("Recording failed", str(error))
            else:
                self.status.showMessage(
                    f"saved {video.frames} frames ({video.frames / VIDEO_FPS:.1f} s) to {video.path}", 8000
                )
        self.panel.buttons["record"].setText("Stop recording" if recorder.recording else "Record")

    def _record(self) -> None:
        """Add the frames of the video that fall due by the simulated time shown now."""
        try:
            self.recorder.record(self.snapshot.time)
        except Flock3dError as error:
            self._warn("Recording failed", str(error))
            self.panel.buttons["record"].setChecked(False)

    def _set_antialias(self, on: bool) -> None:
        self.canvas.fxaa = on
        self.canvas.update()

    # -- the loop -------------------------------------------------------------------------

    def tick(self) -> None:
        """One frame: (without the worker: run the steps due), draw the latest snapshot, update the HUD."""
        now = time.perf_counter()
        if not self.threaded:
            self.session.advance(now - self._last_tick)
        self._last_tick = now
        self._push_state()
        if self._meter.due(now):
            self._update_hud(now)
        if self.recorder.recording:
            self._record()

    def _push_state(self) -> None:
        from flock3d.viewer.hud import notice_text
        from flock3d.viewer.picking import focus_colors, seen_by

        snap = self.snapshot = self.session.snapshot()
        state, params = snap.state, snap.params
        colors = None
        if self.focused is not None and self.focused < len(state):
            i = self.focused
            colors = focus_colors(self.visuals.colors_for(state).colors, i, seen_by(state, params, i))
            species = int(params.species_of_boids[i])
            self.focus.show(state.positions[i], state.orientations[i], params.of_species(species))
        elif self.focused is not None:
            self.set_focus(None)
        self.visuals.update(state, colors, acceleration=snap.acceleration)
        editor = self.editing.editor
        self.visuals.show_selection(editor.valid(editor.selection))
        if self.camera_kind == "follow" and len(state):
            self.view.camera.center = tuple(self._follow_target()[0])
        # Any compile of over a second says so, whatever started it (a scene, a colour mode).
        since = compiling_since()
        compiling = self.threaded and (
            not self.session.first_step_done or (since is not None and time.monotonic() - since > 1.0)
        )
        self.hud.set_notice(notice_text(self.session.error, compiling))
        self.canvas.update()

    def _update_hud(self, now: float) -> None:
        from PySide6 import QtWidgets

        from flock3d.viewer.hud import status_text

        s, snap = self.session, self.snapshot
        if self.editing.editor.selection is not None and not self.world_panel.isAncestorOf(
            QtWidgets.QApplication.focusWidget()
        ):
            self.editing.show_selected()  # a predator or a moving object moves on: its fields follow
        rates = self._meter.measure(now, snap, s.time_scale)
        self.hud.set_status(
            status_text(
                snap,
                rates,
                paused=s.paused,
                first_step_done=s.first_step_done,
                recording=self.recorder.recording,
            )
        )

    def _drawn(self, event=None) -> None:
        self._meter.frame_drawn()
        self.frames_drawn += 1
        if self.first_frame_seconds is None:
            self.first_frame_seconds = time.perf_counter() - self.started
            self.status.showMessage(START_HINT, 8000)

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
        self.timer.stop()
        self.session.stop()
        if self.recorder.recording:
            self.set_recording(False)
        event.accept()


def run_event_loop(seconds: float) -> None:
    """Let Qt's event loop run for ``seconds`` (drawing, timers, input), then return.

    For measurements and tests. Qt's own loop, not ``processEvents`` polled from Python,
    so that waiting makes no Qt call per poll: PySide6 6.12.0 leaks a reference to None on
    each such call (pyproject excludes that version on Python 3.11, where the leak aborts
    Python; a window test counts None's references).
    """
    from PySide6 import QtCore

    loop = QtCore.QEventLoop()
    QtCore.QTimer.singleShot(max(int(seconds * 1000), 0), loop.quit)
    loop.exec()


def run_viewer(scene: Scene, rules=(), forces=()) -> int:
    """Open the viewer on ``scene`` (with your ``rules`` and ``forces``) until its window closes."""
    check_display()
    _use_qt()
    from vispy import app

    application = app.use_app()
    try:
        application.create()
    except Exception as error:
        raise Flock3dError(f"cannot open a window: {error}") from None
    viewer = ViewerWindow(scene, output_dir=Path.cwd(), rules=rules, forces=forces)
    viewer.show()
    application.run()
    return 0
