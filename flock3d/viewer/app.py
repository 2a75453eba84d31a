"""The interactive viewer: a vispy canvas beside a panel of live controls (Qt).

The simulation steps on a worker thread in real time (a fixed time step,
decoupled from the frame rate; :mod:`flock3d.viewer.session`). Each tick of a
timer takes the latest snapshot of the flock, pushes it into the renderer and
redraws, so a frame never waits for a step. Controls and shortcuts change
parameters between steps. Recordings are paced by simulated time, so they play
at the simulation's speed whatever frame rate the machine reached.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

from flock3d.errors import Flock3dError
from flock3d.scene import Scene, SceneError, load_scene

__all__ = ["ViewerWindow", "run_viewer", "run_event_loop", "check_display", "COMPILING_TEXT"]

FRAME_INTERVAL_MS = 16
VIDEO_FPS = 30.0
"""Frames per second of recordings; frame k shows the flock at simulated time t0 + k / VIDEO_FPS."""
ANTIALIAS_SAMPLES = 4
"""Multisampling of the window's OpenGL surface (anti-aliasing) on a GPU. Software OpenGL
(Mesa's llvmpipe) gets none: there it costs a third of the frame rate."""
SOFTWARE_RENDERERS = ("llvmpipe", "softpipe", "swrast", "swiftshader")
WINDOW_SIZE = (1280, 800)
COMPILING_TEXT = "compiling the simulation (first run only)…"


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
    ) -> None:
        from PySide6 import QtCore, QtGui, QtWidgets
        from vispy import scene as vscene

        from flock3d.viewer.colors import BACKGROUND
        from flock3d.viewer.overlays import FocusVisuals, Hud
        from flock3d.viewer.panel import ControlPanel, apply_dark_theme
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
        self.video = None
        self._video_next: float = 0.0
        self.snapshot = self.session.snapshot()

        self.samples = antialias_samples() if samples is None else samples
        self.canvas = vscene.SceneCanvas(
            keys=None, bgcolor=BACKGROUND, size=(960, 720), config={"samples": self.samples}
        )
        self.view = self.canvas.central_widget.add_view(border_width=0)
        self.visuals = FlockVisuals(self.view, scene.view, scene.params)
        self.focus = FocusVisuals(self.view)
        self.hud = Hud(self.canvas.native)
        self.panel = ControlPanel()

        self.window = QtWidgets.QMainWindow()
        apply_dark_theme(self.window)
        splitter = QtWidgets.QSplitter()
        splitter.addWidget(self.canvas.native)
        splitter.addWidget(self.panel)
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
        self.canvas.events.mouse_press.connect(self._mouse_press)
        self.canvas.events.mouse_release.connect(self._mouse_release)
        self.canvas.events.draw.connect(self._drawn)
        self.window.closeEvent = self._close_event  # type: ignore[method-assign]

        self._press_pos = None
        self._last_tick = time.perf_counter()
        self._frames = 0
        self._hud_time = time.perf_counter()
        self._hud_sim = (self.snapshot.time, self.snapshot.step_count)
        self._fps = 0.0
        self._steps_per_second = 0.0
        self._rt_factor = 1.0
        self._apply_scene(scene)
        self.timer = QtCore.QTimer()
        self.timer.timeout.connect(self.tick)
        self.timer.start(FRAME_INTERVAL_MS)
        if threaded:
            self.session.start()

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
        p.focus_toggled.connect(lambda on: self.set_focus(0 if on and len(self.snapshot.state) else None))
        p.trails_edited.connect(self.visuals.set_trails)
        p.vectors_toggled.connect(lambda on: setattr(self.visuals, "show_vectors", on))
        b = p.buttons
        b["pause"].toggled.connect(self.set_paused)
        b["step"].clicked.connect(self.single_step)
        b["reset"].clicked.connect(self.reset)
        b["reseed"].clicked.connect(self.reseed)
        b["open"].clicked.connect(self._open_dialog)
        b["save"].clicked.connect(self._save_dialog)
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
            ("X",): lambda: p.axes.toggle(),
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
        self.set_focus(None)
        p = self.panel
        p.show_params(scene.params)
        p.time_scale.set_value(self.session.time_scale)
        for widget, setter in (
            (p.color_mode, lambda: p.color_mode.setCurrentText(hints.color_mode)),
            (p.mesh, lambda: p.mesh.setCurrentText(hints.mesh)),
            (p.arena, lambda: p.arena.setChecked(hints.show_arena)),
            (p.axes, lambda: p.axes.setChecked(hints.show_axes)),
            (p.focus, lambda: p.focus.setChecked(False)),
            (p.trails, lambda: p.trails.setValue(hints.trails)),
            (p.vectors, lambda: p.vectors.setChecked(hints.show_vectors)),
        ):
            p.quietly(widget, setter)
        self.visuals.set_color_mode(hints.color_mode)
        self.visuals.axes.visible = hints.show_axes
        self.camera_kind = hints.camera if hints.camera in CAMERA_KINDS else "orbit"
        p.quietly(p.camera, lambda: p.camera.setCurrentText(self.camera_kind))
        self.snapshot = self.session.snapshot()
        self.set_camera(self.camera_kind)  # re-frames the camera for the new arena
        self.window.setWindowTitle(f"flock3d — {scene.name}")

    def open_scene(self, path: str | Path) -> bool:
        """Switch to the scene in ``path``; on a bad file, say why and keep the current one."""
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
            show_axes=bool(self.visuals.axes.visible),
            trails=float(self.visuals.trail_seconds),
            show_vectors=bool(self.visuals.show_vectors),
        )
        scene = self.session.current_scene().replace(view=view)
        saved = scene.save(path)
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

        suggested = str(self.output_dir / f"{self._slug()}.toml")
        path, _ = QtWidgets.QFileDialog.getSaveFileName(
            self.window, "Save scene", suggested, "Scenes (*.toml)"
        )
        if path:
            self.save_scene(path)

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
        self._push_state()
        self.status.showMessage(f"reset (seed {self.session.seed})", 3000)

    def reseed(self) -> None:
        seed = self.session.reseed()
        self._push_state()
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
        return self.visuals.flock_extent(state.positions)

    def set_focus(self, index: int | None) -> None:
        """Single out boid ``index`` (None: no focus)."""
        self.focused = index
        if index is None:
            self.focus.hide()
        self.panel.quietly(self.panel.focus, lambda: self.panel.focus.setChecked(index is not None))

    # -- files ----------------------------------------------------------------------------

    def _slug(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.session.scene.name.lower()).strip("-") or "scene"

    def _output(self, suffix: str) -> Path:
        return self.output_dir / f"flock3d-{self._slug()}-{time.strftime('%Y%m%d-%H%M%S')}{suffix}"

    def _frame_image(self) -> np.ndarray:
        """The 3D view as shown (anti-aliased), (H, W, 3) uint8 with even sides."""
        image = None
        grab = getattr(self.canvas.native, "grabFramebuffer", None)
        if grab is not None:
            image = _qimage_to_array(grab())
        if image is None or image.size == 0:
            image = self.canvas.render(alpha=False)
        h, w = image.shape[:2]
        return image[: h - h % 2, : w - w % 2]  # video encoders want even sizes

    def screenshot(self, path: str | Path | None = None) -> Path:
        """Save the 3D view as a PNG (in the output folder unless ``path`` is given)."""
        import imageio.v3 as iio

        path = Path(path) if path else self._output(".png")
        try:
            iio.imwrite(path, self._frame_image())
        except OSError as error:
            self._warn("Screenshot not saved", f"{path}: {error.strerror or error}")
            return path
        self.status.showMessage(f"saved screenshot {path}", 5000)
        return path

    def set_recording(self, on: bool) -> None:
        """Start or stop recording the 3D view to an MP4 in the output folder.

        The video plays at the simulation's pace: frame k shows the flock at simulated
        time t0 + k / VIDEO_FPS, whatever frame rate the window reached (a slow frame is
        repeated, frames faster than the video are skipped; paused, nothing is added).
        """
        from flock3d.io.video import VideoWriter

        if on and self.video is None:
            try:
                self.video = VideoWriter(self._output(".mp4"), fps=VIDEO_FPS)
            except Flock3dError as error:
                self._warn("Cannot record", str(error))
                button = self.panel.buttons["record"]
                self.panel.quietly(button, lambda: button.setChecked(False))
                return
            self._video_next = self.snapshot.time
            self.status.showMessage(f"recording to {self.video.path}")
        elif not on and self.video is not None:
            video, self.video = self.video, None
            try:
                video.close()
            except Flock3dError as error:
                self._warn("Recording failed", str(error))
            else:
                self.status.showMessage(
                    f"saved {video.frames} frames ({video.frames / VIDEO_FPS:.1f} s) to {video.path}", 8000
                )
        self.panel.buttons["record"].setText("Stop recording" if self.video is not None else "Record")

    def _record(self) -> None:
        """Add the frames of the video that fall due by the simulated time shown now."""
        t = self.snapshot.time
        if t + 1e-9 < self._video_next - 1.0 / VIDEO_FPS:
            self._video_next = t  # the flock was reset: go on from its new time
        due = 0
        while self._video_next <= t + 1e-9:
            due += 1
            self._video_next += 1.0 / VIDEO_FPS
        if due:
            image = self._frame_image()
            try:
                for _ in range(due):
                    self.video.append(image)
            except Flock3dError as error:
                self._warn("Recording failed", str(error))
                self.panel.buttons["record"].setChecked(False)

    # -- the loop -------------------------------------------------------------------------

    def tick(self) -> None:
        """One frame: (without the worker: run the steps due), draw the latest snapshot, update the HUD."""
        now = time.perf_counter()
        if not self.threaded:
            self.session.advance(now - self._last_tick)
        self._last_tick = now
        self._push_state()
        if now - self._hud_time >= 0.25:
            self._update_hud(now)
        if self.video is not None:
            self._record()

    def _push_state(self) -> None:
        from flock3d.core import quaternion
        from flock3d.core.reference import neighbours
        from flock3d.viewer.overlays import focus_colors

        snap = self.snapshot = self.session.snapshot()
        state, params = snap.state, snap.params
        colors = None
        if self.focused is not None and self.focused < len(state):
            i = self.focused
            forward = quaternion.forward(state.orientations[i : i + 1])[0]
            # Those it interacts with: the k nearest with topological neighbours, its species' choice.
            radius = state.radii[i] if params.adaptive else None
            species = int(params.species_of_boids[i])
            seen = np.flatnonzero(
                neighbours(state.positions[i], forward, state.positions, params, species, radius)
            )
            colors = focus_colors(self.visuals.colors_for(state).colors, i, seen)
            self.focus.show(state.positions[i], state.orientations[i], params.of_species(species))
        elif self.focused is not None:
            self.set_focus(None)
        self.visuals.update(state, colors, acceleration=snap.acceleration)
        if self.camera_kind == "follow" and len(state):
            self.view.camera.center = tuple(self._follow_target()[0])
        self.hud.set_notice(self._notice())
        self.canvas.update()

    def _notice(self) -> str:
        """A message in the middle of the canvas: the first compile, or a stopped simulation."""
        if self.session.error is not None:
            return f"the simulation stopped: {self.session.error}"
        if self.threaded and not self.session.first_step_done:
            return COMPILING_TEXT
        return ""

    def _update_hud(self, now: float) -> None:
        from flock3d.viewer.panel import UNLIMITED_TEXT

        s, snap = self.session, self.snapshot
        span = now - self._hud_time
        sim_time, steps = self._hud_sim
        self._fps = self._frames / span
        self._steps_per_second = (snap.step_count - steps) / span
        simulated = max(snap.time - sim_time, 0.0)
        self._rt_factor = simulated / (span * s.time_scale) if s.time_scale > 0 else 1.0
        self._frames = 0
        self._hud_time = now
        self._hud_sim = (snap.time, snap.step_count)
        p = snap.params
        pol = float("nan")
        if len(snap.state):
            from flock3d.metrics import polarization

            pol = polarization(snap.state.velocities)
        slow = self._rt_factor < 0.95 and s.first_step_done and not s.paused and snap.step_count > 0
        # A dt longer than the HUD's interval steps in bursts: judge it over its own span.
        slow = slow and p.dt < 0.25
        lag = f"  (x{self._rt_factor:.2f} real time: cannot keep up)" if slow else ""
        state = "paused" if s.paused else f"{self._steps_per_second:,.0f} steps/s"
        turn = UNLIMITED_TEXT if math.isinf(p.max_turn_rate) else f"{p.max_turn_rate:g}"
        rec = "   ● REC" if self.video is not None else ""
        self.hud.set_status(
            f"{self._fps:.0f} fps   {state}{lag}   t {snap.time:.1f} s   N {len(snap.state):,}   "
            f"FOV {p.fov:g}°   turn {turn}°/s   P {pol:.2f}{rec}   [h: help]"
        )

    def _drawn(self, event=None) -> None:
        self._frames += 1
        self.frames_drawn += 1
        if self.first_frame_seconds is None:
            self.first_frame_seconds = time.perf_counter() - self.started
            self.status.showMessage(f"first frame after {self.first_frame_seconds:.2f} s", 4000)

    # -- mouse ----------------------------------------------------------------------------

    def _mouse_press(self, event) -> None:
        self._press_pos = np.asarray(event.pos[:2], dtype=float)

    def _mouse_release(self, event) -> None:
        if self._press_pos is None or event.button != 1:
            return
        moved = np.linalg.norm(np.asarray(event.pos[:2], dtype=float) - self._press_pos)
        self._press_pos = None
        if moved <= 3:
            picked = self.pick(event.pos[:2])
            if picked is not None:
                self.set_focus(picked)

    def screen_positions(self) -> np.ndarray:
        """(N, 2) canvas pixel positions of the boids as last drawn (NaN behind the camera)."""
        tr = self.view.scene.node_transform(self.canvas.scene)  # scene -> canvas pixels
        mapped = tr.map(self.snapshot.state.positions)
        w = mapped[:, 3:4]
        xy = mapped[:, :2] / np.where(w > 0, w, np.nan)
        return xy

    def pick(self, pos, radius_px: float = 14.0) -> int | None:
        """The boid drawn nearest to canvas pixel ``pos``, if within ``radius_px``."""
        if not len(self.snapshot.state):
            return None
        d = np.linalg.norm(self.screen_positions() - np.asarray(pos, dtype=float), axis=1)
        if np.all(np.isnan(d)):
            return None
        i = int(np.nanargmin(d))
        return i if d[i] <= radius_px else None

    # -- lifetime -------------------------------------------------------------------------

    def show(self) -> None:
        self.window.show()
        self.canvas.native.setFocus()

    def close(self) -> None:
        self.window.close()

    def _close_event(self, event) -> None:
        self.timer.stop()
        self.session.stop()
        if self.video is not None:
            self.set_recording(False)
        event.accept()


def _qimage_to_array(image) -> np.ndarray | None:
    """(H, W, 3) uint8 RGB from a QImage (None if it is empty)."""
    from PySide6 import QtGui

    if image.isNull():
        return None
    image = image.convertToFormat(QtGui.QImage.Format.Format_RGB888)
    w, h, stride = image.width(), image.height(), image.bytesPerLine()
    buffer = np.frombuffer(image.constBits(), np.uint8, count=stride * h).reshape(h, stride)
    return buffer[:, : 3 * w].reshape(h, w, 3).copy()


def run_event_loop(seconds: float) -> None:
    """Let Qt's event loop run for ``seconds`` (drawing, timers, input), then return.

    For measurements and tests. Qt's own loop, not ``processEvents`` polled from Python:
    a Qt call per poll is what PySide6 6.12.0 leaked a reference to None on (it aborted
    Python 3.11 within minutes; pyproject excludes it there, and a window test counts).
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
