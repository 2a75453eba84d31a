"""The side panel: live controls for the model's parameters and the viewer's options."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from PySide6 import QtCore, QtWidgets

from flock3d.core.params import Params
from flock3d.scene.schema import COLOR_MODES, MESHES

__all__ = [
    "ParamControl",
    "ControlPanel",
    "CONTROLS",
    "WORLD_CONTROLS",
    "ZONE_CONTROLS",
    "CAMERA_KINDS",
    "applies",
    "control_value",
]

CAMERA_KINDS = ("orbit", "arcball", "fly", "follow")
_STEPS = 1000  # slider resolution


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


CONTROLS: list[Control] = [
    Control("fov", "Field of view", 1.0, 360.0, decimals=0, suffix=" °"),
    Control("max_turn_rate", "Max turn rate", 5.0, 2000.0, log=True, decimals=0, suffix=" °/s"),
    Control("view_distance", "View distance", 0.2, 100.0, log=True, decimals=2),
    Control("separation_distance", "Separation distance", 0.05, 100.0, log=True, decimals=2),
    Control("separation", "Separation", 0.0, 300.0, decimals=1),
    Control("alignment", "Alignment", 0.0, 30.0, decimals=2),
    Control("cohesion", "Cohesion", 0.0, 20.0, decimals=2),
    Control("confinement", "Confinement", 0.0, 100.0, decimals=1),
    Control("min_speed", "Min speed", 0.0, 50.0, decimals=2),
    Control("max_speed", "Max speed", 0.05, 50.0, decimals=2),
    Control("arena_radius", "Arena radius", 1.0, 1000.0, log=True, decimals=1),
]

#: Weights of the world features; enabled only when the scene has the feature.
WORLD_CONTROLS: list[Control] = [
    Control("attractor_weight", "Attractor weight", 0.0, 10.0, decimals=2),
    Control("path_weight", "Path weight", 0.0, 20.0, decimals=2),
    Control("avoidance", "Obstacle avoidance", 0.0, 300.0, decimals=1),
    Control("flee", "Flee predators", 0.0, 300.0, decimals=1),
]

#: The Couzin model's own parameters; shown only for a scene with ``model = "couzin"``.
ZONE_CONTROLS: list[Control] = [
    Control("zone_repulsion", "Repulsion r_r", 0.05, 10.0, decimals=2),
    Control("zone_orientation_width", "Orientation Δr_o", 0.0, 20.0, decimals=2),
    Control("zone_attraction_width", "Attraction Δr_a", 0.0, 30.0, decimals=2),
    Control("speed", "Speed s", 0.1, 20.0, decimals=2),
    Control("noise_sigma", "Noise σ", 0.0, 1.0, decimals=3, suffix=" rad"),
]

_ZONE_FIELDS = frozenset(c.field for c in ZONE_CONTROLS)
_SHARED_WITH_COUZIN = frozenset({"fov", "max_turn_rate"})


class ParamControl(QtWidgets.QWidget):
    """A labelled slider with a spin box beside it; both edit one value.

    ``edited`` is emitted with the new value when the user moves either one.
    """

    edited = QtCore.Signal(float)

    def __init__(self, control: Control, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.control = control
        self.slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.slider.setRange(0, _STEPS)
        self.slider.setObjectName(f"slider_{control.field}")
        self.spin = QtWidgets.QDoubleSpinBox()
        self.spin.setRange(control.low, control.high)
        self.spin.setDecimals(control.decimals)
        self.spin.setSuffix(control.suffix)
        self.spin.setKeyboardTracking(False)
        self.spin.setMinimumWidth(92)
        row = QtWidgets.QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.slider, 1)
        row.addWidget(self.spin)
        self.slider.valueChanged.connect(self._slider_moved)
        self.spin.valueChanged.connect(self._spin_changed)

    def to_slider(self, value: float) -> int:
        c = self.control
        value = min(max(value, c.low), c.high)
        if c.log:
            t = math.log(value / c.low) / math.log(c.high / c.low)
        else:
            t = (value - c.low) / (c.high - c.low)
        return round(t * _STEPS)

    def from_slider(self, position: int) -> float:
        c = self.control
        t = position / _STEPS
        return c.low * (c.high / c.low) ** t if c.log else c.low + t * (c.high - c.low)

    def set_value(self, value: float) -> None:
        """Show ``value`` without emitting ``edited``."""
        for widget in (self.slider, self.spin):
            widget.blockSignals(True)
        self.spin.setValue(value)
        self.slider.setValue(self.to_slider(value))
        for widget in (self.slider, self.spin):
            widget.blockSignals(False)

    def _slider_moved(self, position: int) -> None:
        value = round(self.from_slider(position), self.control.decimals)
        self.spin.blockSignals(True)
        self.spin.setValue(value)
        self.spin.blockSignals(False)
        self.edited.emit(value)

    def _spin_changed(self, value: float) -> None:
        self.slider.blockSignals(True)
        self.slider.setValue(self.to_slider(value))
        self.slider.blockSignals(False)
        self.edited.emit(value)


class ControlPanel(QtWidgets.QScrollArea):
    """Every live control of the viewer, in one scrollable column.

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

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setMinimumWidth(330)
        body = QtWidgets.QWidget()
        self.setWidget(body)
        column = QtWidgets.QVBoxLayout(body)

        self.buttons: dict[str, QtWidgets.QPushButton] = {}
        actions = QtWidgets.QGridLayout()
        for i, (name, text, checkable) in enumerate(
            [
                ("pause", "Pause", True),
                ("step", "Step", False),
                ("reset", "Reset", False),
                ("reseed", "Reseed", False),
                ("open", "Open scene…", False),
                ("save", "Save scene…", False),
                ("screenshot", "Screenshot", False),
                ("record", "Record", True),
            ]
        ):
            button = QtWidgets.QPushButton(text)
            button.setCheckable(checkable)
            button.setObjectName(f"button_{name}")
            button.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)  # keep keys for the shortcuts
            self.buttons[name] = button
            actions.addWidget(button, i // 2, i % 2)
        column.addLayout(actions)

        self.controls: dict[str, ParamControl] = {}
        model = self._param_group("Flock", CONTROLS)
        form = model.layout()
        self.count = QtWidgets.QSpinBox()
        self.count.setRange(0, 2_000_000)
        self.count.setSingleStep(100)
        self.count.setKeyboardTracking(False)
        self.count.setToolTip("Number of boids; a new count re-spawns the flock")
        self.count.valueChanged.connect(self.count_edited.emit)
        form.addRow("Boids (re-spawns)", self.count)
        self.time_scale = ParamControl(
            Control("time_scale", "Time scale", 0.05, 8.0, log=True, decimals=2, suffix=" x")
        )
        self.time_scale.edited.connect(self.time_scale_edited.emit)
        form.addRow("Time scale", self.time_scale)
        column.addWidget(model)

        self.world = self._param_group("World", WORLD_CONTROLS)
        column.addWidget(self.world)
        self.zones = self._param_group("Zones (Couzin model)", ZONE_CONTROLS)
        column.addWidget(self.zones)

        view = QtWidgets.QGroupBox("View")
        view_form = QtWidgets.QFormLayout(view)
        self.camera = self._combo(CAMERA_KINDS, self.camera_chosen)
        self.color_mode = self._combo(COLOR_MODES, self.color_mode_chosen)
        self.mesh = self._combo(tuple(MESHES), self.mesh_chosen)
        view_form.addRow("Camera", self.camera)
        view_form.addRow("Colour by", self.color_mode)
        view_form.addRow("Boid shape", self.mesh)
        self.arena = self._check("Arena sphere", self.arena_toggled)
        self.axes = self._check("Axes", self.axes_toggled)
        self.focus = self._check("Focus on one boid (click one)", self.focus_toggled)
        for box in (self.arena, self.axes, self.focus):
            view_form.addRow(box)
        column.addWidget(view)
        column.addStretch(1)

    def _param_group(self, title: str, controls: list[Control]) -> QtWidgets.QGroupBox:
        """A box of sliders, one per control, each emitting ``param_edited``."""
        group = QtWidgets.QGroupBox(title)
        form = QtWidgets.QFormLayout(group)
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
    def _check(text: str, signal) -> QtWidgets.QCheckBox:
        box = QtWidgets.QCheckBox(text)
        box.toggled.connect(signal.emit)
        return box

    def show_params(self, params: Params) -> None:
        """Reflect ``params`` in the controls (without emitting edits).

        Only the scene's model's controls are shown (the World and Zones boxes
        included); the weight of a feature the scene lacks is disabled.
        """
        couzin = params.model == "couzin"
        self.world.setVisible(not couzin)
        self.zones.setVisible(couzin)
        for field, widget in self.controls.items():
            widget.parentWidget().layout().setRowVisible(widget, applies(params, field))
            value = control_value(params, field)
            widget.setEnabled(value is not None)
            if value is not None:
                widget.set_value(value)
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
    return field not in _ZONE_FIELDS


def control_value(params: Params, field: str) -> float | None:
    """The value a control shows: a Params field or a feature's weight; None where it does not
    apply (a parameter of the other model, or a feature the scene lacks)."""
    if not applies(params, field):
        return None
    if field == "attractor_weight":
        return params.attractors[0].weight if params.attractors else None
    if field == "path_weight":
        return params.path.weight if params.path else None
    if field == "avoidance" and not params.obstacles:
        return None
    if field == "flee" and not params.predator_count:
        return None
    return getattr(params, field)
