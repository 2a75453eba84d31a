"""The viewer's session without a GUI: live edits, reset, reseed, the fixed-step clock."""

import time

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


def test_clock_steps_a_scene_whose_dt_is_one_second():
    # A step longer than the clock's lag cap (0.25 s) must still fall due: one step per
    # simulated second at time scale 1, whatever the frame rate.
    for fps in (10, 60, 144):
        clock = FixedStepClock()
        steps = sum(clock.steps_due(1 / fps, 1.0) for _ in range(10 * fps))  # 10 s
        assert steps == pytest.approx(10, abs=1), fps
    clock = FixedStepClock()
    assert sum(clock.steps_due(1 / 30, 1.0, time_scale=4.0) for _ in range(300)) == pytest.approx(40, abs=1)


@pytest.mark.slow
def test_a_shipped_dt_one_scene_steps_in_the_session():
    s = Session(resolve_scene("classics/perceived-centre"))
    assert s.params.dt == 1.0
    steps = sum(s.advance(1 / 60) for _ in range(60 * 5))  # 5 s of frames at 60 fps
    assert steps == pytest.approx(5, abs=1) and s.flock.step_count == steps


def wait_for(predicate, timeout: float = 120.0) -> None:
    end = time.perf_counter() + timeout
    while not predicate():
        assert time.perf_counter() < end, "timed out"
        time.sleep(0.01)


def test_the_worker_thread_steps_in_real_time_and_publishes_copies():
    s = session(300)
    s.start()
    try:
        wait_for(lambda: s.first_step_done)
        wait_for(lambda: s.snapshot().step_count > 0)
        t0, first = time.perf_counter(), s.snapshot()
        time.sleep(1.0)
        second = s.snapshot()
        simulated = second.time - first.time
        assert 0.6 < simulated / (time.perf_counter() - t0) < 1.2  # about real time
        # A snapshot is a copy: the worker never writes it again.
        frozen = second.state.positions.copy()
        time.sleep(0.2)
        np.testing.assert_array_equal(second.state.positions, frozen)
        assert second.state.positions is not s.flock.positions
        assert not np.array_equal(s.snapshot().state.positions, frozen)  # newer ones move on
        # The last step's acceleration, (v_new - v_old) / dt, comes with it.
        assert second.acceleration.shape == (300, 3) and np.abs(second.acceleration).max() > 0
        # Edits land between steps on the same flock; a respawn is a new generation.
        flock = s.flock
        s.set_param("fov", 90.0)
        assert s.snapshot().params.fov == 90.0 and s.flock is flock
        generation = s.snapshot().generation
        s.set_param("count", 40)
        snap = s.snapshot()
        assert len(snap.state) == 40 and snap.generation == generation + 1
        s.paused = True
        time.sleep(0.1)
        count = s.snapshot().step_count
        time.sleep(0.3)
        assert s.snapshot().step_count == count
        s.single_step()
        assert s.snapshot().step_count == count + 1
    finally:
        s.stop()
    assert not s.running and s.error is None


@pytest.mark.slow
def test_the_worker_keeps_dt_one_scenes_at_one_step_per_second():
    s = Session(resolve_scene("classics/screen-edge-2d"))
    s.start()
    try:
        wait_for(lambda: s.first_step_done)
        start = s.snapshot().step_count
        time.sleep(3.2)
        assert 2 <= s.snapshot().step_count - start <= 4
    finally:
        s.stop()


def test_view_with_an_unreachable_display_says_so():
    out = flock3d("view", env={"DISPLAY": ":987", "WAYLAND_DISPLAY": ""}, timeout=60)
    assert_clean_failure(out, "cannot open the display ':987'")
    assert len(out.stderr.strip().splitlines()) == 1
