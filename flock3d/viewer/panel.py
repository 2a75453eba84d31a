"""The side panel: live controls for the model's parameters and the viewer's options.

Dark, to match the canvas, and compact enough that nothing scrolls in the default
1280 x 800 window. Every control's tooltip says what it does and which scene key
it sets, so a setting found by hand can be written into a scene file.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from PySide6 import QtCore, QtGui, QtWidgets

from flock3d.core.fields import spec_of
from flock3d.core.params import TERMS, Params
from flock3d.core.terms import Term
from flock3d.scene.schema import COLOR_MODES, KEYS_BY_NAME, MESHES, PARAM_KEY_OF_FIELD

__all__ = [
    "ParamControl",
    "ControlPanel",
    "CONTROLS",
    "WORLD_CONTROLS",
    "ZONE_CONTROLS",
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
    "axes": ("view.show_axes", None),
    "trails": ("view.trails", None),
    "vectors": ("view.show_vectors", None),
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

#: The Couzin model's own parameters; shown only for a scene with ``model = "couzin"``.
ZONE_CONTROLS: list[Control] = [
    Control("zone_repulsion", "Repulsion r_r", 0.05, 10.0, decimals=2),
    Control("zone_orientation_width", "Orientation Δr_o", 0.0, 20.0, decimals=2),
    Control("zone_attraction_width", "Attraction Δr_a", 0.0, 30.0, decimals=2),
    Control("speed", "Speed s", 0.1, 20.0, decimals=2),
    Control("noise_sigma", "Noise σ", 0.0, 1.0, decimals=3, suffix=" rad"),
]

#: The Vicsek model's noise; it shares the box of the Couzin model's controls (and its speed).
VICSEK_CONTROLS: list[Control] = [
    Control("noise_eta", "Noise η", 0.0, 2.0 * math.pi, decimals=2, suffix=" rad"),
]

_ZONE_FIELDS = frozenset(c.field for c in ZONE_CONTROLS)
_WORLD_FIELDS = frozenset(c.field for c in WORLD_CONTROLS)
_SHARED_WITH_COUZIN = frozenset({"fov", "max_turn_rate"})
#: What a Vicsek scene shows: its noise, speed v0, radius r, cone, turn limit and box.
_VICSEK_FIELDS = frozenset({"noise_eta", "speed", "view_distance", "fov", "max_turn_rate", "arena_radius"})


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
        self.control = control
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
        for widget in (self, self.slider, self.spin):
            widget.setToolTip(tooltip(control.field))
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

    def set_value(self, value: float) -> None:
        """Show ``value`` without emitting ``edited``."""
        for widget in (self.slider, self.spin):
            widget.blockSignals(True)
        self.spin.setValue(self._spin_value(value))
        self.slider.setValue(self.to_slider(value))
        for widget in (self.slider, self.spin):
            widget.blockSignals(False)

    def _spin_value(self, value: float) -> float:
        # A finite value past the range is shown at its end, as every control does; only inf is ∞.
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
    axes_toggled = QtCore.Signal(bool)
    focus_toggled = QtCore.Signal(bool)
    trails_edited = QtCore.Signal(float)
    vectors_toggled = QtCore.Signal(bool)

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
        self.zones = self._param_group("Zones (Couzin model)", ZONE_CONTROLS + VICSEK_CONTROLS)
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
        tip = tooltip("vectors", "Velocity (cyan) and last steering (v_new - v_old) / dt (orange) (d).")
        self.vectors = self._check("Velocity, steering", self.vectors_toggled, tip)
        self.focus = self._check(
            "Focus (click a boid)", self.focus_toggled,
            tooltip("focus", "Single out one boid: its view cone, and the boids it sees (f, esc)."),
        )  # fmt: skip
        checks = QtWidgets.QGridLayout()
        checks.setSpacing(2)
        for i, box in enumerate((self.arena, self.axes, self.vectors, self.focus)):
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
        couzin = params.model == "couzin"
        world = False
        for field, widget in self.controls.items():
            value = control_value(params, field)
            shown = value is not None if field in _WORLD_FIELDS else applies(params, field)
            widget.parentWidget().layout().setRowVisible(widget, shown)
            world = world or (shown and field in _WORLD_FIELDS)
            widget.setEnabled(value is not None)
            if value is not None:
                widget.set_value(value)
        self.world.setVisible(world and params.model == "boids")
        self.zones.setVisible(params.model != "boids")
        self.zones.setTitle("Zones (Couzin model)" if couzin else "Vicsek model")
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
    if params.model == "couzin":
        # Open space, or a periodic box: only the box has a size.
        periodic_size = field == "arena_radius" and params.arena_shape == "periodic"
        return field in _ZONE_FIELDS or field in _SHARED_WITH_COUZIN or periodic_size
    if params.model == "vicsek":
        return field in _VICSEK_FIELDS
    return field not in _ZONE_FIELDS and field != "noise_eta"


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
