"""`flock3d render` at the simulation's pace, --start, fast-start MP4s, and outputs that cannot be written."""

import os
import re

import imageio.v2 as imageio
import numpy as np
import pytest
from helpers import altered_copy, assert_clean_failure, flock3d, small_recording

pytestmark = pytest.mark.gui

SMALL = ("--size", "160x120", "--no-progress")


def rendered(*args) -> str:
    out = flock3d("render", *args)
    if out.returncode != 0 and "needs EGL" in out.stderr:
        pytest.skip("no EGL/OpenGL for offscreen rendering here")
    assert out.returncode == 0, out.stderr
    return out.stdout


def simulated_time(stdout: str) -> float:
    return float(re.search(r"t = ([0-9.]+) s", stdout).group(1))


@pytest.mark.slow
def test_frames_are_taken_at_the_simulations_pace(tmp_path):
    # The Couzin torus steps 0.1 s at a time: at 30 fps frame 60 shows t = 59/30 s
    # (the nearest step), not 59 steps = 5.9 s as a step per frame would.
    start = ("--start", "0")  # a still's frames counted from the spawn
    stdout = rendered(
        "couzin/torus", "--out", tmp_path / "f.png", "--frames", "60", "--fps", "30", *start, *SMALL
    )
    assert abs(simulated_time(stdout) - 59 / 30) <= 0.05 + 1e-9
    # The default scene steps 1/60 s: frame 31 at 15 fps is t = 2 s.
    stdout = rendered("default", "--out", tmp_path / "g.png", "--frames", "31", "--fps", "15", *start, *SMALL)
    assert simulated_time(stdout) == pytest.approx(2.0, abs=1 / 120)


@pytest.mark.slow
def test_a_still_of_a_scene_shows_its_chosen_moment_not_its_spawn(tmp_path):
    # Unset, 5 s in; view.start moves the still, and a video's beginning with it.
    stdout = rendered("default", "--out", tmp_path / "a.png", *SMALL)
    assert simulated_time(stdout) == pytest.approx(5.0, abs=1 / 120)
    stdout = rendered("default", "--out", tmp_path / "b.png", "--set", "view.start=3", *SMALL)
    assert simulated_time(stdout) == pytest.approx(3.0, abs=1 / 120)
    stdout = rendered(
        "default", "--out", tmp_path / "c.mp4", "--set", "view.start=1", "--frames", "3", *SMALL
    )
    assert "showing simulated t = 1.00 to" in stdout


def test_mp4_duration_equals_the_simulated_time_and_starts_fast(tmp_path):
    movie = tmp_path / "m.mp4"
    stdout = rendered("default", "--out", movie, "--start", "2", "--frames", "45", "--fps", "15", *SMALL)
    start, end = map(float, re.search(r"simulated t = ([0-9.]+) to ([0-9.]+) s", stdout).groups())
    assert (start, end) == (2.0, 5.0)
    reader = imageio.get_reader(movie)
    frames = sum(1 for _ in reader)
    assert reader.get_meta_data()["fps"] == 15.0 and frames == 45
    assert frames / 15.0 == pytest.approx(end - start)  # one second of video per simulated second
    data = movie.read_bytes()
    assert 0 <= data.find(b"moov") < data.find(b"mdat")  # the index first: plays while downloading


def test_start_simulates_before_drawing(tmp_path):
    stdout = rendered("default", "--out", tmp_path / "late.png", "--start", "12.5", *SMALL)
    assert simulated_time(stdout) == pytest.approx(12.5, abs=1 / 120)


def test_a_still_of_a_recording_is_its_last_frame_or_the_one_at_start_or_the_one_named(tmp_path):
    traj = small_recording(tmp_path / "r.h5", frames=7, every=6)  # t = 0, 0.1, ..., 0.6
    assert simulated_time(rendered(traj, "--out", tmp_path / "a.png", *SMALL)) == pytest.approx(0.6)
    assert simulated_time(
        rendered(traj, "--out", tmp_path / "b.png", "--start", "0.3", *SMALL)
    ) == pytest.approx(0.3)
    assert simulated_time(
        rendered(traj, "--out", tmp_path / "c.png", "--frames", "7", *SMALL)
    ) == pytest.approx(0.6)
    out = flock3d("render", traj, "--out", tmp_path / "d.png", "--frames", "8", *SMALL)
    assert_clean_failure(out, "--frames 8: a still of this recording is one of its frames 1 to 7")
    assert not (tmp_path / "d.png").exists()


@pytest.mark.slow
def test_a_trajectory_plays_at_its_recorded_pace(tmp_path):
    for every, fps, frames in ((4, 15.0, 30), (60, 30.0, 60)):
        traj = tmp_path / f"every{every}.h5"
        assert (
            flock3d("run", "small-arena", "--steps", "120", "--every", str(every), "--out", traj).returncode
            == 0
        )
        movie = tmp_path / f"every{every}.mp4"
        stdout = rendered(traj, "--out", movie, *SMALL)
        reader = imageio.get_reader(movie)
        count = sum(1 for _ in reader)
        # 120 steps of 1/60 s = 2 s recorded: 2 s of video at either rate, and it says so.
        assert reader.get_meta_data()["fps"] == fps and count == frames, (every, count)
        assert "showing simulated t = 0.00 to 2.00 s" in stdout


@pytest.mark.slow
def test_the_span_stated_is_the_span_recorded(tmp_path):
    # A minute at 10 frames per simulated second: 601 frames, the last at t = 60.
    traj = small_recording(tmp_path / "minute.h5", count=10, frames=601, every=6)
    movie = tmp_path / "minute.mp4"
    stdout = rendered(traj, "--out", movie, "--fps", "2", *SMALL)
    assert "wrote" in stdout and "120 frames" in stdout and "showing simulated t = 0.00 to 60.00 s" in stdout
    assert sum(1 for _ in imageio.get_reader(movie)) == 120  # not 121, a frame past the end
    # More frames asked than the minute fills: the ones it holds, and the line says so.
    stdout = rendered(traj, "--out", movie, "--fps", "2", "--frames", "1000", *SMALL)
    assert "120 frames" in stdout and "the recording holds 120 of the 1,000 frames asked" in stdout
    # Video frame 31 at 15 fps shows t = 2 s, and frame 1 of --start 59.5 t = 59.5 s.
    png = tmp_path / "f.png"
    assert simulated_time(rendered(traj, "--out", png, "--frames", "31", "--fps", "15", *SMALL)) == 2.0
    assert simulated_time(rendered(traj, "--out", png, "--frames", "1", "--start", "59.5", *SMALL)) == 59.5
    last = rendered(traj, "--out", png, *SMALL)
    assert simulated_time(last) == 60.0 and "recorded frame 601 of 601" in last  # by default the last


@pytest.mark.slow
@pytest.mark.parametrize("every", [np.int64(2**63 - 1), np.uint64(2**64 - 1)])
def test_a_huge_every_attribute_does_not_change_the_schedule(tmp_path, every):
    # Frames are scheduled by their recorded times; `every` made the render run for ever.
    good = small_recording(tmp_path / "good.h5", frames=7, every=6)  # 0.6 s at 10 frames/s

    def huge(f):
        f["parameters/flock3d"].attrs["every"] = every

    traj = altered_copy(good, tmp_path / "every.h5", huge)
    stdout = flock3d("render", traj, "--out", tmp_path / "e.mp4", *SMALL).stdout
    assert "6 frames" in stdout and "at 10 fps, showing simulated t = 0.00 to 0.60 s" in stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    "where, value, problem, suffix",
    [
        ("orientation", np.nan, "orientations that are not unit quaternions", ".mp4"),
        ("orientation", 1e308, "orientations that are not unit quaternions", ".png"),
        ("position", 1e308, "positions that are NaN, infinite or beyond 1e+15", ".mp4"),
        ("position", -np.inf, "positions that are NaN, infinite or beyond 1e+15", ".png"),
        ("velocity", np.nan, "velocities that are NaN, infinite or beyond 1e+15", ".mp4"),
    ],
)
def test_frames_that_cannot_be_drawn_are_one_line_before_anything_is_drawn(
    tmp_path, where, value, problem, suffix
):
    # Each kind of bad value, each in a video or a still (a render process each: seconds).
    good = small_recording(tmp_path / "good.h5", frames=7, every=6)

    def spoil(f):
        f[f"particles/flock/{where}/value"][4, 3] = value

    traj = altered_copy(good, tmp_path / "bad.h5", spoil)
    out = tmp_path / f"bad{suffix}"
    result = flock3d("render", traj, "--out", out, *SMALL, *(("--frames", "5") if suffix == ".png" else ()))
    # counted from 1, as --frames 5 asks for the frame it names
    assert_clean_failure(
        result, f"{traj}: recorded frame 5 of 7 (t = 0.4 s) cannot be drawn: it holds {problem}"
    )
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr  # no RuntimeWarning either
    assert not out.exists()
    if suffix == ".mp4":  # the frames before it still render
        assert "4 frames" in rendered(traj, "--out", tmp_path / "before.mp4", "--frames", "4", *SMALL)


@pytest.mark.parametrize(
    "out, extra, message",
    [
        ("/proc/f.mp4", (), "/proc/f.mp4: cannot write in /proc ("),  # told before anything is drawn
        ("x.png", ("--fps", "1e-9"), "--fps: must be from 1 to 240"),
        ("x.png", ("--frames", "1000000000"), "at most 100,000 frames"),
        ("x.mp4", ("--start", "1e12"), "more than the 10,000,000 a render may take"),
        ("x.mp4", ("--start", "nan"), "--start: must be a finite number"),
        ("x.png", ("--set", "view.camera_distance=1e-300"), "view.camera_distance = 1e-300 cannot be drawn"),
        ("x.png", ("--set", "arena.radius=1e-300"), "arena.radius = 1e-300 cannot be drawn"),
        (
            "x.mp4",
            ("--size", "161x120"),
            "--size: a video's width and height must be even (yuv420p), got 161x120",
        ),
        ("x.mp4", ("--size", "8192x8192"), "--size: 8192x8192 is more than an H.264 video may hold"),
    ],
)
def test_outputs_and_numbers_that_cannot_work_fail_cleanly(tmp_path, out, extra, message):
    result = flock3d("render", "default", "--out", tmp_path / out if not out.startswith("/") else out, *SMALL,
                     *extra)  # fmt: skip
    assert_clean_failure(result, message)
    assert "wrote" not in result.stdout
    assert result.stderr.strip().splitlines()[-1].startswith(("flock3d render: ", "flock3d render: error:"))


def test_a_still_has_the_size_asked_odd_sides_too_and_a_video_loses_an_odd_row(tmp_path):
    from flock3d.io.video import write_video

    rendered("default", "--out", tmp_path / "odd.png", "--size", "161x121", "--start", "0", "--no-progress")
    image = imageio.imread(tmp_path / "odd.png")
    assert image.shape[:2] == (121, 161)
    assert image.reshape(-1, image.shape[-1]).std(axis=0).max() > 5  # drawn, not blank
    # A window of odd size records a video one row or column smaller (players want even sides).
    frames = [np.full((121, 161, 3), 40 * k, np.uint8) for k in range(3)]
    assert write_video(tmp_path / "odd.mp4", frames, fps=10, progress=False) == (3, tmp_path / "odd.mp4")
    reader = imageio.get_reader(tmp_path / "odd.mp4")
    assert reader.get_meta_data()["size"] == (160, 120)
    assert [int(round(f.mean())) for f in reader] == pytest.approx([0, 40, 80], abs=3)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full to stand for a full disk")
@pytest.mark.parametrize("name", ["full.png", "full.mp4"])
def test_a_full_disk_fails_cleanly(tmp_path, name):
    out = tmp_path / name
    out.symlink_to("/dev/full")  # every write fails with ENOSPC, as on a full disk
    result = flock3d("render", "default", "--out", out, "--frames", "3", *SMALL)
    assert_clean_failure(result, str(out), "No space left on device")
    assert len(result.stderr.strip().splitlines()) == 1
    assert "wrote" not in result.stdout


@pytest.mark.parametrize("axis", [(0.0, 0.0, 1.0), (1.0, 0.0, 0.0), (0.0, -1.0, 0.0), (0.6, 0.48, -0.64)])
def test_the_axis_camera_looks_down_the_axis_a_mill_turns_about(axis):
    """A ring of boids circling ``axis``: the camera ends looking along it, from its upper end."""
    from types import SimpleNamespace

    from flock3d.core.state import state_from_arrays
    from flock3d.look.camera import view_direction
    from flock3d.viewer.offscreen import OffscreenRenderer

    n = np.asarray(axis) / np.linalg.norm(axis)
    u = np.cross(n, [0.3, 0.5, 0.8])
    u /= np.linalg.norm(u)
    w = np.cross(n, u)
    angles = np.linspace(0, 2 * np.pi, 40, endpoint=False)[:, None]
    positions = 10.0 * (np.cos(angles) * u + np.sin(angles) * w) + [3.0, -2.0, 1.0]
    velocities = 4.0 * (-np.sin(angles) * u + np.cos(angles) * w)  # counter-clockwise about n
    state = state_from_arrays(positions, velocities)
    camera = OffscreenRenderer.__new__(OffscreenRenderer)  # the camera's arithmetic, no OpenGL
    camera.camera, camera._axis = SimpleNamespace(azimuth=30.0, elevation=20.0), None
    for _ in range(3):
        camera._look_down_the_axis(state)
    seen = view_direction(camera.camera.azimuth, camera.camera.elevation)
    expected = n if n[1] >= 0 else -n
    np.testing.assert_allclose(seen, expected, atol=2e-3)
