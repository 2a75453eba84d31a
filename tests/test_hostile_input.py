"""Input that used to hang, eat memory or crash: each ends in one line on stderr and exit 2.

Every case runs the command as a user would, in a subprocess, and checks that nothing
already written is lost.
"""

import os
import subprocess

import pytest
from helpers import assert_clean_failure, flock3d

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
