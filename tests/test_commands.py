"""The command line end to end: check, run --out, metrics, render, and bad input."""

import csv
import re
import signal
import time

import imageio.v2 as imageio
import numpy as np
import pytest
from helpers import assert_clean_failure, assert_one_line_failure, flock3d, foreground_mask

from flock3d import Flock, metrics
from flock3d.io import RecordingError, Trajectory
from flock3d.scene import resolve_scene, shipped_scenes

from conftest import first_line

BROKEN = {
    "syntax.toml": ('name = "x"\n[arena]\nradius = \n', "TOML syntax error at line 3, column"),
    "unknown.toml": (
        "[perception]\nfvo = 100\n",
        "perception.fvo: unknown key; did you mean perception.fov?",
    ),
    "type.toml": ('[flock]\nmin_speed = "fast"\n', "flock.min_speed must be a number (got 'fast')"),
    "range.toml": ("[flock]\nmax_turn_rate = -1\n", "flock.max_turn_rate must be > 0 (got -1)"),
    "empty.toml": ("", "empty file"),
    "one-table.toml": (  # tomllib says "Cannot declare ('objects',) twice"
        '[objects]\nshape = "sphere"\nradius = 1.0\n[objects]\nshape = "box"\n',
        "TOML syntax error at line 4, column 9: [objects] is declared twice; several [objects] tables are "
        "written [[objects]], one per item",
    ),
    "twice.toml": (
        "[arena]\nradius = 5.0\n[arena]\n",
        "TOML syntax error at line 3, column 7: [arena] is declared twice",
    ),
    "garbage.toml": (bytes(range(256)), "not UTF-8 text"),
    "buried.toml": (
        "[flock]\ninit_radius = 2.0\n[[obstacles]]\ncenter = [0.0, 0.0, 0.0]\nradius = 5.0\n",
        "obstacles[0] with its margin covers the whole initial ball of radius 2",
    ),
    "couzin-wind.toml": (
        'model = "couzin"\n[wind]\nacceleration = [1.0, 0.0, 0.0]\n',
        "the couzin model has none",
    ),
}


def test_check_accepts_every_shipped_scene():
    out = flock3d("check", *shipped_scenes())
    assert out.returncode == 0, out.stderr
    assert out.stdout.count(": ok") == len(shipped_scenes())
    assert "warning" not in out.stderr, out.stderr  # they mean what they say


def test_check_warns_of_a_wall_too_thin_to_stop_a_move_and_an_object_no_boid_reaches(tmp_path):
    # A box arena 20 wide. The hawk moves 30 x 0.02 = 0.6 a step: a wall 0.005 thick is thinner
    # than the march's 0.6 / 64. A sphere wholly beyond the walls, and another whose path only
    # starts there, and a plane (unbounded) below: no warning for those two.
    path = tmp_path / "odd.toml"
    path.write_text(
        '[sim]\ndt = 0.02\n[arena]\nshape = "box"\nradius = 10.0\n[predators]\ncount = 1\nspeed = 30.0\n'
        '[[objects]]\nshape = "box"\nsize = [0.005, 4.0, 4.0]\nposition = [6.0, 0.0, 0.0]\n'
        '[[objects]]\nshape = "sphere"\nradius = 2.0\nposition = [0.0, 0.0, 12.5]\n'
        '[[objects]]\nshape = "sphere"\nradius = 2.0\n'
        "motion = {points = [[0.0, 0.0, 12.5], [0.0, 0.0, 0.0]], times = [0.0, 5.0]}\n"
        '[[objects]]\nshape = "plane"\nposition = [0.0, -30.0, 0.0]\n'
    )
    out = flock3d("check", path)
    assert out.returncode == 0, out.stderr
    assert f"{path}: ok" in out.stdout
    warnings = out.stderr.splitlines()
    assert len(warnings) == 2, out.stderr
    assert warnings[0].startswith(f"{path}: warning: objects[0] (box) is 0.005 thick at its thinnest")
    assert "(predators.speed 30 x dt 0.02, so 0.00937): the predators may pass through it" in warnings[0]
    assert warnings[1].startswith(f"{path}: warning: objects[1] (sphere) lies wholly outside the arena")
    assert "box 20 x 20 x 20 around (0, 0, 0)" in warnings[1]


def test_check_warns_of_a_start_beyond_the_walls_and_of_boids_starting_on_top_of_each_other(tmp_path):
    # A box 80 x 40 x 80 with a start ball of radius 30: beyond the walls at y = +-20. A sphere of
    # radius 4.499 with the margin 1.5 leaves a shell 0.001 thick of a start ball of radius 6: 400
    # boids there would share a few free points (the spawn's last resort), 0.08 apart at best.
    beyond, crowded = tmp_path / "beyond.toml", tmp_path / "crowded.toml"
    box = '[arena]\nshape = "box"\nsize = [80.0, 40.0, 80.0]\n[flock]\ncount = 400\n'
    beyond.write_text(box + "init_radius = 30.0\n")
    crowded.write_text(
        box + "init_radius = 6.0\n[avoidance]\nmargin = 1.5\n"
        '[[objects]]\nshape = "sphere"\nradius = 4.499\nposition = [0.0, 0.0, 0.0]\n'
    )
    out = flock3d("check", beyond, crowded)
    assert out.returncode == 0 and out.stdout.count(": ok") == 2, out.stderr
    assert out.stderr.splitlines() == [
        f"{beyond}: warning: the initial ball of radius 30 (init_radius) reaches beyond the arena (box 80 x "
        "40 x 80 around (0, 0, 0)): boids start outside its walls, which only steer them back; make "
        "init_radius smaller",
        f"{crowded}: warning: 400 boids start crowded in the initial ball of radius 6 (the objects and their "
        "margin leave 0.024 % of it free): about 0.082 apart, against a separation distance of 2; make "
        "init_radius larger, the flock smaller, or move the objects",
    ]
    # The flock's separation off, its one species' on: that species' distance is the one judged
    species = tmp_path / "species.toml"
    species.write_text(
        box + 'init_radius = 1.0\n[rules]\nseparation = 0.0\n[[species]]\nname = "a"\ncount = 400\n'
        "separation = 5.0\nseparation_distance = 1.5\n"
    )
    out = flock3d("check", species)
    assert out.returncode == 0 and out.stderr.splitlines() == [
        f"{species}: warning: 400 boids start crowded in the initial ball of radius 1: about 0.22 apart, "
        "against a separation distance of 1.5; make init_radius larger, the flock smaller, or move the "
        "objects"
    ], out.stderr
    roomy = tmp_path / "roomy.toml"  # a sphere of radius 4: the shell 0.5 thick is room enough
    roomy.write_text(crowded.read_text().replace("4.499", "4.0"))
    out = flock3d("check", roomy)
    assert out.returncode == 0 and out.stderr == "", out.stderr


@pytest.mark.parametrize("name", list(BROKEN))
def test_check_reports_each_broken_scene_specifically(tmp_path, name):
    content, message = BROKEN[name]
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert_clean_failure(flock3d("check", path), f"{path}: ", message)
    assert_clean_failure(flock3d("run", path, "--steps", "1"), message)


def test_check_reports_every_problem_of_every_file(tmp_path):
    for name in ("syntax.toml", "unknown.toml", "range.toml"):
        (tmp_path / name).write_text(BROKEN[name][0])
    out = flock3d(
        "check", tmp_path / "syntax.toml", "default", tmp_path / "unknown.toml", tmp_path / "range.toml"
    )
    assert_clean_failure(out, BROKEN["syntax.toml"][1], BROKEN["unknown.toml"][1], BROKEN["range.toml"][1])
    assert "default: ok" in out.stdout


def test_check_judges_rules_order_against_the_rules_given(tmp_path):
    rules = tmp_path / "mine.py"
    rules.write_text(
        "import flock3d\n\n\n@flock3d.force\n"
        "def tend(position, velocity, time):\n    return -0.01 * position\n"
    )
    scene = tmp_path / "tended.toml"
    scene.write_text('[rules]\ncombine = "chain"\norder = ["tend", "separation"]\n')
    out = flock3d("check", scene)  # as `run` without --rules: no stage is called tend
    assert_clean_failure(out, f"{scene}: rules.order names 'tend', which is no stage of this flock")
    assert len(out.stderr.splitlines()) == 1
    assert_clean_failure(flock3d("run", scene, "--steps", "1"), "rules.order names 'tend'")
    out = flock3d("check", "--rules", rules, scene, "default")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count(": ok") == 2
    scene.write_text('[rules]\ncombine = "chain"\norder = ["tend", "teleport"]\n')
    out = flock3d("check", "--rules", rules, scene)
    assert_clean_failure(
        out,
        f"{scene}: rules.order names 'teleport', which is neither a stage of this flock nor one of your "
        "rules (its stages: 'separation', 'alignment', 'cohesion', 'confinement', 'speed', 'tend')",
    )
    # A rule that a run would refuse, check refuses too.
    rules.write_text("import flock3d\n\n\n@flock3d.force\ndef tend(p, v, t):\n    raise ValueError('no')\n")
    out = flock3d("check", "--rules", rules, "default")
    assert_clean_failure(out, "flock3d check: force", "raised ValueError on a test call: no")
    assert len(out.stderr.splitlines()) == 1


def test_options_that_would_do_nothing_are_refused_in_one_line():
    assert_one_line_failure(flock3d("bench", "--after", "5"), "--after sets when --profile's second profile")
    assert_one_line_failure(
        flock3d("debug", "step", "default", "--engine", "reference"), "the reference engine generates no step"
    )
    described = " ".join(flock3d("experiment", "--help").stdout.split())  # an experiment takes no scene
    assert 'pip install "flock3d[gpu]"); default: fast' in described and "sim.engine" not in described


def test_unknown_options_and_bad_values_exit_2():
    assert_clean_failure(  # named by the command, which points to its own help
        flock3d("run", "default", "--stepz", "5"),
        "flock3d run: error: unrecognized arguments: --stepz 5 (see flock3d run --help)",
    )
    assert_clean_failure(
        flock3d("--stepz"), "flock3d: error: unrecognized option --stepz: a COMMAND comes first"
    )
    assert_clean_failure(flock3d("run", "default", "--steps", "-5"), "must be >= 0")
    assert_clean_failure(
        flock3d("run", "default", "--set", "perception.fov=999"), "perception.fov must be in (0, 360]"
    )
    assert_clean_failure(flock3d("run", "default", "--out", "/no/such/folder/x.h5"), "does not exist")
    assert_clean_failure(flock3d("run", "default", "--out", "x.txt"), "--out must end in .h5")


@pytest.mark.slow
def test_run_out_then_metrics_agree_with_metrics_in_memory(tmp_path):
    traj_path, csv_path, png_path = tmp_path / "t.h5", tmp_path / "m.csv", tmp_path / "m.png"
    out = flock3d(
        "run",
        "default",
        "--steps",
        "120",
        "--every",
        "10",
        "--seed",
        "4",
        "--out",
        traj_path,
        "--set",
        "flock.count=300",
    )
    assert out.returncode == 0, out.stderr
    assert "wrote 13 frames" in out.stdout and "steps/s" in out.stdout and "polarization" in out.stdout
    assert "(one every 10 steps)" in out.stdout  # 120 is a whole number of them: nothing left out

    out = flock3d("metrics", traj_path, "--csv", csv_path, "--plot", png_path)
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(csv_path.open()))
    assert [int(r["step"]) for r in rows] == list(range(0, 121, 10))
    assert imageio.imread(png_path).shape[0] > 100

    # The same run in memory, measured at the same steps.
    scene = resolve_scene("default", overrides=["flock.count=300"]).replace(seed=4)
    flock = Flock.from_scene(scene)
    for row in rows:
        flock.step(int(row["step"]) - flock.step_count)
        expected = metrics.summary(flock.positions, flock.velocities, scene.params.view_distance)
        for name, value in expected.items():
            assert float(row[name]) == pytest.approx(value, rel=1e-12, abs=1e-12), name
        assert float(row["time"]) == pytest.approx(flock.time)

    with Trajectory(traj_path) as traj:
        assert traj.scene == scene
        np.testing.assert_array_equal(traj.frame(-1).positions, flock.positions)


@pytest.mark.slow
def test_sigterm_leaves_a_readable_file(tmp_path, child):
    assert flock3d("run", "default", "--steps", "1").returncode == 0  # compiled: the child loads it
    path = tmp_path / "long.h5"
    process = child("run", "default", "--steps", "10000000", "--out", path)
    deadline = time.time() + 300
    while time.time() < deadline:  # wait until a block of frames reaches the disk
        time.sleep(0.5)
        # Written to a temporary file beside `path`, renamed over it when the run ends.
        if sum(f.stat().st_size for f in tmp_path.glob(f".{path.name}.*")) > 3_000_000:
            break
    else:
        pytest.fail("no block of frames written in 300 s")
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 143, stderr
    assert "stopped by SIGTERM" in stderr and "Traceback" not in stderr
    with Trajectory(path) as traj:
        assert traj.n_frames > 10
        assert traj.steps[-1] == (traj.n_frames - 1) * traj.every
        last = traj.frame(-1)
        assert np.all(np.isfinite(last.positions))
    assert f"wrote {traj.n_frames:,} frames" in stdout


@pytest.mark.slow
def test_missing_truncated_and_foreign_recordings(tmp_path):
    good = tmp_path / "good.h5"
    assert flock3d("run", "small-arena", "--steps", "50", "--out", good).returncode == 0
    truncated = tmp_path / "truncated.h5"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    text = tmp_path / "text.h5"
    text.write_text("not hdf5")
    foreign = tmp_path / "foreign.h5"
    import h5py

    with h5py.File(foreign, "w") as f:
        f["data"] = np.arange(3)
    cases = {
        tmp_path / "missing.h5": "no such file",
        truncated: "truncated HDF5 file",
        text: "not an HDF5 file",
        foreign: "not a flock3d trajectory (no particles/flock/position/value)",
    }
    for path, message in cases.items():
        with pytest.raises(RecordingError, match=re.escape(message)):
            Trajectory(path)
        assert_clean_failure(flock3d("metrics", path), f"{path}: {message}")
        assert_clean_failure(flock3d("render", path, "--out", tmp_path / "x.png"), message)


@pytest.mark.slow
def test_render_png_shows_boids(tmp_path):
    png = tmp_path / "frame.png"
    out = flock3d(
        "render",
        "default",
        "--out",
        png,
        "--size",
        "320x240",
        "--camera",
        "fixed",
        "--set",
        "view.show_arena=false",
    )
    assert out.returncode == 0, out.stderr
    image = imageio.imread(png)
    assert image.shape == (240, 320, 3)
    lit = foreground_mask(image)
    assert 200 < lit.sum() < 0.5 * lit.size  # boids, not a blank (or a filled) frame
    # With no boids, no hawk and no arena the frame is background only.
    empty = tmp_path / "empty.png"
    out = flock3d(
        "render",
        "default",
        "--out",
        empty,
        "--size",
        "320x240",
        "--set",
        "flock.count=0",
        "--set",
        "predators.count=0",
        "--set",
        "view.show_arena=false",
    )
    assert out.returncode == 0, out.stderr
    assert foreground_mask(imageio.imread(empty)).sum() == 0


@pytest.mark.slow
def test_a_travelling_open_space_group_stays_in_the_picture(tmp_path):
    # After 30 s the parallel group is ~70 units from where it started, outside the
    # arena-sized frame; the scene asks for the follow camera, and render honours it.
    def render(*camera):
        png = tmp_path / "late.png"
        args = ("couzin/highly-parallel", "--out", png, "--frames", "300", "--size", "320x240", *camera)
        out = flock3d("render", *args)
        assert out.returncode == 0, out.stderr
        return foreground_mask(imageio.imread(png))

    followed, fixed = render(), render("--camera", "fixed")
    ys, xs = np.nonzero(followed)
    assert abs(xs.mean() - 160) < 40 and abs(ys.mean() - 120) < 30  # centred
    assert followed.sum() > 5 * fixed.sum()  # and framed close, not a speck in a corner


@pytest.mark.slow
def test_render_mp4_of_a_trajectory_has_its_size_and_frame_count(tmp_path):
    traj = tmp_path / "t.h5"
    assert flock3d("run", "small-arena", "--steps", "46", "--every", "2", "--out", traj).returncode == 0
    movie = tmp_path / "t.mp4"
    out = flock3d("render", traj, "--out", movie, "--size", "320x240", "--camera", "follow")
    assert out.returncode == 0, out.stderr
    reader = imageio.get_reader(movie)
    frames = [frame for frame in reader]
    # 24 frames recorded 1/30 s apart span 23/30 s: 23 video frames at the recording's own rate.
    assert len(frames) == 23 and "showing simulated t = 0.00 to 0.77 s" in out.stdout
    assert frames[0].shape == (240, 320, 3)
    assert reader.get_meta_data()["fps"] == 30.0
    assert foreground_mask(frames[-1]).sum() > 20


@pytest.mark.slow
def test_hostile_values_fail_cleanly(tmp_path):
    huge = "1" + "0" * 400
    cases = [
        (("run", "default", "--set", f"arena.radius={huge}"), "arena.radius must be a number"),
        (
            ("run", "default", "--set", "flock.count=10000000000000"),
            "flock.count must be a whole number from 0",
        ),
        (
            ("run", "default", "--seed", "99999999999999999999999", "--steps", "1"),
            "seed must be from 0 to 2**63 - 1",
        ),
        (("run", "default", "--seconds", "1", "--set", "sim.dt=1e-320"), "is more than"),
        (("run", "default", "--out", ""), "--out needs a file name"),
        (("metrics", tmp_path / "x.h5", "--csv", "/proc/none/out.csv"), "does not exist"),
        (("render", "default", "--out", "/proc/x.png"), "x.png"),
        (("run", "scenes/../../etc/passwd"), "no such file or shipped scene"),
    ]
    assert flock3d("run", "small-arena", "--steps", "2", "--out", tmp_path / "x.h5").returncode == 0
    for args, message in cases:
        assert_clean_failure(flock3d(*args), message)


@pytest.mark.slow
def test_empty_flock_and_tiny_view_distance_run(tmp_path):
    out = flock3d(
        "run",
        "default",
        "--steps",
        "5",
        "--every",
        "1",
        "--set",
        "flock.count=0",
        "--out",
        tmp_path / "empty.h5",
    )
    assert out.returncode == 0, out.stderr
    with Trajectory(tmp_path / "empty.h5") as traj:
        assert (traj.n_frames, traj.n_boids) == (6, 0)
    out = flock3d(
        "run",
        "default",
        "--steps",
        "5",
        "--set",
        "perception.view_distance=1e-6",
        "--set",
        "rules.separation_distance=1e-6",
    )
    assert out.returncode == 0, out.stderr


@pytest.mark.slow
def test_sigint_with_a_large_every_stops_promptly(tmp_path, child):
    assert flock3d("run", "murmuration", "--steps", "1").returncode == 0  # compiled: the child loads it
    path = tmp_path / "sparse.h5"
    run = ("run", "murmuration", "--steps", "10000000", "--every", "100000", "--out", path)
    process = child(*run, env={"PYTHONUNBUFFERED": "1"})
    assert "boids" in first_line(process)  # the run's first line: stepping comes next
    time.sleep(3)  # past start-up, well inside the first frame interval
    sent = time.time()
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert time.time() - sent < 5, "the run did not stop promptly"
    assert process.returncode == 130 and "stopped by SIGINT" in stderr and "Traceback" not in stderr
    with Trajectory(path) as traj:
        assert traj.n_frames == 1  # the starting state; the next frame was 100,000 steps away


@pytest.mark.slow
def test_predators_are_recorded_and_rendered(tmp_path):
    traj = tmp_path / "hunt.h5"
    assert (
        flock3d("run", "features/predators", "--steps", "20", "--every", "10", "--out", traj).returncode == 0
    )
    with Trajectory(traj) as t:
        assert t.n_predators == 3 and t.frame(-1).predator_positions.shape == (3, 3)
        assert np.all(np.isfinite(t.frame(-1).predator_positions))
    png = tmp_path / "hunt.png"
    out = flock3d("render", traj, "--out", png, "--size", "320x240", "--set", "x=1")
    assert_clean_failure(out, "--set applies to scenes, not to recorded trajectories")
    out = flock3d("render", traj, "--out", png, "--size", "320x240", "--seed", "3", "--engine", "gpu")
    assert_clean_failure(out, "--seed, --engine apply to scenes, not to recorded trajectories")
    assert flock3d("render", traj, "--out", png, "--size", "320x240").returncode == 0
    image = imageio.imread(png)
    red = (image[..., 0] > 150) & (image[..., 1] < 90) & (image[..., 2] < 90)
    assert red.sum() > 5  # the predators are drawn in red


def test_run_says_when_the_last_steps_fall_short_of_a_frame(tmp_path):
    out = flock3d("run", "small-arena", "--steps", "5", "--out", tmp_path / "x.h5", "--no-progress")
    assert out.returncode == 0, out.stderr
    assert "wrote 1 frame to" in out.stdout
    assert "(one every 6 steps; the last 5 steps, short of a frame, are not recorded)" in out.stdout
