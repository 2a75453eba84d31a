"""What the panel's controls and the keys do in a :class:`~flock3d.viewer.app.ViewerWindow`:
each signal and each shortcut bound to the window's action (or its collaborators')."""

from __future__ import annotations

__all__ = ["Bindings"]


def _cycle(options, current):
    """The option after ``current`` in ``options``, round; the first where it is not one."""
    return options[(options.index(current) + 1) % len(options)] if current in options else options[0]


class Bindings:
    """The panel's signals and the window's shortcuts, bound to a window's actions.

    Args:
        window: the :class:`~flock3d.viewer.app.ViewerWindow` whose panel, keys and actions these are.

    Attributes:
        shortcuts: the Qt shortcuts made by :meth:`connect` (kept alive with the window).
    """

    def __init__(self, window) -> None:
        self.w = window
        self.shortcuts: list = []

    def connect(self) -> None:
        """Bind the Flock tab, the scene browser and the keys (:meth:`keys`)."""
        from PySide6 import QtGui

        self._connect_panel()
        for keys, action in self.keys().items():
            for key in keys:
                shortcut = QtGui.QShortcut(QtGui.QKeySequence(key), self.w.window)
                shortcut.activated.connect(action)
                self.shortcuts.append(shortcut)

    def _connect_panel(self) -> None:
        w = self.w
        p, visuals = w.panel, w.visuals
        p.param_edited.connect(w.set_param)
        p.count_edited.connect(lambda n: w.set_param("count", n))
        p.time_scale_edited.connect(w.set_time_scale)
        p.camera_chosen.connect(w.set_camera)
        p.color_mode_chosen.connect(visuals.set_color_mode)
        p.mesh_chosen.connect(visuals.set_mesh)
        p.arena_toggled.connect(lambda on: visuals.set_params(w.session.params, show_arena=on))
        p.axes_toggled.connect(lambda on: setattr(visuals.axes, "visible", on))
        p.guides_toggled.connect(visuals.set_guides)
        p.focus_toggled.connect(lambda on: w.set_focus(0 if on and len(w.snapshot.state) else None))
        p.trails_edited.connect(visuals.set_trails)
        p.vectors_toggled.connect(lambda on: setattr(visuals, "show_vectors", on))
        p.antialias_toggled.connect(w.set_antialias)
        p.quietly(p.antialias, lambda: p.antialias.setChecked(w.canvas.fxaa))
        p.antialias.setVisible(w.samples == 0)  # a multisampled window needs none
        b, scenes = p.buttons, w.scenes
        w.browser.scene_chosen.connect(scenes.open_chosen)
        b["pause"].toggled.connect(w.set_paused)
        b["step"].clicked.connect(w.single_step)
        b["reset"].clicked.connect(w.reset)
        b["reseed"].clicked.connect(w.reseed)
        b["open"].clicked.connect(scenes.open_dialog)
        b["save"].clicked.connect(scenes.save_dialog)
        b["export"].clicked.connect(scenes.export_dialog)
        b["screenshot"].clicked.connect(w.screenshot)
        b["record"].toggled.connect(w.set_recording)

    def keys(self) -> dict[tuple[str, ...], object]:
        """The shortcuts: the keys (Qt's key sequences) of each action."""
        from flock3d.scene.schema import COLOR_MODES
        from flock3d.viewer.panel import CAMERA_KINDS, DEFAULT_TRAIL_SECONDS

        w = self.w
        p = w.panel
        turn = p.controls["max_turn_rate"]
        return {
            ("Space",): lambda: p.buttons["pause"].toggle(),
            (".",): w.single_step,
            ("R",): w.reset,
            ("N",): w.reseed,
            ("[",): lambda: w.set_param("fov", max(10.0, w.session.params.fov - 10.0)),
            ("]",): lambda: w.set_param("fov", min(360.0, w.session.params.fov + 10.0)),
            ("-",): lambda: w.set_param("max_turn_rate", turn.scaled(w.session.params.max_turn_rate, 0.8)),
            ("=", "+"): lambda: w.set_param(
                "max_turn_rate", turn.scaled(w.session.params.max_turn_rate, 1.25)
            ),
            ("C",): lambda: p.camera.setCurrentText(_cycle(CAMERA_KINDS, w.camera_kind)),
            ("V",): lambda: p.color_mode.setCurrentText(_cycle(COLOR_MODES, w.visuals.color_mode)),
            ("F",): lambda: w.set_focus(0 if len(w.snapshot.state) else None),
            ("Escape",): lambda: (w.set_focus(None), w.hud.help.setVisible(False)),
            ("T",): lambda: p.trails.setValue(0.0 if w.visuals.trail_seconds else DEFAULT_TRAIL_SECONDS),
            ("D",): lambda: p.vectors.toggle(),
            ("P",): w.screenshot,
            ("M",): lambda: p.buttons["record"].toggle(),
            ("A",): lambda: p.arena.toggle(),
            ("G",): lambda: p.guides.toggle(),
            ("X",): lambda: p.axes.toggle(),
            ("Delete", "Backspace"): w.editing.delete_selected,
            ("Ctrl+Z",): w.editing.undo,
            ("H", "?"): w.hud.toggle_help,
            ("Ctrl+Q",): w.close,
        }
