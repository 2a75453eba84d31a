"""The default scene stays alive (benchmarks/liveliness.py, on five simulated minutes).

Its rules alone freeze a flock into one block at P = 1.00 within two minutes; the scene's
wander and hawk keep it turning, splitting and merging, and its camera keeps it in frame.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import liveliness  # noqa: E402  (benchmarks/liveliness.py: the same measurements, printed)
from helpers import once_per_run  # noqa: E402

SECONDS = 300  # the rules alone freeze from about 90 s on; splits come every minute or two


@pytest.fixture(scope="module")
def alive(tmp_path_factory):
    """The benchmark's measurements of the default scene, in a process of its own: vispy binds
    one backend a process, and the window tests use Qt in this one. Without EGL the camera's
    properties are left out (None)."""
    command = [sys.executable, str(BENCHMARKS / "liveliness.py"), "--seconds", str(SECONDS), "--every", "0.5"]

    def make(path: Path) -> None:
        run = subprocess.run([*command, "--json"], capture_output=True, text=True, timeout=300)
        if run.returncode != 0 and "needs EGL" in run.stderr:
            command.append("--no-camera")
            run = subprocess.run([*command, "--json"], capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        path.write_text(run.stdout.strip().splitlines()[-1])

    return json.loads(once_per_run(tmp_path_factory, "liveliness.json", make).read_text())


@pytest.mark.slow
def test_the_default_flock_never_freezes_turns_every_minute_and_splits(alive):
    assert alive["seconds"] == pytest.approx(SECONDS)
    assert alive["calm_s"] <= liveliness.CALM_LIMIT_S
    assert len(alive["turns_per_minute"]) == SECONDS // 60
    assert min(alive["turns_per_minute"]) >= liveliness.TURNS_PER_MINUTE
    assert alive["split"] >= liveliness.SPLIT_LIMIT
    # Still a flock, not a swarm: ordered on the whole.
    assert alive["mean_polarization"] > 0.5


@pytest.mark.slow
@pytest.mark.gui
def test_the_default_camera_frames_the_flock_with_birds_large_enough_to_see(alive):
    if alive["framed"] is None:
        pytest.skip("no EGL/OpenGL for the viewer's camera here")
    assert alive["framed"] >= liveliness.FRAMED_LIMIT
    assert alive["pixels"] >= liveliness.PIXELS_LIMIT
    assert alive["failures"] == []


def test_a_turn_is_a_heading_change_of_ninety_degrees_within_the_window():
    dt = 0.5
    t = np.arange(0, 60, dt)
    # Turning steadily at 40 degrees/s, 20 a sample: 90 degrees passed every 2.5 s, each counted once.
    angle = np.radians(40.0 * t)
    steady = np.c_[np.cos(angle), np.sin(angle), np.zeros_like(t)]
    np.testing.assert_allclose(liveliness.turn_times(steady, dt), np.arange(1, 24) * 2.5)
    # Turning at 6 degrees/s: 90 degrees take 15 s, longer than the window: no turn.
    slow = np.radians(6.0 * t)
    drifting = np.c_[np.cos(slow), np.sin(slow), np.zeros_like(t)]
    assert len(liveliness.turn_times(drifting, dt)) == 0
    assert len(liveliness.turn_times(np.tile([1.0, 0.0, 0.0], (len(t), 1)), dt)) == 0


def test_the_longest_calm_stretch_is_the_longest_run():
    assert liveliness.longest_run(np.array([1, 1, 0, 1, 1, 1, 0, 1], bool)) == 3
    assert liveliness.longest_run(np.zeros(5, bool)) == 0
