"""Input that could hang, eat memory or crash: each ends in one line on stderr and exit 2.

Every case runs the command as a user would (in a process of its own where a hang must be
ended, or a log line seen as a user sees it), and checks that nothing already written is lost.
"""

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import altered_copy, assert_one_line_failure, flock3d, read_only, small_recording

from flock3d.cli import COMPILING
from flock3d.core.state import random_state
from flock3d.inference import maxent
from flock3d.io import RecordingError, Trajectory
from flock3d.scene import SceneError, load_scene, parse_scene
from flock3d.scene.scene import MAX_SCENE_BYTES

# -- scene files that are not scene files ---------------------------------------------------


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_check_refuses_a_device_instead_of_reading_it_forever(device):
    if not os.path.exists(device):
        pytest.skip(f"no {device} here")
    out = flock3d("check", device, process=True, timeout=60)  # a process: a read forever ends
    assert_one_line_failure(out, f"{device}: not a regular file")


def test_check_refuses_a_fifo_instead_of_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "scene.toml"
    os.mkfifo(fifo)
    out = flock3d("check", fifo, process=True, timeout=60)  # a process: a wait forever ends
    assert_one_line_failure(out, f"{fifo}: not a regular file")
    out = flock3d("run", fifo, "--steps", "1", process=True, timeout=60)
    assert_one_line_failure(out, "not a regular file")


def test_scene_files_over_the_stated_size_are_refused(tmp_path):
    big = tmp_path / "big.toml"
    big.write_text("# padding\n" * (MAX_SCENE_BYTES // 10 + 1))
    out = flock3d("check", big)
    assert_one_line_failure(out, f"{big}: {big.stat().st_size:,} bytes", f"at most {MAX_SCENE_BYTES:,}")
    # Just under the bound, the same comments are a valid (empty-looking) scene.
    fits = tmp_path / "fits.toml"
    fits.write_text('name = "padded"\n' + "# padding\n" * (MAX_SCENE_BYTES // 10 - 2))
    assert load_scene(fits).name == "padded"


@pytest.mark.slow
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


def test_a_key_of_thousands_of_parts_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    # tomllib takes time quadratic in a dotted key's parts: a 1 MB file of one key would take most
    # of an hour. A key of more parts than a scene can hold is refused without parsing.
    import tomllib

    parsed = []
    monkeypatch.setattr(tomllib, "loads", lambda text: parsed.append(text) or {})
    path = tmp_path / "long-key.toml"
    path.write_text('name = "long key"\n' + "seed" + ".a" * (MAX_SCENE_BYTES // 2 - 20) + " = 1\n")
    with pytest.raises(SceneError, match="nested too deeply"):
        load_scene(path)
    assert parsed == []
    # a description with a few dots on a line of its own, in a multi-line string, is still read
    monkeypatch.undo()
    path.write_text('name = "dots"\ndescription = """\nsee a.b.c.d.e.f.g.h.i.j = 1 in the notes\n"""\n')
    assert load_scene(path).name == "dots"


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


# -- scenes that `run` cannot run, which `check` must refuse as well ------------------------------

PERIODIC_GRID = (
    "must be at least 2000 in a periodic arena whose longest side is 2e+09: its grid's cells are {} wide, "
    "at most 1,000,000 along a side"
)
HOSTILE_SCENES = {
    "unknown-stage": (
        '[rules]\ncombine = "chain"\norder = ["separation", "teleport"]\n',
        "rules.order names 'teleport', which is no stage of this flock, and no rules of yours are given "
        "(its stages: 'separation', 'alignment', 'cohesion', 'confinement', 'speed')",
    ),
    "absent-stage": (  # containment is off (0) in the default scene
        '[rules]\ncombine = "chain"\norder = ["separation", "containment"]\n',
        "rules.order names 'containment', which this flock does not use: it needs arena.containment > 0 "
        "and arena.shape 'sphere' or 'box'",
    ),
    "periodic-cells": (
        '[arena]\nshape = "periodic"\nradius = 1e9\n[perception]\nview_distance = 1e-3\n'
        "[rules]\nseparation_distance = 1e-3\n",
        "perception.view_distance " + PERIODIC_GRID.format("a view distance") + " (got 0.001)",
    ),
    "vicsek-cells": (
        'model = "vicsek"\n[arena]\nradius = 1e9\n[perception]\nview_distance = 1e-3\n',
        "perception.view_distance " + PERIODIC_GRID.format("a view distance"),
    ),
    "couzin-cells": (
        'model = "couzin"\n[arena]\nshape = "periodic"\nradius = 1e9\n'
        "[zones]\nrepulsion = 1e-4\norientation_width = 0\nattraction_width = 1e-4\n",
        "zones.attraction_width must keep r_a",
    ),
    "species-total": (
        '[[species]]\nname = "a"\ncount = 60000000\n[[species]]\nname = "b"\ncount = 60000000\n',
        "species hold 120,000,000 boids in all; a flock may have at most 100,000,000",
    ),
}


def test_check_refuses_every_scene_run_refuses(tmp_path):
    paths = []
    for name, (text, message) in HOSTILE_SCENES.items():
        path = tmp_path / f"{name}.toml"
        path.write_text(text)
        paths.append(path)
        out = flock3d("check", path)
        assert out.returncode == 2 and "Traceback" not in out.stderr, (name, out.stderr)
        [line] = out.stderr.splitlines()
        assert line.startswith(f"{path}: {message}"), (name, line)
        assert_one_line_failure(flock3d("run", path, "--steps", "1", "--no-progress"), f"{path}: {message}")
    # Several files, and several problems in one file: one line each.
    both = tmp_path / "both.toml"
    both.write_text(HOSTILE_SCENES["periodic-cells"][0] + "[flock]\ncount = 10\n" + "[sim]\ndt = -1\n")
    out = flock3d("check", *paths, both)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == len(paths) + 2 and lines[-1] == f"{both}: sim.dt must be > 0 (got -1)"
    assert lines[-2].startswith(f"{both}: perception.view_distance must be at least 2000")
    assert lines[-3].startswith(f"{paths[-1]}: species hold")


@pytest.mark.parametrize(
    "command",
    [
        ["render", "--out", "x.png"],
        ["sweep", "--param", "rules.alignment=1,2", "--steps", "2", "--out", "x.csv"],
    ],
)
def test_render_and_sweep_judge_rules_order_with_the_rules_given_in_one_line(tmp_path, command):
    scene = tmp_path / "order.toml"
    scene.write_text(HOSTILE_SCENES["unknown-stage"][0])
    rules = Path(__file__).parents[1] / "examples" / "wind.py"
    out = flock3d(command[0], scene, *command[1:], "--rules", rules, cwd=tmp_path)
    assert_one_line_failure(
        out, "rules.order names 'teleport', which is neither a stage of this flock nor one of your rules"
    )


def test_rules_order_naming_a_built_in_stage_and_a_force_of_yours_alike_is_one_line(tmp_path):
    # examples/wind.py's force is named "wind", as the built-in stage this scene does not use.
    scene = tmp_path / "order.toml"
    scene.write_text('[rules]\ncombine = "chain"\norder = ["wind"]\n')
    rules = Path(__file__).parents[1] / "examples" / "wind.py"
    for command in ("check", "run"):
        out = flock3d(command, scene, "--rules", rules, cwd=tmp_path)
        assert_one_line_failure(
            out,
            "rules.order names 'wind', which is both a built-in stage and one of your rules: rename yours",
        )
    assert list(tmp_path.iterdir()) == [scene]


@pytest.mark.parametrize(
    "command, first, second",
    [(("metrics",), "--csv", "--correlation"), (("infer", "maxent"), "--csv", "--likelihood")],
    ids=["metrics", "infer"],
)
def test_two_tables_asked_into_one_file_are_refused_before_either_is_written(
    tmp_path, command, first, second
):
    recording = small_recording(tmp_path / "rec.h5")
    out = flock3d(*command, recording, first, "same.csv", second, "./same.csv", cwd=tmp_path)
    assert_one_line_failure(out, f"./same.csv: {first} and {second} name the same file; give each its own")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec.h5"]


def test_a_scene_with_several_problems_is_a_line_each_naming_the_command(tmp_path):
    scene = tmp_path / "two.toml"
    scene.write_text("[sim]\ndt = -1\n[flock]\ncount = -5\n")
    out = flock3d("run", scene, "--steps", "1", cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.splitlines() == [
        f"flock3d run: {scene}: sim.dt must be > 0 (got -1)",
        f"flock3d run: {scene}: flock.count must be a whole number from 0 to 100,000,000 (got -5)",
    ]


def test_a_recording_given_for_a_scene_is_named_as_one(tmp_path):
    recording = small_recording(tmp_path / "rec.h5")
    renamed = tmp_path / "rec.dat"
    renamed.write_bytes(recording.read_bytes())
    for args in (("run", recording), ("check", recording), ("render", renamed, "--out", tmp_path / "x.png")):
        out = flock3d(*args, cwd=tmp_path)
        assert out.returncode == 2 and "Traceback" not in out.stderr
        assert out.stderr.strip().endswith(
            f"{args[1]}: an HDF5 file (a recording?), not a scene; render, metrics, export and infer read "
            "recordings named .h5 or .hdf5"
        ), out.stderr
    assert not (tmp_path / "x.png").exists()


def test_an_export_video_or_image_given_for_a_scene_is_named_for_what_it_is(tmp_path):
    # A .glb said it held more bytes than a scene may, a .usda gave a TOML syntax error (the
    # artist's walk): each file flock3d writes is named for what it is, and no file is written.
    cases = {"flock.glb": "a glTF file (an export?)", "flock.usda": "a USD stage (an export?)",
             "flock.mp4": "a video", "flock.html": "a web page (an export?)",
             "shot.png": "an image"}  # fmt: skip
    for name, what in cases.items():
        (tmp_path / name).write_bytes(b"#usda 1.0\n" * 200_000)
        for args in (("run", name), ("render", name, "--out", "x.png"), ("export", name, "--out", "x.glb")):
            out = flock3d(*args, cwd=tmp_path)
            assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
            assert f"{name}: {what}, not a scene; a scene is a TOML file (.toml)" in out.stderr, out.stderr
    assert not (tmp_path / "x.png").exists() and not (tmp_path / "x.glb").exists()


def test_outputs_are_checked_before_any_work(tmp_path):
    recording = small_recording(tmp_path / "rec.h5")
    folder = tmp_path / "shut"
    folder.mkdir()
    cases = [
        (
            ("run", "default", "--out", recording / "x.h5"),
            f"{recording / 'x.h5'}: {recording} is not a folder",
        ),
        (("run", "default", "--out", ".h5"), ".h5: --out needs a file name before .h5"),
        (("experiment", "couzin-memory", "--quick", "--out", ""), "--out needs a folder name"),
    ]
    for args, message in cases:
        assert_one_line_failure(flock3d(*args, cwd=tmp_path), message)
    with read_only(folder):  # refused at once, not once the measurements or the runs are done
        for args in (
            ("metrics", recording, "--csv", folder / "m.csv"),
            ("experiment", "couzin-memory", "--quick", "--out", folder / "e"),
            ("sweep", "default", "--param", "rules.cohesion=0,1", "--steps", "2", "--out", folder / "s.csv"),
        ):
            assert_one_line_failure(flock3d(*args, cwd=tmp_path), f": cannot write in {folder} (")
    assert list(folder.iterdir()) == []


def test_a_read_only_output_file_is_refused_before_any_work(tmp_path):
    # It was refused only when written: after the whole metrics table, or a run's compile.
    recording = small_recording(tmp_path / "rec.h5")
    table, frames = tmp_path / "m.csv", tmp_path / "kept.h5"
    table.write_text("kept")
    frames.write_bytes(recording.read_bytes())
    for kept, args in ((table, ("metrics", recording, "--csv", table)),
                       (frames, ("run", "default", "--steps", "1", "--out", frames))):  # fmt: skip
        with read_only(kept):  # the file alone: its folder takes new files
            out = flock3d(*args, cwd=tmp_path)
        assert_one_line_failure(out, f"{kept}: is read-only; it is kept as it is (give another name")
        assert "polarization" not in out.stdout and "compiling" not in out.stderr, out.stdout
    assert table.read_text() == "kept" and frames.read_bytes() == recording.read_bytes()


def test_a_set_value_is_one_toml_value():
    out = flock3d("run", "default", "--steps", "1", "--set", "perception.fov=120\n[arena]\nradius=1e308")
    assert_one_line_failure(
        out,
        r"flock3d run: shipped:default: --set perception.fov: expected one TOML value on one line "
        r"(got '120\n[arena]\nradius=1e308')",
    )


def test_a_start_check_accepts_is_a_start_run_makes(tmp_path):
    # A sphere that leaves free only a shell 0.0055 thick of the initial ball (its radius plus
    # the margin is 14.9945): 2 of the check's 4,096 points, and about 1 draw in 1,000.
    scene = tmp_path / "shell.toml"
    scene.write_text(
        '[flock]\ncount = 200\ninit_radius = 15\n[arena]\nshape = "none"\n'
        '[[objects]]\nshape = "sphere"\nradius = 13.994517625078345\n'
    )
    assert flock3d("check", scene).returncode == 0
    out = flock3d("run", scene, "--steps", "5", "--no-progress")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    params = load_scene(scene).params
    for seed in range(3):
        positions = random_state(params, seed=seed).positions
        distance = np.linalg.norm(positions, axis=1)
        assert distance.min() >= 13.994517625078345 + params.avoidance_margin and distance.max() <= 15.0


# -- mesh files that are damaged, or name what must not be read --------------------------------


@pytest.mark.slow
def test_damaged_meshes_are_one_line_each_from_check_and_run(tmp_path):
    trimesh = pytest.importorskip("trimesh")
    pytest.importorskip("igl")
    from test_meshes import DAMAGED

    messages = {}
    for name, (write, message) in DAMAGED.items():
        write(tmp_path / name)
        messages[name] = message
    trimesh.creation.box().export(tmp_path / "box.gltf")
    text = (tmp_path / "box.gltf").read_text()
    os.mkfifo(tmp_path / "pipe.bin")  # a glTF's buffer that would block its reader forever
    (tmp_path / "pipe.gltf").write_text(text.replace(json.loads(text)["buffers"][0]["uri"], "pipe.bin"))
    messages["pipe.gltf"] = "pipe.gltf: not a mesh trimesh can read ('pipe.bin' is not a regular file)"
    messages["a\\u0000b.obj"] = "a\\x00b.obj': a file name cannot hold a NUL character"  # a TOML escape
    scenes = {}
    for k, name in enumerate(messages):
        scenes[name] = tmp_path / f"scene{k}.toml"
        scenes[name].write_text(f'[arena]\nshape = "none"\n[[objects]]\nshape = "mesh"\nfile = "{name}"\n')
    # A process: a read of the pipe that waits forever ends, and a log line is shown as a user sees it.
    out = flock3d("check", *scenes.values(), process=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    lines = [line for line in out.stderr.splitlines() if line != COMPILING]
    assert len(lines) == len(scenes), out.stderr  # one each: no warnings, no log lines
    for line, (name, path) in zip(lines, scenes.items(), strict=True):
        assert line.startswith(f"{path}: objects[0].file: ") and messages[name] in line, (name, line)
    for name in ("negative.glb", "huge.obj", "pipe.gltf", "a\\u0000b.obj"):
        out = flock3d("run", scenes[name], "--steps", "1", "--no-progress", process=True)
        assert_one_line_failure(out, f"flock3d run: {scenes[name]}: objects[0].file: ", messages[name])


# -- a disk that fills up during `flock3d run --out` --------------------------------------------


@pytest.mark.slow
def test_a_full_disk_stops_the_run_and_keeps_every_frame_written(tmp_path):
    path = tmp_path / "full.h5"
    # 300 boids: a block of 145 frames is ~3.5 MB, so about two blocks fit in 12 MB.
    args = [
        "run",
        "default",
        "--set",
        "flock.count=300",
        "--steps",
        "3000",
        "--every",
        "1",
        "--out",
        str(path),
    ]
    out = flock3d(*args, file_size=12_000_000)
    assert_one_line_failure(out, f"{path}: no room for more frames (File too large); stopped, keeping the")
    kept = int(out.stderr.split("keeping the ")[1].split(" frames")[0].replace(",", ""))
    assert kept > 100
    # An export from a scene, whose recording is its own temporary file: said of the export's
    # file, nothing kept (it said "keeping the 0 frames" of its temporary file: the artist's walk)
    html = tmp_path / "full.html"
    exported = flock3d("export", *args[1:-2], "--out", html, file_size=12_000_000)
    assert_one_line_failure(
        exported,
        f"{html}: the run's recording failed: no room for more frames (File too large); nothing written",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full.h5"]
    with Trajectory(path) as traj:  # the file is whole: every frame written is there and sound
        assert traj.n_frames == kept
        np.testing.assert_array_equal(traj.steps, np.arange(kept))
        assert np.all(np.isfinite(traj.frame(-1).positions))
    assert path.stat().st_size <= 12_000_000


@pytest.mark.skipif(os.geteuid() != 0 or sys.platform != "linux", reason="mounting a tmpfs needs root")
@pytest.mark.parametrize("reserve", [True, False], ids=["reserved", "without-fallocate"])
def test_a_really_full_file_system_keeps_every_frame_written(tmp_path, reserve):
    # A real ENOSPC, from a small tmpfs; without posix_fallocate (macOS) the writer
    # reserves the space by writing zeros.
    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", mount]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        path = mount / "full.h5"
        code = "import os, sys\n" + ("" if reserve else "del os.posix_fallocate\n")
        code += "from flock3d.cli import main\nsys.exit(main(sys.argv[1:]))\n"
        args = [
            "run",
            "default",
            "--set",
            "flock.count=300",
            "--steps",
            "3000",
            "--every",
            "1",
            "--out",
            str(path),
        ]
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
        out, "--seconds: 1000 s at sim.dt = 1e-08 is more than the 1,000,000,000 steps a run may take (1e+11"
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
        out = flock3d("sweep", "default", *params, "--steps", "10", "--out", out_path)
        assert_one_line_failure(out, message)
        assert not out_path.exists()


def test_flock3d_alone_prints_help():
    out = flock3d()
    assert out.returncode == 0 and not out.stderr
    assert "usage: flock3d" in out.stdout and all(c in out.stdout for c in ("run", "view", "check"))


def test_usage_errors_are_one_line():
    assert_one_line_failure(flock3d("run", "default", "--steps", "-5"), "must be >= 0", "flock3d run --help")
    assert_one_line_failure(flock3d("fly"), "invalid choice: 'fly'")


# -- damaged recordings -----------------------------------------------------------------------


def _damaged_copies(tmp_path) -> dict:
    """Recordings broken in the ways a reader must survive, each with the message it gets."""
    good = small_recording(tmp_path / "good.h5")

    def copy(name, change):
        return altered_copy(good, tmp_path / name, change)

    def replace(f, path, **dataset):
        del f[path]
        f.create_dataset(path, **dataset)

    def positions_as_strings(f):
        replace(f, "particles/flock/position/value", data=np.full((4, 20, 3), b"x", dtype="S3"))

    def every_zero(f):
        f["parameters/flock3d"].attrs["every"] = 0

    def declared_without_data(f):  # 1e9 frames of 1e5 boids: 2.4 PB, none of it stored
        shape = (10**9, 10**5)
        for name, width in (("position", 3), ("velocity", 3), ("orientation", 4)):
            replace(
                f, f"particles/flock/{name}/value", shape=(*shape, width), chunks=(1, 1000, width), dtype="f8"
            )
        for name in ("step", "time"):
            replace(f, f"particles/flock/position/{name}", shape=shape[:1], chunks=(1024,), dtype="i8")

    def wrong_width(f):
        replace(f, "particles/flock/velocity/value", data=np.zeros((4, 20, 5)))

    def step_as_floats(f):
        replace(f, "particles/flock/position/step", data=np.arange(4) * 2.5)

    def scene_not_text(f):
        f["parameters/flock3d"].attrs["scene"] = np.arange(3)

    def gzip_declared_without_data(f):  # compressed: smaller than its shape, so bytes cannot tell
        for name, width in (("position", 3), ("velocity", 3), ("orientation", 4)):
            replace(f, f"particles/flock/{name}/value", shape=(10**7, 20, width), chunks=(64, 20, width),
                    dtype="f8", compression="gzip")  # fmt: skip

    def step_beyond_int64(f):
        replace(f, "particles/flock/position/step", data=np.array([0, 2, 2**64 - 1, 6], dtype=np.uint64))

    def time_nan(f):
        f["particles/flock/position/time"][1] = np.nan

    def time_infinite(f):
        f["particles/flock/position/time"][3] = np.inf

    def time_backwards(f):
        f["particles/flock/position/time"][2] = -1.0

    return {
        copy("strings.h5", positions_as_strings): "particles/flock/position/value holds strings, not numbers",
        copy("every.h5", every_zero): "every = 0; expected a whole number >= 1",
        copy("declared.h5", declared_without_data): "declares shape (1000000000, 100000, 3)",
        copy("width.h5", wrong_width): "particles/flock/velocity/value has shape (4, 20, 5)",
        copy("step.h5", step_as_floats): "position/step holds values of type float64, not whole numbers",
        copy("scene.h5", scene_not_text): "the stored scene is not TOML text",
        copy("gzip.h5", gzip_declared_without_data): "position/value declares shape (10000000, 20, 3) "
        "(156,250 chunks) but the file holds 0 of them",
        copy("step64.h5", step_beyond_int64): "position/step holds 18446744073709551615 at frame 2; "
        "expected whole numbers from 0 to 2**63 - 1",
        copy("nan-time.h5", time_nan): "position/time holds nan at frame 1; expected finite times",
        copy("inf-time.h5", time_infinite): "position/time holds inf at frame 3; expected finite times",
        copy("back.h5", time_backwards): "position/time goes back from 0.0333333 to -1 s at frame 2",
    }


def test_damaged_recordings_are_one_line(tmp_path):
    for path, message in _damaged_copies(tmp_path).items():
        with pytest.raises(RecordingError, match=re.escape(message)):
            Trajectory(path)
        assert_one_line_failure(flock3d("metrics", path), f"{path}: damaged trajectory", message)


@pytest.mark.slow
def test_damaged_recordings_are_one_line_for_render_too(tmp_path):
    pytest.importorskip("vispy")  # refused on opening, before anything is drawn
    damaged = _damaged_copies(tmp_path)
    for name in ("gzip.h5", "step64.h5", "nan-time.h5", "inf-time.h5"):
        path = tmp_path / name
        out = flock3d("render", path, "--out", tmp_path / "x.mp4", "--no-progress")
        assert_one_line_failure(out, f"{path}: damaged trajectory", damaged[path])
        assert not (tmp_path / "x.mp4").exists()


@pytest.mark.slow
def test_a_recording_whose_time_stands_still_is_measured_but_not_animated(tmp_path):
    # Every time 0: the glTF export wrote 11 keys at t = 0 (glTF wants them increasing) and the
    # video was one frame (the hostile-input walk). A snapshot's measures need no clock.
    def stands(f):
        f["particles/flock/position/time"][...] = 0.0

    path = altered_copy(small_recording(tmp_path / "good.h5"), tmp_path / "still.h5", stands)
    said = f"{path}: frames 0 and 1 are both at t = 0 s; an animation needs times that advance"
    pytest.importorskip("pygltflib")
    assert_one_line_failure(flock3d("export", path, "--out", tmp_path / "x.glb", "--no-progress"), said)
    assert not (tmp_path / "x.glb").exists()
    if importlib.util.find_spec("vispy"):
        out = flock3d("render", path, "--out", tmp_path / "x.mp4", "--no-progress")
        assert_one_line_failure(out, said.partition(": ")[2])
        assert not (tmp_path / "x.mp4").exists()
    assert flock3d("metrics", path, "--no-progress").returncode == 0


@pytest.mark.slow
def test_degenerate_recordings_are_measured_or_refused_in_one_line(tmp_path):
    def coincide(f):
        f["particles/flock/position/value"][...] = 3.0

    same = altered_copy(small_recording(tmp_path / "good.h5"), tmp_path / "same.h5", coincide)
    one = small_recording(tmp_path / "one.h5", count=1)
    tiny = small_recording(tmp_path / "tiny.h5", arena_shape="periodic", arena_radius=1e-6,
                           view_distance=5e-7, separation_distance=2.5e-7)  # fmt: skip
    plot = ["--plot", tmp_path / "m.png"] if importlib.util.find_spec("matplotlib") else []
    for path in (same, one, tiny):  # a measurement, nan where it has none, and nothing said besides
        outputs = ["--correlation", tmp_path / "c.csv", "--anisotropy", tmp_path / "a.csv", *plot]
        out = flock3d("metrics", path, *outputs, "--no-progress")
        assert out.returncode == 0, out.stderr
        assert not [line for line in out.stderr.splitlines() if not line.startswith("flock3d: compiling")]
    out = flock3d("infer", "maxent", same, "--frames", "::", "--no-progress")
    assert_one_line_failure(out, f"{same}: every boid is at the same point in every frame (the flock's size")
    out = flock3d("infer", "maxent", one, "--frames", "::", "--no-progress")
    assert_one_line_failure(out, f"{one}: 1 boid; the maximum-entropy fit takes 3 to 5,000 boids a snapshot")
    out = flock3d("infer", "maxent", tiny, "--frames", "::", "--no-progress")
    assert out.returncode == 0 and "Traceback" not in out.stderr and "n_c" in out.stdout, out.stderr
    velocities = np.random.default_rng(1).normal(size=(10, 3))
    with pytest.raises(ValueError, match="every boid is at the same point"):
        maxent(np.ones((10, 3)), velocities)


def test_links_out_of_a_recording_are_refused_not_followed(tmp_path):
    import h5py

    good = small_recording(tmp_path / "good.h5")
    cases = {
        "etc.h5": ("particles/flock/position/value", h5py.ExternalLink("/etc/passwd", "/x")),
        "etc-dir.h5": ("parameters", h5py.ExternalLink("/etc", "/")),
        # Even a link to a sound recording: a reader must not open other files.
        "other.h5": ("particles/flock/velocity", h5py.ExternalLink(str(good), "/particles/flock/velocity")),
        "soft.h5": ("particles/flock/orientation", h5py.SoftLink("/particles/flock/velocity")),
    }
    for name, (where, link) in cases.items():

        def relink(f, where=where, link=link):
            del f[where]
            f[where] = link

        path = altered_copy(good, tmp_path / name, relink)
        kind = "a soft link to" if isinstance(link, h5py.SoftLink) else "a link to another file,"
        message = f"{path}: {where} is {kind} "
        with pytest.raises(RecordingError, match=re.escape(message)):
            Trajectory(path)
        out = flock3d("metrics", path)
        assert_one_line_failure(out, message, "a flock3d recording holds its own data")


def test_a_fifo_is_not_read_as_a_recording(tmp_path):
    fifo = tmp_path / "t.h5"
    os.mkfifo(fifo)
    out = flock3d("metrics", fifo, process=True, timeout=60)  # a process: a wait forever ends
    assert_one_line_failure(out, f"{fifo}: not a regular file")
    pytest.importorskip("vispy")
    out = flock3d("render", fifo, "--out", tmp_path / "x.mp4", process=True, timeout=60)
    assert_one_line_failure(out, f"{fifo}: not a regular file")
