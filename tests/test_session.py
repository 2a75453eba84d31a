"""The viewer's session without a GUI: live edits, reset, reseed, the fixed-step clock."""

import numpy as np
import pytest
from helpers import assert_clean_failure, flock3d

from flock3d.scene import resolve_scene
from flock3d.viewer.session import FixedStepClock, Session


def session(count: int = 200) -> Session:
    return Session(resolve_scene("default", overrides=[f"flock.count={count}"]))


def test_edits_keep_the_flock_and_stay_valid():
    s = session()
    s.flock.step(10)
    flock = s.flock
    s.set_param("fov", 120.0)
    s.set_param("view_distance", 1.0)  # below separation_distance 2: that follows it down
    assert s.params.separation_distance == 1.0
    s.set_param("separation_distance", 3.0)  # above view_distance: that follows it up
    assert s.params.view_distance == 3.0
    s.set_param("min_speed", 8.0)
    assert s.params.max_speed == 8.0
    s.set_param("max_speed", 1.0)
    assert s.params.min_speed == 1.0
    assert s.flock is flock and flock.step_count == 10 and s.params.fov == 120.0
    with pytest.raises(ValueError, match="fov"):
        s.set_param("fov", 0.0)


def test_count_respawns_reset_repeats_reseed_changes():
    s = session()
    s.set_param("alignment", 1.0)
    start = s.flock.positions.copy()
    s.flock.step(30)
    s.reset()
    np.testing.assert_array_equal(s.flock.positions, start)
    assert s.params.alignment == 1.0 and s.flock.step_count == 0
    s.reseed()
    assert s.seed == 1 and not np.array_equal(s.flock.positions, start)
    s.set_param("count", 50)
    assert len(s.flock) == 50 and s.params.count == 50
    assert s.current_scene().params == s.params and s.current_scene().seed == 1


def test_clock_runs_fixed_steps_whatever_the_frame_rate():
    clock = FixedStepClock()
    dt = 1 / 60
    steps = sum(clock.steps_due(1 / 24, dt) for _ in range(240))  # 10 s at 24 fps
    assert steps == pytest.approx(600, abs=1)
    steps = sum(clock.steps_due(1 / 144, dt) for _ in range(1440))  # 10 s at 144 fps
    assert steps == pytest.approx(600, abs=1)
    assert clock.real_time_factor() == pytest.approx(1.0, abs=0.01)


def test_clock_slows_down_instead_of_falling_behind():
    clock = FixedStepClock(budget=0.02)
    clock.record_step_cost(0.01, 1)  # 10 ms a step
    for _ in range(20):
        clock.record_step_cost(0.01, 1)
    steps = [clock.steps_due(0.1, 1 / 60) for _ in range(10)]  # 6 steps due per frame
    assert max(steps) <= 2  # the budget allows two
    assert clock.real_time_factor() == pytest.approx(2 / 6, rel=0.1)


def test_pause_and_time_scale():
    s = session()
    s.paused = True
    assert s.advance(1.0) == 0
    s.single_step()
    assert s.flock.step_count == 1
    s.paused = False
    s.time_scale = 2.0
    assert s.advance(0.1) == 12


def test_view_without_a_display_says_so():
    out = flock3d("view", env={"DISPLAY": "", "WAYLAND_DISPLAY": ""})
    assert_clean_failure(out, "no display found", "flock3d render")
    assert len(out.stderr.strip().splitlines()) == 1
