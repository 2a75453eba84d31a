"""Input that used to hang, eat memory or crash: each ends in one line on stderr and exit 2.

Every case runs the command as a user would, in a subprocess, and checks that nothing
already written is lost.
"""

import os
import resource
import signal
import subprocess
import sys

import numpy as np
import pytest
from helpers import assert_clean_failure, flock3d

from flock3d.io import Trajectory
from flock3d.scene import SceneError, load_scene, parse_scene
from flock3d.scene.scene import MAX_SCENE_BYTES


def assert_one_line_failure(out: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit status 2, no traceback, and exactly one line on stderr holding the fragments."""
    assert_clean_failure(out, *fragments)
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr


# -- scene files that are not scene files ---------------------------------------------------


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_check_refuses_a_device_instead_of_reading_it_forever(device):
    if not os.path.exists(device):
        pytest.skip(f"no {device} here")
    out = flock3d("check", device, timeout=60)
    assert_one_line_failure(out, f"{device}: not a regular file")


def test_check_refuses_a_fifo_instead_of_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "scene.toml"
    os.mkfifo(fifo)
    out = flock3d("check", fifo, timeout=60)
    assert_one_line_failure(out, f"{fifo}: not a regular file")
    assert_one_line_failure(flock3d("run", fifo, "--steps", "1", timeout=60), "not a regular file")


def test_scene_files_over_the_stated_size_are_refused(tmp_path):
    big = tmp_path / "big.toml"
    big.write_text("# padding\n" * (MAX_SCENE_BYTES // 10 + 1))
    out = flock3d("check", big)
    assert_one_line_failure(out, f"{big}: {big.stat().st_size:,} bytes", f"at most {MAX_SCENE_BYTES:,}")
    # Just under the bound, the same comments are a valid (empty-looking) scene.
    fits = tmp_path / "fits.toml"
    fits.write_text('name = "padded"\n' + "# padding\n" * (MAX_SCENE_BYTES // 10 - 2))
    assert load_scene(fits).name == "padded"


@pytest.mark.parametrize(
    "text",
    [
        "a = " + "[" * 5000 + "]" * 5000,  # arrays: the parser's own recursion
        "a = " + "{b = " * 3000 + "1" + "}" * 3000,  # inline tables
        "[seed" + ".a" * 20000 + "]",  # tables the parser builds without recursing
        "name" + ".a" * 20000 + " = 1",
        "[arena]\nradius = " + "[" * 50 + "]" * 50,  # parses, but deeper than any scene
    ],
    ids=["arrays", "inline-tables", "table-header", "dotted-key", "moderate"],
)
def test_deeply_nested_toml_is_one_line(tmp_path, text):
    path = tmp_path / "deep.toml"
    path.write_text(text)
    with pytest.raises(SceneError, match="nested too deeply"):
        load_scene(path)
    assert_one_line_failure(flock3d("check", path), f"{path}: arrays or tables nested too deeply")


def test_deeply_nested_set_and_param_values_are_one_line(tmp_path):
    deep = "[" * 5000 + "]" * 5000
    out = flock3d("run", "default", "--steps", "1", "--set", f"flock.count={deep}")
    assert_one_line_failure(out, "--set flock.count: arrays or tables nested too deeply")
    out = flock3d("sweep", "default", "--param", f"rules.alignment={deep}", "--steps", "2",
                  "--out", tmp_path / "s.csv")  # fmt: skip
    assert_one_line_failure(out, "--param rules.alignment:", "nested too deeply")
    assert not (tmp_path / "s.csv").exists()


def test_legitimate_nesting_is_still_read():
    scene = parse_scene("[path]\npoints = [[0, 0, 0], [5, 0, 0], [0, 5, 0]]\n"
                        "[wind]\ngradient = [[0, 1, 0], [0, 0, 0], [0, 0, 0]]\n")  # fmt: skip
    assert len(scene.params.path.points) == 3 and scene.params.wind_gradient[0][1] == 1


# -- a disk that fills up during `flock3d run --out` --------------------------------------------


def _file_size_limit(limit: int):
    def apply():  # in the child: writes past `limit` bytes fail with EFBIG instead of killing it
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_full_disk_stops_the_run_and_keeps_every_frame_written(tmp_path):
    path = tmp_path / "full.h5"
    # 300 boids: a block of 145 frames is ~3.5 MB, so about two blocks fit in 12 MB.
    args = ["run", "default", "--set", "flock.count=300", "--steps", "3000", "--out", str(path)]
    out = subprocess.run(
        [sys.executable, "-m", "flock3d.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_file_size_limit(12_000_000),
    )
    assert_one_line_failure(out, f"{path}: no room for more frames (File too large); stopped, keeping the")
    kept = int(out.stderr.split("keeping the ")[1].split(" frames")[0].replace(",", ""))
    assert kept > 100
    with Trajectory(path) as traj:  # the file is whole: every frame written is there and sound
        assert traj.n_frames == kept
        np.testing.assert_array_equal(traj.steps, np.arange(kept))
        assert np.all(np.isfinite(traj.frame(-1).positions))
    assert path.stat().st_size <= 12_000_000


@pytest.mark.skipif(os.geteuid() != 0 or sys.platform != "linux", reason="mounting a tmpfs needs root")
@pytest.mark.parametrize("reserve", [True, False], ids=["reserved", "without-fallocate"])
def test_a_really_full_file_system_keeps_every_frame_written(tmp_path, reserve):
    # A real ENOSPC, from a small tmpfs; without posix_fallocate (macOS, some file systems)
    # the writer rolls the failed block back instead.
    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", mount]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        path = mount / "full.h5"
        code = "import os, sys\n" + ("" if reserve else "del os.posix_fallocate\n")
        code += "from flock3d.cli import main\nsys.exit(main(sys.argv[1:]))\n"
        args = ["run", "default", "--set", "flock.count=300", "--steps", "3000", "--out", str(path)]
        out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
        assert_one_line_failure(out, "no room for more frames (No space left on device); stopped, keeping")
        kept = int(out.stderr.split("keeping the ")[1].split(" frames")[0].replace(",", ""))
        with Trajectory(path) as traj:
            assert traj.n_frames == kept > 100
            np.testing.assert_array_equal(traj.steps, np.arange(kept))
    finally:
        subprocess.run(["umount", mount])


# -- sizes stated up front ------------------------------------------------------------------


def test_runs_beyond_the_stated_length_are_refused():
    out = flock3d("run", "default", "--steps", "99999999999999999999")
    assert_one_line_failure(out, "--steps: must be at most 1,000,000,000 steps")
    out = flock3d("run", "default", "--seconds", "1000", "--set", "sim.dt=1e-8")
    assert_one_line_failure(
        out, "--seconds 1000 at sim.dt = 1e-08 is 100,000,000,000 steps, more than the 1,000,000,000"
    )
    out = flock3d("sweep", "default", "--param", "x=1,2", "--steps", "1000000001", "--out", "x.csv")
    assert_one_line_failure(out, "--steps: must be at most 1,000,000,000 steps")


def test_sweeps_beyond_the_stated_size_are_refused_before_anything_is_built(tmp_path):
    out_path = tmp_path / "s.csv"
    cases = [
        (["--param", "rules.alignment=0:10:1000000000"], "1,000,000,000 values; a sweep may hold at most"),
        (["--param", "rules.alignment=0:10:1000", "--param", "rules.cohesion=0:1:1000"],
         "1,000,000 runs (1000 x 1000 values, --repeats 1) is more than the 100,000"),
        (["--param", "rules.alignment=0:10:10", "--repeats", "100000000000000"], "is more than the 100,000"),
    ]  # fmt: skip
    for params, message in cases:
        out = flock3d("sweep", "default", *params, "--steps", "10", "--out", out_path, timeout=120)
        assert_one_line_failure(out, message)
        assert not out_path.exists()


def test_flock3d_alone_prints_help():
    out = flock3d()
    assert out.returncode == 0 and not out.stderr
    assert "usage: flock3d" in out.stdout and all(c in out.stdout for c in ("run", "view", "check"))


def test_usage_errors_are_one_line():
    assert_one_line_failure(flock3d("run", "default", "--steps", "-5"), "must be >= 0", "flock3d run --help")
    assert_one_line_failure(flock3d("fly"), "invalid choice: 'fly'")
