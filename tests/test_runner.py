"""How long a headless run is and how often it records: closed forms of the runner's rules."""

import pytest

from flock3d.runner import FRAME_INTERVAL, MAX_STEPS, default_every, steps_for


def test_a_span_of_simulated_time_is_the_fewest_steps_that_cover_it():
    assert steps_for(0.07, 0.01) == 7  # 0.07 / 0.01 is 7.000000000000001: not 8
    assert steps_for(1.0, 1 / 60) == 60
    assert steps_for(10.0, 0.1) == 100 and steps_for(0.25, 0.1) == 3  # 2.5 steps: the third covers it
    assert steps_for(MAX_STEPS * 0.5, 0.5) == MAX_STEPS
    with pytest.raises(ValueError, match=r"^1 s at sim\.dt = 1e-300 is more than the 1,000,000,000 steps"):
        steps_for(1.0, 1e-300)
    with pytest.raises(ValueError, match="more than the 1,000,000,000 steps a run may take"):
        steps_for(float("inf"), 0.1)


def test_a_recording_takes_a_frame_every_frame_interval_of_simulated_time():
    assert FRAME_INTERVAL == 0.1
    assert default_every(1 / 60) == 6 and default_every(0.1) == 1 and default_every(0.01) == 10
    assert default_every(1.0) == 1  # steps longer than the interval: every step
    assert default_every(1e-320) == MAX_STEPS  # however small the step, a whole number in range
