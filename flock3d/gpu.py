"""``engine="gpu"``: a flock stepped on an NVIDIA GPU (numba-cuda), its state kept on the device.

:class:`GpuEngine` is what a :class:`~flock3d.Flock` made with ``engine="gpu"`` steps with. The
state lives on the device between steps; ``step(n)`` reads back one flag. The flock's public
arrays (``positions``, ``velocities``, ``orientations``, the predators') are copied back when
they are read after a step, and what was read (and may have been edited) is copied to the
device again before the next: so read them through the flock, not through a reference kept
from before a step.

It runs every model's synchronous update but Pearce's (the boids' in kinematic or aerodynamic
flight) with metric, topological or adaptive neighbours (k up to 16), every term, the per-boid
state terms, models and the perception carry (``state.carried``: copied back when read, as the
arrays above), your own rules and forces (the same Python functions, compiled as device
functions: written on the numbers of their arrays, returning a tuple), species and every arena,
in float64 or float32 (``sim.precision``); it refuses the rest in one line
(:class:`~flock3d.errors.GpuError`), and says what is missing
where it cannot run at all.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from flock3d.core.assemble import StepStatus, layout_of, world_data
from flock3d.core.params import Params
from flock3d.core.state import FlockState, check_state
from flock3d.core.step.values import riders
from flock3d.errors import GpuError

__all__ = ["GpuEngine", "check_device", "check_runs", "refusal", "kernel_source"]

_SYNCED = ("positions", "velocities", "orientations", "waypoints", "predator_positions",
           "predator_velocities", "predator_orientations")  # fmt: skip


def refusal(params: Params, rules: Sequence = (), forces: Sequence = ()) -> str:
    """Why the GPU engine does not run a flock of ``params`` (with ``rules``, ``forces``) yet, in one
    line ("" when it does)."""
    from flock3d.core.gpu.nearest import MAX_NEAREST
    from flock3d.core.step.cuda_generate import MAX_FLOAT32_BOIDS, unsupported

    layout = layout_of(params, rules, forces)
    lacking = unsupported(layout)
    if lacking:
        return f"the GPU engine does not run {', '.join(lacking)} yet (engine 'fast' does)"
    if layout.neighbours != "metric" and params.neighbours > MAX_NEAREST:  # each thread's arrays of them
        return (
            f"the GPU engine chooses at most {MAX_NEAREST} topological neighbours (got "
            f"neighbours = {params.neighbours}; engine 'fast' chooses any number)"
        )
    if params.precision == "float32" and params.count > MAX_FLOAT32_BOIDS:
        return f"a float32 flock holds at most {MAX_FLOAT32_BOIDS:,} boids (got {params.count:,})"
    return ""


def kernel_source(params: Params, rules: Sequence = (), forces: Sequence = ()) -> tuple[str, list[str]]:
    """The generated GPU step of a flock of ``params`` and the names of the values it reads (what
    ``flock3d debug step --engine gpu`` prints). Needs no numba-cuda."""
    from flock3d.core.step.cuda_generate import generate

    why = refusal(params, rules, forces)
    if why:
        raise GpuError(why)
    return generate(layout_of(params, rules, forces))


def check_device() -> None:
    """Raise :class:`GpuError` (one line: what is missing and how to install it) unless the GPU
    engine can run here: numba-cuda, a driver and a device."""
    from flock3d.core.gpu.device import missing  # imports numba-cuda: only for a GPU flock

    why = missing()
    if why:
        raise GpuError(why)


def check_runs(params: Params, rules: Sequence = (), forces: Sequence = ()) -> None:
    """Raise :class:`GpuError` (one line: what is missing and how to install it, or what of the
    flock the GPU engine does not run yet) unless a flock of ``params`` can step on the GPU here;
    :class:`~flock3d.rules.RuleError` for one of ``rules`` and ``forces`` numba-cuda cannot compile."""
    check_device()
    why = refusal(params, rules, forces)
    if why:
        raise GpuError(why)
    _check_compiles(rules, forces)


class GpuEngine:
    """The device state of one flock, and its steps.

    Raises:
        GpuError: numba-cuda, the driver or a device is missing (the message says how to install
            it), or the flock has something the GPU engine does not run yet (named).
        RuleError: numba-cuda cannot compile one of ``rules`` and ``forces`` (named).
    """

    def __init__(
        self, params: Params, state: FlockState, rules: Sequence = (), forces: Sequence = ()
    ) -> None:
        check_runs(params, rules, forces)
        from flock3d.core.gpu.engine import DeviceFlock

        self.device = DeviceFlock(len(state), np.dtype(params.precision).type)
        self.device_newer = False  # the device holds steps the host arrays lack
        self.host_newer = True  # the host arrays were read (maybe edited) since the last upload
        self._reading = False  # within reading(): what is read (read()) is not edited
        self.state = DeviceState.of(state, self)

    def pull(self) -> None:
        """Copy the device's state into the host arrays, if it is newer, for a caller that may edit
        them: the whole state goes up again before the next step."""
        self._download()
        self.host_newer = True

    def read(self) -> None:
        """:meth:`pull` for a reader of the host arrays; within :meth:`reading` nothing goes up."""
        self._download()
        if not self._reading:
            self.host_newer = True  # the caller may edit what it reads

    def _download(self) -> None:
        if self.device_newer:
            arrays = self.state.__dict__
            self.device.download(*(arrays[name] for name in _SYNCED))
            self.device.download_carried(arrays["carried"])
            self.device_newer = False

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """A block that only reads the host arrays (a copy for a window): the device's state stays
        the one the next step runs from, so nothing goes up again (the whole state each time)."""
        self._reading, before = True, self._reading
        try:
            yield
        finally:
            self._reading = before

    def step(
        self,
        params: Params,
        n: int,
        seed: int,
        rules: Sequence = (),
        forces: Sequence = (),
        fields: Any = None,
    ) -> StepStatus:
        """Up to ``n`` steps of ``params.dt`` on the device (the flock's clock advanced by the steps
        done), in a world of ``params``' objects and ``fields`` (their grids read from files); stops
        after a step that fails."""
        why = refusal(params, rules, forces)  # params may have changed since the flock was made
        if why:
            raise GpuError(why)
        from flock3d.core.gpu.engine import DeviceFlock

        step = _stepper(params, rules, forces)
        state = self.state
        if np.dtype(params.precision) != self.device.dtype:  # the device's arrays in the new precision
            self.pull()
            self.device = DeviceFlock(len(state), np.dtype(params.precision).type)
            self.host_newer = True
        riding = riders(step.layout)
        if riding != self.device.riding:  # another step carries other arrays: they go up again
            self.pull()
        if self.host_newer:
            check_state(state, params)
            self.device.upload(state, params, riding)
            self.host_newer = False
        time0, clock0 = state.clock(params.dt)
        world = world_data(params, fields)
        status = self.device.advance(step, params, int(n), time0, clock0,
                                     int(state.step_count), int(seed), world)  # fmt: skip
        self.device_newer = self.device_newer or status.steps > 0
        state.advance_clock(status.steps, params.dt)
        return status


#: The user functions compiled for the device already (each is compiled alone once, to name it
#: in one line if numba-cuda cannot compile it; kept weakly: a function let go is not held here).
_compiled: weakref.WeakSet = weakref.WeakSet()


def _stepper(params: Params, rules: Sequence, forces: Sequence) -> Any:
    """The GPU step of a flock of ``params``, ``rules`` and ``forces``.

    Raises:
        RuleError: numba-cuda cannot compile one of the rules or forces (named, in one line).
    """
    from flock3d.core.gpu.engine import stepper

    rules, forces = tuple(rules), tuple(forces)
    _check_compiles(rules, forces)
    return stepper(layout_of(params, rules, forces), rules, forces, params.precision)


def _check_compiles(rules: Sequence, forces: Sequence) -> None:
    """Raise :class:`~flock3d.rules.RuleError` (one line, naming it) for the first of ``rules`` and
    ``forces`` numba-cuda cannot compile as a device function."""
    from flock3d.core.gpu.device import simulated
    from flock3d.step_errors import device_compile_error

    # The simulator runs them as Python: there is nothing to compile.
    fresh = [] if simulated() else [item for item in (*rules, *forces) if item.fn not in _compiled]
    if fresh:
        error = device_compile_error([r for r in fresh if r in rules], [f for f in fresh if f in forces])
        if error is not None:
            raise error
        _compiled.update(item.fn for item in fresh)


def _synced(name: str) -> property:
    """A state array that is copied back from the device when read after a step."""

    def get(self: DeviceState) -> np.ndarray:
        engine = self.__dict__.get("_engine")
        if engine is not None:
            engine.read()
        return self.__dict__[name]

    def put(self: DeviceState, value: np.ndarray) -> None:
        engine = self.__dict__.get("_engine")
        if engine is not None:
            engine.pull()  # the others' latest state first: the whole state goes up again
        self.__dict__[name] = value

    return property(get, put, doc=f"(synced with the device) {name}")


class DeviceState(FlockState):
    """A :class:`FlockState` whose boid arrays the GPU engine keeps on the device between steps."""

    positions = _synced("positions")
    velocities = _synced("velocities")
    orientations = _synced("orientations")
    waypoints = _synced("waypoints")
    predator_positions = _synced("predator_positions")
    predator_velocities = _synced("predator_velocities")
    predator_orientations = _synced("predator_orientations")
    carried = _synced("carried")

    def reading(self) -> contextlib.AbstractContextManager:
        engine = self.__dict__.get("_engine")
        return contextlib.nullcontext() if engine is None else engine.reading()

    def copy(self) -> FlockState:
        """A plain :class:`FlockState` of the device's state: read, so nothing goes up again."""
        with self.reading():
            return super().copy()

    def __getattr__(self, name: str) -> Any:
        # A carried array (``state.perches``): copied back from the device first, as the others.
        carried = self.__dict__.get("carried")
        if carried is not None and name in carried:
            engine = self.__dict__.get("_engine")
            if engine is not None:
                engine.read()
            return carried[name]
        return super().__getattr__(name)

    def __setattr__(self, name: str, value: Any) -> None:
        carried = self.__dict__.get("carried")
        engine = self.__dict__.get("_engine")
        if carried is not None and name in carried and engine is not None:
            engine.pull()  # the others' latest state first: the whole state goes up again
        super().__setattr__(name, value)

    @classmethod
    def of(cls, state: FlockState, engine: Any) -> DeviceState:
        """``state``'s arrays (the same objects), synced with ``engine``'s device state."""
        out = cls.__new__(cls)
        out.__dict__.update(state.__dict__)
        out.__dict__["_engine"] = engine
        return out

    def __len__(self) -> int:  # no copy back for a count
        return self.__dict__["positions"].shape[0]

    @property
    def n_predators(self) -> int:
        return self.__dict__["predator_positions"].shape[0]
