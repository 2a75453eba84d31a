"""The interactive viewer: a vispy canvas beside a panel of live controls (Qt).

Each tick of a timer runs the simulation steps that real time asks for (a fixed
time step, decoupled from the frame rate), pushes the flock's state into the
renderer and redraws. Controls and shortcuts change parameters between steps.
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

__all__ = ["ViewerWindow", "run_viewer", "check_display"]

FRAME_INTERVAL_MS = 16


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
    """Raise a one-line :class:`Flock3dError` when no screen is available for a window."""
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        raise Flock3dError(
            "no display found (DISPLAY is not set), so no window can open; "
            "render without a screen with `flock3d render SCENE --out movie.mp4`"
        )


def _use_qt() -> None:
    if os.environ.get("PYOPENGL_PLATFORM") == "egl":
        del os.environ["PYOPENGL_PLATFORM"]  # set for offscreen rendering; breaks window backends
    import vispy

    try:
        vispy.use(app="pyside6", gl="gl+")
    except Exception as error:
        text = str(error).strip().splitlines()
        raise Flock3dError(f"cannot start the Qt window system: {text[0] if text else error}") from None


class ViewerWindow:
    """The viewer's main window and everything it drives.

    Args:
        scene: the scene to open.
        output_dir: where screenshots and recordings go.
        started: ``time.perf_counter()`` at the start, to time the first frame; by default
            the process's own start (so imports count too) where the system tells it.
        dialogs: show message boxes for errors (tests turn them off; the status bar
            always shows the message).
    """

    def __init__(
        self, scene: Scene, output_dir: str | Path = ".", started: float | None = None, dialogs: bool = True
    ) -> None:
        from PySide6 import QtCore, QtGui, QtWidgets
        from vispy import scene as vscene

        from flock3d.viewer.colors import BACKGROUND
        from flock3d.viewer.overlays import FocusVisuals, Hud
        from flock3d.viewer.panel import ControlPanel
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
        self.session = Session(scene)
        self.focused: int | None = None
        self.camera_kind = "orbit"
        self.video = None

        self.canvas = vscene.SceneCanvas(keys=None, bgcolor=BACKGROUND, size=(960, 720))
        self.view = self.canvas.central_widget.add_view(border_width=0)
        self.visuals = FlockVisuals(self.view, scene.view, scene.params)
        self.focus = FocusVisuals(self.view)
        self.hud = Hud(self.canvas)
        self.panel = ControlPanel()

        self.window = QtWidgets.QMainWindow()
        splitter = QtWidgets.QSplitter()
        splitter.addWidget(self.canvas.native)
        splitter.addWidget(self.panel)
        splitter.setStretchFactor(0, 1)
        self.window.setCentralWidget(splitter)
        self.window.resize(1320, 760)
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
        self._steps = 0
        self._hud_time = time.perf_counter()
        self._fps = 0.0
        self._steps_per_second = 0.0
        self._rt_factor = 1.0
        self._apply_scene(scene)
        self.timer = QtCore.QTimer()
        self.timer.timeout.connect(self.tick)
        self.timer.start(FRAME_INTERVAL_MS)

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
        p.focus_toggled.connect(lambda on: self.set_focus(0 if on and len(self.session.flock) else None))
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
        from flock3d.viewer.panel import CAMERA_KINDS

        def cycle(options, current):
            return options[(options.index(current) + 1) % len(options)] if current in options else options[0]

        return {
            ("Space",): lambda: self.panel.buttons["pause"].toggle(),
            (".",): self.single_step,
            ("R",): self.reset,
            ("N",): self.reseed,
            ("[",): lambda: self.set_param("fov", max(10.0, self.session.params.fov - 10.0)),
            ("]",): lambda: self.set_param("fov", min(360.0, self.session.params.fov + 10.0)),
            ("-",): lambda: self.set_param(
                "max_turn_rate", max(5.0, self.session.params.max_turn_rate / 1.25)
            ),
            ("=", "+"): lambda: self.set_param(
                "max_turn_rate", min(2000.0, self.session.params.max_turn_rate * 1.25)
            ),
            ("C",): lambda: self.panel.camera.setCurrentText(cycle(CAMERA_KINDS, self.camera_kind)),
            ("V",): lambda: self.panel.color_mode.setCurrentText(cycle(COLOR_MODES, self.visuals.color_mode)),
            ("F",): lambda: self.set_focus(0 if len(self.session.flock) else None),
            ("Escape",): lambda: self.set_focus(None),
            ("P",): self.screenshot,
            ("M",): lambda: self.panel.buttons["record"].toggle(),
            ("A",): lambda: self.panel.arena.toggle(),
            ("X",): lambda: self.panel.axes.toggle(),
            ("H", "?"): self.hud.toggle_help,
        }

    # -- scenes ---------------------------------------------------------------------------

    def _apply_scene(self, scene: Scene) -> None:
        from flock3d.viewer.panel import CAMERA_KINDS

        hints = scene.view
        self.visuals.hints = hints
        self.visuals.boid_size = hints.boid_size
        self.visuals.set_params(scene.params, show_arena=hints.show_arena)
        self.visuals.set_mesh(hints.mesh)
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
        ):
            p.quietly(widget, setter)
        self.visuals.set_color_mode(hints.color_mode)
        self.visuals.axes.visible = hints.show_axes
        self.camera_kind = hints.camera if hints.camera in CAMERA_KINDS else "orbit"
        p.quietly(p.camera, lambda: p.camera.setCurrentText(self.camera_kind))
        self.visuals.make_camera("orbit" if self.camera_kind == "follow" else self.camera_kind)
        self.window.setWindowTitle(f"flock3d — {scene.name}")
        self._push_state()

    def open_scene(self, path: str | Path) -> bool:
        """Switch to the scene in ``path``; on a bad file, say why and keep the current one."""
        try:
            scene = load_scene(path)
        except SceneError as error:
            self._warn("Cannot open scene", "\n".join(error.problems))
            return False
        self.session.load(scene)
        self._apply_scene(scene)  # re-frames the camera for the new arena
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
        self.camera_kind = kind
        self.visuals.make_camera("orbit" if kind == "follow" else kind)
        self._push_state()

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
        image = self.canvas.render(alpha=False)
        h, w = image.shape[:2]
        return image[: h - h % 2, : w - w % 2]  # video encoders want even sizes

    def screenshot(self, path: str | Path | None = None) -> Path:
        """Save the 3D view as a PNG (in the output folder unless ``path`` is given)."""
        import imageio.v3 as iio

        path = Path(path) if path else self._output(".png")
        iio.imwrite(path, self._frame_image())
        self.status.showMessage(f"saved screenshot {path}", 5000)
        return path

    def set_recording(self, on: bool) -> None:
        """Start or stop recording the 3D view to an MP4 in the output folder."""
        from flock3d.io.video import VideoWriter

        if on and self.video is None:
            self.video = VideoWriter(self._output(".mp4"), fps=1000.0 / FRAME_INTERVAL_MS / 2)
            self.status.showMessage(f"recording to {self.video.path}")
        elif not on and self.video is not None:
            self.video.close()
            self.status.showMessage(f"saved {self.video.frames} frames to {self.video.path}", 8000)
            self.video = None
        self.panel.buttons["record"].setText("Stop recording" if on else "Record")

    # -- the loop -------------------------------------------------------------------------

    def tick(self) -> None:
        """One frame: run the steps due, push the state, update the HUD, redraw."""
        now = time.perf_counter()
        steps = self.session.advance(now - self._last_tick)
        self._last_tick = now
        self._steps += steps
        self._push_state()
        if now - self._hud_time >= 0.25:
            span = now - self._hud_time
            self._fps, self._steps_per_second = self._frames / span, self._steps / span
            self._rt_factor = self.session.clock.real_time_factor()
            self._frames = self._steps = 0
            self._hud_time = now
            self._update_hud()
        if self.video is not None and self._frames % 2 == 0:
            self.video.append(self._frame_image())

    def _push_state(self) -> None:
        from flock3d.core.reference import visible
        from flock3d.viewer.overlays import focus_colors

        flock = self.session.flock
        state = flock.state
        colors = None
        if self.focused is not None and self.focused < len(flock):
            i = self.focused
            boid = flock.boids[i]
            seen = np.flatnonzero(visible(boid.position, boid.forward, flock.positions, flock.params))
            colors = focus_colors(self.visuals.colors_for(state).colors, i, seen)
            self.focus.show(flock.positions[i], flock.orientations[i], flock.params)
        self.visuals.update(state, colors)
        if self.camera_kind == "follow" and len(flock):
            target = (
                flock.positions[self.focused] if self.focused is not None else flock.positions.mean(axis=0)
            )
            self.view.camera.center = tuple(target)
        self.canvas.update()

    def _update_hud(self) -> None:
        s = self.session
        p = s.params
        pol = float("nan")
        if len(s.flock):
            from flock3d.metrics import polarization

            pol = polarization(s.flock.velocities)
        lag = (
            ""
            if s.paused or self._rt_factor > 0.95
            else f"  (x{self._rt_factor:.2f} real time: cannot keep up)"
        )
        state = "paused" if s.paused else f"{self._steps_per_second:,.0f} steps/s"
        turn = "inf" if math.isinf(p.max_turn_rate) else f"{p.max_turn_rate:g}"
        self.hud.set_status(
            f"{self._fps:.0f} fps   {state}{lag}   t {s.flock.time:.1f} s   N {len(s.flock):,}   "
            f"FOV {p.fov:g}°   turn {turn}°/s   P {pol:.2f}   [h: help]"
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
        """(N, 2) canvas pixel positions of the boids (NaN behind the camera)."""
        tr = self.view.scene.node_transform(self.canvas.scene)  # scene -> canvas pixels
        mapped = tr.map(self.session.flock.positions)
        w = mapped[:, 3:4]
        xy = mapped[:, :2] / np.where(w > 0, w, np.nan)
        return xy

    def pick(self, pos, radius_px: float = 14.0) -> int | None:
        """The boid drawn nearest to canvas pixel ``pos``, if within ``radius_px``."""
        if not len(self.session.flock):
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
        if self.video is not None:
            self.set_recording(False)
        event.accept()


def run_viewer(scene: Scene) -> int:
    """Open the viewer on ``scene`` and run until its window closes."""
    check_display()
    _use_qt()
    from vispy import app

    application = app.use_app()
    try:
        application.create()
    except Exception as error:
        raise Flock3dError(f"cannot open a window: {error}") from None
    viewer = ViewerWindow(scene, output_dir=Path.cwd())
    viewer.show()
    application.run()
    return 0
