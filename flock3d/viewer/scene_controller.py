"""What opening, saving and exporting a scene does in a :class:`~flock3d.viewer.app.ViewerWindow`:
a scene opened (from a file, the Scenes tab or at the start) is applied to the drawing, the
panel and the camera; the scene as it is now is saved, or run in a process of its own and exported.
Each says in the status bar how it went; a bad file keeps the current scene. A scene whose world
or parameters changed since it was opened or saved is not left (for another scene, or by quitting)
before the user says whether to save the changes (:meth:`SceneController.may_leave`)."""

from __future__ import annotations

import dataclasses
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from flock3d.scene import Scene, SceneError, load_scene

if TYPE_CHECKING:
    from flock3d.viewer.scenery import WorldArrays

__all__ = ["SceneController", "EXPORT_SECONDS"]

#: Simulated seconds the Export button offers.
EXPORT_SECONDS = 20.0


class SceneController:
    """Opens, applies, saves and exports a window's scene.

    Args:
        window: the :class:`~flock3d.viewer.app.ViewerWindow` whose session, drawing and panel it works with.
    """

    def __init__(self, window) -> None:
        self.w = window
        self._exports: list = []  # the export processes running, kept alive while they run
        self._kept = None  # the parameters as last opened or saved: the baseline of unsaved()
        self._opened_camera = "orbit"  # the camera kind the scene opened with (show)

    def apply(self, scene: Scene, world: WorldArrays | None = None) -> None:
        """Show ``scene`` (the session runs it already): its view hints on the drawing and the
        panel, its parameters on the panel, its camera framing its arena, its name as the title.
        ``world``: its objects' meshes made already
        (:meth:`~flock3d.viewer.renderer.FlockVisuals.world_arrays`)."""
        from flock3d.viewer.panel import CAMERA_KINDS

        w = self.w
        hints, visuals = scene.view, w.visuals
        visuals.hints = hints
        visuals.boid_size = hints.boid_size
        visuals.set_params(scene.params, show_arena=hints.show_arena, world=world)
        visuals.set_mesh(hints.mesh)
        visuals.set_trails(hints.trails)
        visuals.show_vectors = hints.show_vectors
        visuals.set_look(hints)
        w.set_focus(None)
        p = w.panel
        p.show_params(scene.params)
        p.time_scale.set_value(w.session.time_scale)
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
        visuals.set_color_mode(hints.color_mode)
        visuals.axes.visible = hints.show_axes
        w.editing.forget()
        w.camera_kind = hints.camera if hints.camera in CAMERA_KINDS else "orbit"  # render's fixed, axis
        self._opened_camera = w.camera_kind
        p.quietly(p.camera, lambda: p.camera.setCurrentText(w.camera_kind))
        w.snapshot = w.session.snapshot()
        w.set_camera(w.camera_kind)  # re-frames the camera for the new arena
        w.window.setWindowTitle(f"flock3d — {scene.name}[*]")  # Qt shows [*] as * while modified
        self._kept = w.session.params
        w.window.setWindowModified(False)

    def unsaved(self) -> bool:
        """Whether the parameters or the world changed since the scene was opened or saved."""
        return self.w.session.params != self._kept

    def may_leave(self, doing: str) -> bool:
        """Whether the scene may be left for ``doing`` (``"opening torus"``, ``"quitting"``): at
        once when nothing is unsaved, else as the user answers :meth:`ask`: saved first (a save
        dialog cancelled or failed keeps the scene), discarded, or kept."""
        if not self.unsaved():
            return True
        answer = self.ask(doing)
        if answer == "save":
            self.save_dialog()
            return not self.unsaved()
        return answer == "discard"

    def ask(self, doing: str) -> str:
        """``"save"``, ``"discard"`` or ``"cancel"``: the user's answer to unsaved changes before
        ``doing``. A window without dialogs (tests, measurements) discards them, as it did before."""
        if not self.w.dialogs:
            return "discard"
        from PySide6.QtWidgets import QMessageBox

        button = QMessageBox.StandardButton
        box = QMessageBox(
            QMessageBox.Icon.Warning, "Unsaved changes",
            f"The scene has changes that are not saved. Save them before {doing}?",
            button.Save | button.Discard | button.Cancel, self.w.window,
        )  # fmt: skip
        box.setDefaultButton(button.Save)
        answer = button(box.exec())
        return "save" if answer == button.Save else "discard" if answer == button.Discard else "cancel"

    def open_chosen(self, path: str | Path) -> bool:
        """Open the scene the user chose (in the Scenes tab), once the changes to this one are
        saved or discarded (:meth:`may_leave`)."""
        return self.may_leave(f"opening {path}") and self.open_scene(path)

    def open_scene(self, path: str | Path) -> bool:
        """Switch to the scene in ``path`` (or a shipped scene's name); on a bad file, say why
        and keep the current one.

        The scene is read, its flock built and its objects' meshes made beside the window, which
        goes on drawing the current flock meanwhile: reading a world samples its meshes' grids,
        and placing its boids on a fresh install waits for a child compiling the objects'
        distances (seconds each). One wait beside the window at a time
        (:class:`~flock3d.viewer.event_loop.Beside`): a scene asked for meanwhile is refused
        with a word.
        """
        from PySide6 import QtCore

        from flock3d.core.elsewhere import CompileFailed
        from flock3d.errors import Flock3dError
        from flock3d.viewer.event_loop import TURN

        w = self.w
        if w.busy():
            return False
        w.status.showMessage(f"opening {path}...")

        def read() -> tuple[Scene, object, object]:
            scene = load_scene(path)
            return scene, w.session.flock_for(scene), w.visuals.world_arrays(scene.params, scene.view)

        try:
            scene, flock, world = w.beside.run(f"opening {path}", read)
        except SceneError as error:
            problem = "\n".join(error.problems)
        except (Flock3dError, CompileFailed, ValueError) as error:
            problem = f"{path}: {error}"
        else:
            problem = None
        if w.closed:  # closed while the scene was read: its child was ended
            return False
        if problem is not None:
            w.warn("Cannot open scene", problem)
            return False
        # Three turns of the event loop, not one of 110-130 ms (software OpenGL, a world): the
        # frame asked for meanwhile (the scene before), the scene set up, its first frame (the
        # longest: its buffers sent, its shaders built). Each waits for a timer, not a posted
        # event, so that the timers and input already due come between.
        with w.canvas.held() as asked:
            w.beside.turn(f"opening {path}")
            if w.closed:
                return False
            w.session.load(scene, flock)
            self.apply(scene, world)
        if asked:
            QtCore.QTimer.singleShot(round(1000 * TURN), w.canvas.update)
        w.status.showMessage(f"opened {path}", 5000)
        return True

    def save_scene(self, path: str | Path) -> Path:
        """Write the current parameters and seed as a scene file, with the window's look: its
        camera's kind, and its angles and distance where the user turned or zoomed it (a follow
        camera's distance follows the flock: not kept)."""
        w = self.w
        visuals = w.visuals
        # A kind the window has no camera for (render's "fixed") stays the scene's unless changed here.
        stand_in = w.camera_kind == self._opened_camera != w.session.scene.view.camera
        camera = {} if stand_in else {"camera": w.camera_kind}
        if (placed := visuals.framing.by_hand(w.view)) is not None:
            azimuth, elevation, distance = placed
            camera.update(camera_azimuth=round(azimuth, 3), camera_elevation=round(elevation, 3))
            if w.camera_kind != "follow":
                camera["camera_distance"] = round(distance, 4)
        view = dataclasses.replace(
            w.session.scene.view,
            **camera,
            mesh=w.panel.mesh.currentText(),
            color_mode=visuals.color_mode,
            show_arena=bool(visuals.show_arena),
            show_guides=bool(visuals.show_guides),
            show_axes=bool(visuals.axes.visible),
            trails=float(visuals.trail_seconds),
            show_vectors=bool(visuals.show_vectors),
        )
        scene = w.session.current_scene().replace(view=view)
        try:
            saved = scene.save(path)
        except OSError as error:  # a full disk, no permission: the scene file there is kept as it was
            w.warn("Scene not saved", f"{path}: {error.strerror or error}")
            return Path(path)
        self._kept = w.session.params
        w.window.setWindowModified(False)
        w.status.showMessage(f"saved {saved}", 5000)
        return saved

    def _suggested(self, suffix: str) -> str:
        """A file in the output folder named after the scene, for a dialog to offer."""
        from flock3d.viewer.recording import slug

        return str(self.w.output_dir / f"{slug(self.w.session.scene.name)}{suffix}")

    def open_dialog(self) -> None:
        from PySide6 import QtWidgets

        if not self.may_leave("opening another scene"):
            return
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self.w.window, "Open scene", str(self.w.output_dir), "Scenes (*.toml)"
        )
        if path:
            self.open_scene(path)

    def save_dialog(self) -> None:
        from PySide6 import QtWidgets

        path, _ = QtWidgets.QFileDialog.getSaveFileName(
            self.w.window, "Save scene", self._suggested(".toml"), "Scenes (*.toml)"
        )
        if path:
            self.save_scene(path)

    def export_dialog(self) -> None:
        from PySide6 import QtWidgets

        path, _ = QtWidgets.QFileDialog.getSaveFileName(
            self.w.window, "Export the flock", self._suggested(".html"),
            "Web page (*.html);;USD (*.usdc *.usd *.usda);;glTF (*.glb *.gltf)",
        )  # fmt: skip
        if path:
            seconds, ok = QtWidgets.QInputDialog.getDouble(
                self.w.window, "Export the flock", "Simulated seconds:", EXPORT_SECONDS, 0.1, 3600.0, 1
            )
            if ok:
                self.export(path, seconds)

    def export(self, path: str | Path, seconds: float = 20.0):
        """Run the scene as it is now (parameters, world, seed) for ``seconds`` in a process of
        its own and export the flock to ``path`` (``flock3d export``: its suffix picks USD, glTF or
        HTML); the window keeps running, and the status bar says how it went. Returns the
        ``QProcess``."""
        from PySide6 import QtCore

        w = self.w
        if w.session.flock.rules or w.session.flock.forces:
            w.warn("Cannot export here", "a flock with your own rules exports from the command "
                   "line: flock3d export SCENE --rules FILE --out FILE")  # fmt: skip
            return None
        folder = Path(tempfile.mkdtemp(prefix="flock3d-export-"))
        scene = w.session.current_scene().save(folder / "scene.toml")
        process = QtCore.QProcess(w.window)
        process.setProgram(sys.executable)
        process.setArguments(["-m", "flock3d.cli", "export", str(scene), "--seconds", f"{seconds:g}",
                              "--out", str(path), "--no-progress"])  # fmt: skip

        def finished(code: int, _status) -> None:
            shutil.rmtree(folder, ignore_errors=True)
            if code == 0:
                w.status.showMessage(f"exported {path}", 8000)
            else:
                lines = bytes(process.readAllStandardError().data()).decode(errors="replace").splitlines()
                said = [line for line in lines if line.startswith("flock3d export:")] or lines[-1:]
                w.warn("Export failed", said[0] if said else f"flock3d export ended with {code}")

        process.finished.connect(finished)
        process.start()
        w.status.showMessage(f"exporting {seconds:g} s of the flock to {path}…")
        self._exports.append(process)
        return process
