"""What the viewer runs, without any GUI: a scene, its flock, a fixed-step clock, live edits.

Kept free of Qt and vispy so that its behaviour (parameter edits between steps,
reset and reseed, the real-time factor) is tested like the rest of the library.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from flock3d.core.params import Params
from flock3d.flock import Flock
from flock3d.scene import Scene

__all__ = ["FixedStepClock", "Session"]


@dataclass
class FixedStepClock:
    """Turns elapsed real time into a whole number of fixed simulation steps.

    Simulated time advances by ``dt`` per step whatever the frame rate; real time
    left over carries into the next frame. When stepping would take more than
    ``budget`` seconds of a frame, the excess is dropped, so a machine that cannot
    keep up slows the simulation down (``real_time_factor`` < 1) instead of
    falling ever further behind.
    """

    budget: float = 0.03
    """Seconds of each frame that stepping may use."""
    max_lag: float = 0.25
    """Real time is never carried over beyond this many seconds."""
    _carry: float = 0.0
    _step_cost: float = 1e-4
    _real: float = 0.0
    _simulated: float = 0.0

    def steps_due(self, real_elapsed: float, dt: float, time_scale: float = 1.0) -> int:
        """Steps to run now for ``real_elapsed`` seconds of wall time at ``time_scale``."""
        self._carry = min(
            self._carry + max(real_elapsed, 0.0) * time_scale, self.max_lag * max(time_scale, 1.0)
        )
        wanted = int(self._carry / dt)
        affordable = max(1, int(self.budget / self._step_cost))
        steps = min(wanted, affordable)
        self._carry = 0.0 if steps < wanted else self._carry - steps * dt
        self._real += real_elapsed * time_scale
        self._simulated += steps * dt
        return steps

    def record_step_cost(self, seconds: float, steps: int) -> None:
        """Tell the clock how long ``steps`` steps took (a moving average)."""
        if steps > 0:
            self._step_cost = 0.8 * self._step_cost + 0.2 * max(seconds / steps, 1e-7)

    def real_time_factor(self) -> float:
        """Simulated time / (scaled) real time since the last call; 1 when keeping up."""
        factor = self._simulated / self._real if self._real > 0 else 1.0
        self._real = self._simulated = 0.0
        return factor

    def reset(self) -> None:
        self._carry = 0.0


class Session:
    """A scene being watched: the flock, pausing, stepping, and live parameter edits."""

    def __init__(self, scene: Scene) -> None:
        self.scene = scene
        self.seed = scene.seed
        self.flock = Flock.from_scene(scene)
        self.paused = False
        self.time_scale = 1.0
        self.clock = FixedStepClock()
        self.steps_per_second = 0.0

    @property
    def params(self) -> Params:
        return self.flock.params

    # -- edits between steps ------------------------------------------------------------

    def set_param(self, field: str, value) -> Params:
        """Change one parameter of the running flock (no reset), keeping the others valid.

        Lowering the view distance below the separation distance lowers that too,
        and raising min_speed above max_speed raises max_speed (and the reverse);
        ``count`` re-spawns the flock; ``attractor_weight`` sets every attractor's weight
        and ``path_weight`` the path's. Raises ValueError for an invalid value.
        """
        if field == "count":
            return self.respawn(int(value))
        p = self.params
        if field == "attractor_weight":  # one weight for every attractor
            changes = {"attractors": tuple(a._replace(weight=value) for a in p.attractors)}
        elif field == "path_weight":
            changes = {"path": p.path._replace(weight=value) if p.path else None}
        else:
            changes = {field: value}
        if field == "view_distance" and value < p.separation_distance:
            changes["separation_distance"] = value
        elif field == "separation_distance" and value > p.view_distance:
            changes["view_distance"] = value
        elif field == "min_speed" and value > p.max_speed:
            changes["max_speed"] = value
        elif field == "max_speed" and value < p.min_speed:
            changes["min_speed"] = value
        self.flock.params = p.replace(**changes)
        return self.flock.params

    def load(self, scene: Scene) -> None:
        """Start watching another scene."""
        self.scene = scene
        self.seed = scene.seed
        self.flock = Flock.from_scene(scene)
        self.clock.reset()

    def reset(self) -> None:
        """Start over from the same seed, keeping the current parameters."""
        self.flock = Flock(self.params, self.seed)
        self.clock.reset()

    def reseed(self) -> int:
        """Start over from the next seed; returns it."""
        self.seed += 1
        self.reset()
        return self.seed

    def respawn(self, count: int) -> Params:
        """A new flock of ``count`` boids with the current parameters (same seed)."""
        self.flock = Flock(self.params.replace(count=count), self.seed)
        self.clock.reset()
        return self.params

    def current_scene(self) -> Scene:
        """The scene as it is now (current parameters and seed), e.g. to save it."""
        return self.scene.replace(params=self.params, seed=self.seed)

    # -- time ---------------------------------------------------------------------------

    def advance(self, real_elapsed: float) -> int:
        """Run the steps due after ``real_elapsed`` seconds of wall time; returns how many."""
        if self.paused:
            self.clock.steps_due(0.0, self.params.dt)
            return 0
        steps = self.clock.steps_due(real_elapsed, self.params.dt, self.time_scale)
        if steps:
            start = time.perf_counter()
            self.flock.step(steps)
            self.clock.record_step_cost(time.perf_counter() - start, steps)
        return steps

    def single_step(self) -> None:
        """One step, whether paused or not."""
        self.flock.step(1)
