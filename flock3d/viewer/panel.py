"""The side panel: live controls for the model's parameters and the viewer's options, the
world's editing, and the shipped scenes.

Three tabs: Flock (:class:`ControlPanel`), World (:class:`WorldPanel`: the selected object's
place, turn and size; adding and removing things) and Scenes
(:class:`~flock3d.viewer.scene_browser.SceneBrowser`, a module of its own). Dark,
to match the canvas, and compact enough that nothing scrolls in the default 1280 x 800
window. Every control's tooltip says what it does and which scene key it sets, so a setting
found by hand can be written into a scene file. The panel only emits requests; the window
applies them between steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

from flock3d.core.fields import spec_of
from flock3d.core.models import MODELS, model_of
from flock3d.core.params import TERMS, Params
from flock3d.core.species import SPECIES_FIELDS
from flock3d.core.terms import Term
from flock3d.scene.schema import COLOR_MODES, KEYS_BY_NAME, MESHES, PARAM_KEY_OF_FIELD

__all__ = [
    "ParamControl",
    "ControlPanel",
    "WorldPanel",
    "CONTROLS",
    "WORLD_CONTROLS",
    "MODEL_CONTROLS",
    "CAMERA_KINDS",
    "applies",
    "control_value",
    "apply_dark_theme",
    "DEFAULT_TRAIL_SECONDS",
    "UNLIMITED_TEXT",
]

CAMERA_KINDS = ("orbit", "arcball", "fly", "follow")
DEFAULT_TRAIL_SECONDS = 2.0
"""Trail length when trails are switched on with a key."""
_STEPS = 1000  # slider resolution

#: The scene key behind each control that is not a plain Params field.
_KEY_OF_CONTROL = {
    "attractor_weight": ("attractors", "the weight of every attractor"),
    "path_weight": ("path", "the path's weight"),
    "count": ("flock.count", None),
    "camera": ("view.camera", None),
    "color_mode": ("view.color_mode", None),
    "mesh": ("view.mesh", None),
    "arena": ("view.show_arena", None),
    "guides": ("view.show_guides", None),
    "axes": ("view.show_axes", None),
    "trails": ("view.trails", None),
    "vectors": ("view.show_vectors", None),
    "position": ("objects", "an object's position"),
    "rotation": ("objects", "an object's rotation [yaw, pitch, roll]"),
    "scale": ("objects", "an object's scale"),
}


def tooltip(field: str, what: str = "") -> str:
    """A control's tooltip: what it does and the scene key it sets."""
    key_name, part = _KEY_OF_CONTROL.get(field, (PARAM_KEY_OF_FIELD.get(field), None))
    key = KEYS_BY_NAME.get(key_name) if key_name else None
    doc = what or (key.doc if key else "")
    if key_name is None:
        return f"{doc}\nNot a scene key: the viewer's own setting."
    where = f"{part} in scene key {key_name}" if part else f"scene key {key_name}"
    return f"{doc}\nSets {where}."


_DARK_STYLE = """
QWidget { background: #0e121b; color: #d6deee; font-size: 9pt; }
QMainWindow, QStatusBar { background: #0b0e16; }
QStatusBar { color: #9aa6bf; }
QScrollArea { border: none; }
QGroupBox { border: 1px solid #252c3c; border-radius: 4px; margin-top: 9px; padding: 2px 4px 2px 4px; }
QGroupBox::title { subcontrol-origin: margin; left: 8px; padding: 0 3px; color: #8fb4ff; }
QPushButton { background: #1a2030; border: 1px solid #2c3548; border-radius: 3px; padding: 3px 6px; }
QPushButton:hover { background: #222a3d; }
QPushButton:checked { background: #2d4a80; border-color: #4a72c0; }
QComboBox, QDoubleSpinBox, QSpinBox { background: #161b28; border: 1px solid #2c3548; border-radius: 3px;
    padding: 1px 3px; }
QComboBox QAbstractItemView { background: #161b28; selection-background-color: #2d4a80; }
QSlider::groove:horizontal { height: 4px; background: #252c3c; border-radius: 2px; }
QSlider::sub-page:horizontal { background: #3d63a8; border-radius: 2px; }
QSlider::handle:horizontal { background: #9cc0ff; width: 10px; margin: -5px 0; border-radius: 5px; }
QSlider::handle:horizontal:disabled, QSlider::sub-page:horizontal:disabled { background: #3a4152; }
QCheckBox::indicator { width: 12px; height: 12px; border: 1px solid #3a4660; background: #161b28; }
QCheckBox::indicator:checked { background: #5b8ef0; }
QToolTip { background: #1d2433; color: #e4eaf6; border: 1px solid #3a4660; padding: 3px; }
QSplitter::handle { background: #1a2030; }
QTabWidget::pane { border: none; }
QTabBar::tab { background: #141926; color: #9aa6bf; padding: 4px 14px; border: 1px solid #252c3c;
    border-bottom: none; border-top-left-radius: 3px; border-top-right-radius: 3px; }
QTabBar::tab:selected { background: #1d2536; color: #d6deee; }
QListWidget { background: #121724; border: 1px solid #252c3c; }
QListWidget::item { padding: 3px 2px; border-bottom: 1px solid #1a2030; }
QListWidget::item:selected { background: #2d4a80; }
"""


def apply_dark_theme(widget: QtWidgets.QWidget) -> None:
    """Style ``widget`` and everything in it dark, to match the canvas."""
    widget.setStyleSheet(_DARK_STYLE)


@dataclass(frozen=True)
class Control:
    """A slider for one parameter: its range, scale and display."""

    field: str
    label: str
    low: float
    high: float
    log: bool = False
    decimals: int = 1
    suffix: str = ""
    unlimited: bool = False
    """One more notch past ``high`` stands for no limit (inf), shown as ``UNLIMITED_TEXT``."""


UNLIMITED_TEXT = "∞"
"""How the panel and the HUD show a limit that is infinite (no limit)."""


#: The weights of the terms that declare a slider for the panel (their Spec), with their terms:
#: a new term's weight appears here with no change to the panel.
_TERM_CONTROLS: list[tuple[Term, Control]] = [
    (term, Control(name, spec.label, *spec.slider, decimals=1))
    for term in TERMS
    for name in term.fields
    if (spec := spec_of(Params.__dataclass_fields__[name])).slider
]

CONTROLS: list[Control] = [
    Control("fov", "Field of view", 1.0, 360.0, decimals=0, suffix=" °"),
    Control(
        "max_turn_rate", "Max turn rate", 5.0, 2000.0, log=True, decimals=0, suffix=" °/s", unlimited=True
    ),
    Control("view_distance", "View distance", 0.2, 100.0, log=True, decimals=2),
    Control("separation_distance", "Separation distance", 0.05, 100.0, log=True, decimals=2),
    Control("separation", "Separation", 0.0, 300.0, decimals=1),
    Control("alignment", "Alignment", 0.0, 30.0, decimals=2),
    Control("cohesion", "Cohesion", 0.0, 20.0, decimals=2),
    Control("confinement", "Confinement", 0.0, 100.0, decimals=1),
    Control("containment", "Wall avoidance", 0.0, 300.0, decimals=1),
    Control("min_speed", "Min speed", 0.0, 50.0, decimals=2),
    Control("max_speed", "Max speed", 0.05, 50.0, decimals=2),
    Control("arena_radius", "Arena radius", 1.0, 1000.0, log=True, decimals=1),
    # the weights of terms that are no world feature (wander): always on the panel
    *(control for term, control in _TERM_CONTROLS if not term.switches),
]

#: Weights of the world's features; each shown only when the scene has the feature (an
#: attractor's weight, the path's, and the weights the features' terms declare).
WORLD_CONTROLS: list[Control] = [
    Control("attractor_weight", "Attractor weight", 0.0, 10.0, decimals=2),
    Control("path_weight", "Path weight", 0.0, 20.0, decimals=2),
    *(control for term, control in _TERM_CONTROLS if term.switches),
]
#: The term owning each world control's field.
_TERM_OF = {name: term for term in TERMS for name in term.fields}
#: The fields of the steers that keep the boids within a sphere's or a box's walls (confinement and
#: containment): no control where the arena has none (open space, a periodic or wrapping box).
_WALLS = frozenset(_TERM_OF["confinement"].fields + _TERM_OF["containment"].fields)


def _declared_control(name: str) -> Control:
    """The slider a field's declaration asks for (its Spec's label and slider): three decimals for a
    range that starts below 0.1 or ends below 1, logarithmic over three decades or more (the speed)."""
    spec = spec_of(Params.__dataclass_fields__[name])
    (low, high), rad = spec.slider, " rad" if spec.unit == "radians" else ""
    log, decimals = low > 0.0 and high >= 1000.0 * low, 3 if high <= 1.0 or 0.0 < low < 0.1 else 2
    return Control(name, spec.label, low, high, log=log, decimals=decimals, suffix=rad)


#: The constant speed and the models' own parameters that declare a slider: each shown only for a
#: scene whose model reads it (:attr:`flock3d.core.models.Model.panel`, and the model's own fields).
MODEL_CONTROLS: list[Control] = [
    _declared_control("speed"),
    *(_declared_control(name) for model in MODELS for name, (_, spec) in model.fields.items() if spec.slider),
]
#: The model owning each field of its own.
_MODEL_OF = {name: model for model in MODELS for name in model.fields}
_WORLD_FIELDS = frozenset(c.field for c in WORLD_CONTROLS)


class _SpinBox(QtWidgets.QDoubleSpinBox):
    """A spin box whose values above ``unlimited_above`` (when set) read and show as no limit."""

    unlimited_above: float | None = None

    def textFromValue(self, value: float) -> str:
        if self.unlimited_above is not None and value > self.unlimited_above:
            return UNLIMITED_TEXT
        return super().textFromValue(value)

    def valueFromText(self, text: str) -> float:
        if self.unlimited_above is not None and UNLIMITED_TEXT in text:
            return self.maximum()
        return super().valueFromText(text)

    def validate(self, text: str, pos: int) -> object:
        if self.unlimited_above is not None and UNLIMITED_TEXT in text:
            return QtGui.QValidator.State.Acceptable, text, pos
        return super().validate(text, pos)


class ParamControl(QtWidgets.QWidget):
    """A labelled slider with a spin box beside it; both edit one value.

    ``edited`` is emitted with the new value when the user moves either one. An
    ``unlimited`` control has one more notch past its range, which is inf (no limit):
    the slider's last position, and the spin box one step past ``high``, shown as ∞.
    """

    edited = QtCore.Signal(float)

    def __init__(self, control: Control, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.control = self.declared = control
        self.slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.slider.setRange(0, _STEPS + 1 if control.unlimited else _STEPS)
        self.slider.setObjectName(f"slider_{control.field}")
        self.spin = _SpinBox()
        self._unlimited_value = control.high + 10.0**-control.decimals  # the spin box's notch for inf
        if control.unlimited:
            self.spin.unlimited_above = control.high
        self.spin.setRange(control.low, self._unlimited_value if control.unlimited else control.high)
        self.spin.setDecimals(control.decimals)
        self.spin.setSuffix(control.suffix)
        self.spin.setKeyboardTracking(False)
        self.spin.setFixedWidth(84)
        self.set_tip(tooltip(control.field))
        row = QtWidgets.QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(4)
        row.addWidget(self.slider, 1)
        row.addWidget(self.spin)
        self.slider.valueChanged.connect(self._slider_moved)
        self.spin.valueChanged.connect(self._spin_changed)

    def to_slider(self, value: float) -> int:
        c = self.control
        if c.unlimited and math.isinf(value):
            return _STEPS + 1
        value = min(max(value, c.low), c.high)
        if c.log:
            t = math.log(value / c.low) / math.log(c.high / c.low)
        else:
            t = (value - c.low) / (c.high - c.low)
        return round(t * _STEPS)

    def from_slider(self, position: int) -> float:
        c = self.control
        if position > _STEPS:
            return math.inf
        t = position / _STEPS
        return c.low * (c.high / c.low) ** t if c.log else c.low + t * (c.high - c.low)

    def scaled(self, value: float, factor: float) -> float:
        """``value`` times ``factor``, kept in the control's range; for an unlimited control,
        past the top is inf and down from inf is the top (what the keyboard's steps do)."""
        c = self.control
        if c.unlimited and math.isinf(value):
            return value if factor > 1 else c.high
        scaled = value * factor
        if c.unlimited and scaled > c.high and value >= c.high:
            return math.inf
        return min(max(scaled, c.low), c.high)

    def set_tip(self, text: str) -> None:
        """The tooltip of the control, its slider and its spin box."""
        for widget in (self, self.slider, self.spin):
            widget.setToolTip(text)

    def set_value(self, value: float) -> None:
        """Show ``value`` without emitting ``edited``; a finite value past the declared range (a
        literal scene's 300 pixels/s) widens the control's range to it, so that the box shows
        the flock's own value and a nudge starts from it."""
        for widget in (self.slider, self.spin):
            widget.blockSignals(True)
        self._take_range(value)
        self.spin.setValue(self._spin_value(value))
        self.slider.setValue(self.to_slider(value))
        for widget in (self.slider, self.spin):
            widget.blockSignals(False)

    def _take_range(self, value: float) -> None:
        c, low, high = self.declared, self.declared.low, self.declared.high
        if math.isfinite(value) and not low <= value <= high and (value > 0.0 or not c.log):  # with room
            low, high = min(low, value / 2.0 if value > 0.0 else value), max(high, 2.0 * value)
        self.control = replace(c, low=low, high=high)
        self._unlimited_value = high + 10.0**-c.decimals
        if c.unlimited:
            self.spin.unlimited_above = high
        self.spin.setRange(low, self._unlimited_value if c.unlimited else high)

    def _spin_value(self, value: float) -> float:
        # Only inf is shown as ∞, one notch past the range.
        if not self.control.unlimited:
            return value
        return self._unlimited_value if math.isinf(value) else min(value, self.control.high)

    def _slider_moved(self, position: int) -> None:
        value = self.from_slider(position)
        value = value if math.isinf(value) else round(value, self.control.decimals)
        self.spin.blockSignals(True)
        self.spin.setValue(self._spin_value(value))
        self.spin.blockSignals(False)
        self.edited.emit(value)

    def _spin_changed(self, value: float) -> None:
        if self.control.unlimited and value > self.control.high:
            value = math.inf
        self.slider.blockSignals(True)
        self.slider.setValue(self.to_slider(value))
        self.slider.blockSignals(False)
        self.edited.emit(value)


class ControlPanel(QtWidgets.QScrollArea):
    """Every live control of the viewer, in one column (it scrolls only in a small window).

    The panel only emits requests; the window applies them between steps.
    """

    param_edited = QtCore.Signal(str, float)
    count_edited = QtCore.Signal(int)
    time_scale_edited = QtCore.Signal(float)
    camera_chosen = QtCore.Signal(str)
    color_mode_chosen = QtCore.Signal(str)
    mesh_chosen = QtCore.Signal(str)
    arena_toggled = QtCore.Signal(bool)
    guides_toggled = QtCore.Signal(bool)
    axes_toggled = QtCore.Signal(bool)
    focus_toggled = QtCore.Signal(bool)
    trails_edited = QtCore.Signal(float)
    vectors_toggled = QtCore.Signal(bool)
    antialias_toggled = QtCore.Signal(bool)

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setMinimumWidth(340)
        self.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        body = QtWidgets.QWidget()
        self.setWidget(body)
        column = QtWidgets.QVBoxLayout(body)
        column.setContentsMargins(6, 4, 6, 4)
        column.setSpacing(4)

        self.buttons: dict[str, QtWidgets.QPushButton] = {}
        actions = QtWidgets.QGridLayout()
        actions.setSpacing(3)
        for i, (name, text, checkable, tip) in enumerate(
            [
                ("pause", "Pause", True, "Pause or play the simulation (space)"),
                ("step", "Step", False, "One step while paused (.)"),
                ("reset", "Reset", False, "Start over from the same seed, keeping the parameters (r)"),
                ("reseed", "Reseed", False, "Start over from the next seed (n); sets scene key seed"),
                ("open", "Open…", False, "Open a scene file (.toml)"),
                ("save", "Save…", False, "Save the current parameters, view and seed as a scene file"),
                ("screenshot", "Shot", False, "Save the 3D view as a PNG in the current folder (p)"),
                ("record", "Record", True, "Record the 3D view to an MP4 at the simulation's pace (m)"),
                (
                    "export",
                    "Export…",
                    False,
                    "Run the scene as it is now and export the flock to USD "
                    "(Blender, Houdini, Unity), glTF or a web page",
                ),
            ]
        ):
            button = QtWidgets.QPushButton(text)
            button.setCheckable(checkable)
            button.setObjectName(f"button_{name}")
            button.setToolTip(tip)
            button.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)  # keep keys for the shortcuts
            self.buttons[name] = button
            actions.addWidget(button, i // 4, i % 4)
        column.addLayout(actions)

        self.controls: dict[str, ParamControl] = {}
        model = self._param_group("Flock", CONTROLS)
        form = model.layout()
        self.count = QtWidgets.QSpinBox()
        self.count.setRange(0, 2_000_000)
        self.count.setSingleStep(100)
        self.count.setKeyboardTracking(False)
        self.count.setToolTip(tooltip("count", "Number of boids; a new count re-spawns the flock."))
        self.count.valueChanged.connect(self.count_edited.emit)
        form.addRow("Boids (re-spawns)", self.count)
        self.time_scale = ParamControl(
            Control("time_scale", "Time scale", 0.05, 8.0, log=True, decimals=2, suffix=" x")
        )
        for widget in (self.time_scale, self.time_scale.slider, self.time_scale.spin):
            widget.setToolTip(tooltip("time_scale", "Simulated seconds per real second (1: real time)."))
        self.time_scale.edited.connect(self.time_scale_edited.emit)
        form.addRow("Time scale", self.time_scale)
        column.addWidget(model)

        self.world = self._param_group("World", WORLD_CONTROLS)
        column.addWidget(self.world)
        self.zones = self._param_group("", MODEL_CONTROLS)
        column.addWidget(self.zones)

        view = QtWidgets.QGroupBox("View")
        view_form = _form(view)
        self.camera = self._combo(CAMERA_KINDS, self.camera_chosen)
        self.camera.setToolTip(
            tooltip(
                "camera", "orbit, arcball, fly (arrows move; see h) or follow the flock or the focused boid."
            )
        )
        self.color_mode = self._combo(COLOR_MODES, self.color_mode_chosen)
        self.color_mode.setToolTip(tooltip("color_mode", "What the boids' colours show (v cycles)."))
        self.mesh = self._combo(tuple(MESHES), self.mesh_chosen)
        self.mesh.setToolTip(tooltip("mesh", "Boid shape: dart (cheapest), cone or bird (beats its wings)."))
        self.trails = QtWidgets.QDoubleSpinBox()
        self.trails.setRange(0.0, 10.0)
        self.trails.setSingleStep(0.5)
        self.trails.setDecimals(1)
        self.trails.setSuffix(" s")
        self.trails.setSpecialValueText("off")
        self.trails.setKeyboardTracking(False)
        self.trails.setToolTip(tooltip("trails", "Seconds of each boid's path drawn as a fading trail (t)."))
        self.trails.valueChanged.connect(self.trails_edited.emit)
        view_form.addRow("Camera", self.camera)
        view_form.addRow("Colour by", self.color_mode)
        view_form.addRow("Boid shape", self.mesh)
        view_form.addRow("Trails", self.trails)
        self.arena = self._check("Arena", self.arena_toggled, tooltip("arena", "Outline the arena (a)."))
        self.axes = self._check("Axes", self.axes_toggled, tooltip("axes", "x, y, z axes at the centre (x)."))
        tip = tooltip("guides", "The path, its waypoints and the attractors (g).")
        self.guides = self._check("Guides", self.guides_toggled, tip)
        tip = tooltip("vectors", "Velocity (cyan) and last steering (v_new - v_old) / dt (orange) (d).")
        self.vectors = self._check("Velocity, steering", self.vectors_toggled, tip)
        self.focus = self._check(
            "Focus (click a boid)", self.focus_toggled,
            tooltip("focus", "Single out one boid: its view cone, and the boids it sees (f, esc)."),
        )  # fmt: skip
        self.antialias = self._check(
            "Anti-aliasing (FXAA)", self.antialias_toggled,
            tooltip("antialias", "Smooth the edges with one pass over the picture (software OpenGL, "
                    "which gets no multisampling; a GPU window is multisampled)."),
        )  # fmt: skip
        checks = QtWidgets.QGridLayout()
        checks.setSpacing(2)
        boxes = (self.arena, self.guides, self.axes, self.vectors, self.focus, self.antialias)
        for i, box in enumerate(boxes):
            checks.addWidget(box, i // 2, i % 2)
        view_form.addRow(checks)
        column.addWidget(view)
        column.addStretch(1)

    def _param_group(self, title: str, controls: list[Control]) -> QtWidgets.QGroupBox:
        """A box of sliders, one per control, each emitting ``param_edited``."""
        group = QtWidgets.QGroupBox(title)
        form = _form(group)
        for control in controls:
            widget = ParamControl(control)
            widget.edited.connect(lambda value, field=control.field: self.param_edited.emit(field, value))
            self.controls[control.field] = widget
            form.addRow(control.label, widget)
        return group

    @staticmethod
    def _combo(items, signal) -> QtWidgets.QComboBox:
        combo = QtWidgets.QComboBox()
        combo.addItems(list(items))
        combo.currentTextChanged.connect(signal.emit)
        return combo

    @staticmethod
    def _check(text: str, signal, tip: str) -> QtWidgets.QCheckBox:
        box = QtWidgets.QCheckBox(text)
        box.setToolTip(tip)
        box.toggled.connect(signal.emit)
        return box

    def show_params(self, params: Params) -> None:
        """Reflect ``params`` in the controls (without emitting edits).

        Only the controls that apply are shown: the scene's model's, and the weights
        of the world features the scene has (the World box only when it has one).
        """
        world = False
        for field, widget in self.controls.items():
            value = control_value(params, field)
            shown = value is not None if field in _WORLD_FIELDS else applies(params, field)
            widget.parentWidget().layout().setRowVisible(widget, shown)
            world = world or (shown and field in _WORLD_FIELDS)
            widget.setEnabled(value is not None)
            if value is not None:
                widget.set_value(value)
            if field in SPECIES_FIELDS:  # a species' own value is its, whatever the flock's
                own = [s.name for s in params.species if getattr(s, field) is not None]
                keep = f"\nSpecies with their own value keep it: {', '.join(own)}." if own else ""
                widget.set_tip(tooltip(field) + keep)
        model = model_of(params)
        self.world.setVisible(world and model.update_kind == "terms")
        self.zones.setVisible(model.update_kind != "terms")
        self.zones.setTitle(model.title)
        self.count.blockSignals(True)
        self.count.setValue(params.count)
        self.count.blockSignals(False)

    @staticmethod
    def quietly(widget: QtWidgets.QWidget, setter: Callable[[], None]) -> None:
        """Run ``setter`` on ``widget`` without it emitting signals."""
        widget.blockSignals(True)
        try:
            setter()
        finally:
            widget.blockSignals(False)


def applies(params: Params, field: str) -> bool:
    """Whether the control of ``field`` belongs to the model of ``params``."""
    model, owner = model_of(params), _MODEL_OF.get(field)
    if field == "arena_radius" and (params.arena_shape == "none" or params.arena_size is not None):
        return False  # open space has no size, and a box's sides, where given, are its size
    if model.update_kind == "terms":  # the boids model: all but the other models' own
        if field in _WALLS and not _TERM_OF["confinement"].present(params):
            return False  # the walls' steers act in a sphere or a box alone
        return owner is None and field != "speed"
    return owner is model or field in model.panel


def control_value(params: Params, field: str) -> float | None:
    """The value a control shows: a Params field or a feature's weight; None where it does not
    apply (a parameter of the other model, or a feature the scene lacks)."""
    if not applies(params, field):
        return None
    if field == "attractor_weight":
        return params.attractors[0].weight if params.attractors else None
    if field == "path_weight":
        return params.path.weight if params.path else None
    term = _TERM_OF.get(field) if field in _WORLD_FIELDS else None
    if term is not None and term.switches and field not in term.switches and not term.present(params):
        return None  # the weight of a feature the scene lacks
    return getattr(params, field)


def _form(parent: QtWidgets.QWidget) -> QtWidgets.QFormLayout:
    """A tight two-column form (label, control)."""
    form = QtWidgets.QFormLayout(parent)
    form.setContentsMargins(4, 6, 4, 4)
    form.setVerticalSpacing(3)
    form.setHorizontalSpacing(6)
    form.setLabelAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
    return form


class WorldPanel(QtWidgets.QWidget):
    """The World tab: the selected thing's place, turn and size; adding things where the user
    last clicked; deleting; undoing. Emits requests only, as :class:`ControlPanel` does.

    Signals: ``position_edited(axis, value)`` (0, 1, 2: x, y, z), ``rotation_edited(axis,
    degrees)`` (0, 1, 2: yaw, pitch, roll), each the one value the user changed,
    ``scale_edited(factor)``, ``add_chosen(what)`` (a primitive's shape, ``attractor`` or
    ``predator``), ``delete_clicked()``, ``undo_clicked()``, ``entered()`` (Return in a box: keys
    go back to the view, where del and ctrl+z edit the world)."""

    entered = QtCore.Signal()
    position_edited = QtCore.Signal(int, float)
    rotation_edited = QtCore.Signal(int, float)
    scale_edited = QtCore.Signal(float)
    add_chosen = QtCore.Signal(str)
    delete_clicked = QtCore.Signal()
    undo_clicked = QtCore.Signal()

    HINT = (
        "Click an object, attractor or predator to select it; drag it to move it over the ground "
        "(ctrl-drag: up and down). Right-click: add here, delete. Del deletes, ctrl+z undoes. "
        "Save… (on the Flock tab) writes the world into a scene file."
    )

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        from flock3d.viewer.editing import PRIMITIVES

        super().__init__(parent)
        column = QtWidgets.QVBoxLayout(self)
        column.setContentsMargins(6, 6, 6, 6)
        column.setSpacing(6)
        hint = QtWidgets.QLabel(self.HINT)
        hint.setWordWrap(True)
        hint.setStyleSheet("color: #9aa6bf;")
        column.addWidget(hint)

        box = QtWidgets.QGroupBox("Selected")
        form = _form(box)
        self.selected = QtWidgets.QLabel("nothing")
        form.addRow("", self.selected)
        self.position = [self._spin(-1e6, 1e6, 2, "position", f"{axis} of its origin") for axis in "xyz"]
        self.rotation = [
            self._spin(-360.0, 360.0, 1, "rotation", what, " °") for what in ("yaw", "pitch", "roll")
        ]
        self.scale = self._spin(1e-3, 1e3, 3, "scale", "Scale factor (along x; y and z in proportion)", " x")
        self.scale.setSingleStep(0.1)
        for label, spins, signal in (("Position", self.position, self.position_edited),
                                     ("Rotation", self.rotation, self.rotation_edited)):  # fmt: skip
            row = QtWidgets.QHBoxLayout()
            row.setSpacing(3)
            for axis, spin in enumerate(spins):  # the one value edited: the others may be rounded
                row.addWidget(spin)
                spin.valueChanged.connect(lambda value, axis=axis, signal=signal: signal.emit(axis, value))
            form.addRow(label, row)
        self.scale.valueChanged.connect(self.scale_edited.emit)
        form.addRow("Scale", self.scale)
        column.addWidget(box)

        add = QtWidgets.QHBoxLayout()
        self.what = QtWidgets.QComboBox()
        self.what.addItems([*PRIMITIVES, "attractor", "predator"])
        self.what.setToolTip("What to add where you last clicked (right-click the view to add at once).")
        self.buttons: dict[str, QtWidgets.QPushButton] = {}
        add.addWidget(self.what, 1)
        for name, text, tip, signal in (
            ("add", "Add", "Add it where you last clicked (sets scene keys objects, attractors, "
             "predators.count)", lambda: self.add_chosen.emit(self.what.currentText())),
            ("delete", "Delete", "Remove the selected thing (del)", self.delete_clicked.emit),
            ("undo", "Undo", "Undo the last edit of the world (ctrl+z)", self.undo_clicked.emit),
        ):  # fmt: skip
            button = QtWidgets.QPushButton(text)
            button.setToolTip(tip)
            button.setObjectName(f"button_{name}")
            button.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
            button.clicked.connect(signal)
            self.buttons[name] = button
            add.addWidget(button)
        column.addLayout(add)
        column.addStretch(1)
        self.show_selection(None)

    def _spin(self, low, high, decimals, field, what, suffix="") -> QtWidgets.QDoubleSpinBox:
        spin = QtWidgets.QDoubleSpinBox()
        spin.lineEdit().returnPressed.connect(self.entered.emit)
        spin.setRange(low, high)
        spin.setDecimals(decimals)
        spin.setSuffix(suffix)
        spin.setKeyboardTracking(False)
        spin.setMinimumWidth(70)
        spin.setToolTip(tooltip(field, what))
        return spin

    def show_selection(self, title: str | None, position=None, rotation=None, scale=None) -> None:
        """Show what is selected (None: nothing): its ``title``, and where given its position,
        rotation and scale factor (the rest disabled), without emitting edits."""
        self.selected.setText(title or "nothing (click something in the view)")
        for spins, values in ((self.position, position), (self.rotation, rotation), ([self.scale], scale)):
            values = None if values is None else np.atleast_1d(values)
            for k, spin in enumerate(spins):
                spin.setEnabled(values is not None)
                if values is not None:
                    ControlPanel.quietly(spin, lambda spin=spin, v=float(values[k]): spin.setValue(v))
                else:  # blank, not its minimum or a deleted object's value
                    ControlPanel.quietly(spin, spin.clear)
        self.buttons["delete"].setEnabled(title is not None)
