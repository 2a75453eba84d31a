"""What a new user meets first: the README's pipeline, the shipped scenes by name, the listings."""

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from helpers import flock3d

from flock3d import metrics
from flock3d.io import Trajectory

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_pipeline() -> list[list[str]]:
    """The commands of the README's first pipeline (section "Run, record, render, measure")."""
    section = README.read_text().split("## Run, record, render, measure", 1)[1]
    line = re.search(r"```bash\n(.*?)\n```", section, re.S)[1]
    commands = [shlex.split(part) for part in line.split("&&")]
    assert all(c[0] == "flock3d" for c in commands), line
    return [c[1:] for c in commands]


@pytest.mark.slow
def test_the_readme_pipeline_shows_the_mill_it_promises(tmp_path):
    for args in readme_pipeline():
        if args[0] == "render":  # the README's video, small and at one frame a second: its whole
            args = [*args, "--size", "160x120", "--fps", "1", "--no-progress"]  # minute, 60 frames
        out = flock3d(*args, cwd=tmp_path)
        assert out.returncode == 0, (args, out.stderr)
    assert "60 frames, 160x120, 60.00 s at 1 fps, showing simulated t = 0.00 to 60.00 s" in out.stdout
    with Trajectory(tmp_path / "x.h5") as traj:
        last = traj.frame(-1)
        assert traj.scene.name == "Torus (mill)" and traj.times[-1] >= 59.9
    assert metrics.milling(last.positions, last.velocities) > 0.85  # "milling rise to about 0.9"
    assert (tmp_path / "m.png").stat().st_size > 0 and (tmp_path / "x.mp4").stat().st_size > 0


def test_shipped_scenes_load_by_name_outside_a_clone(tmp_path, monkeypatch):
    from flock3d import load_scene

    monkeypatch.chdir(tmp_path)  # a folder with no scenes/ in it, as after `pip install flock3d`
    a, b = load_scene("torus"), load_scene("scenes/torus.toml")
    assert a == b and a.name == "Torus (mill)" and load_scene("couzin/swarm").params.model == "couzin"
    # A file of that name in the current folder still wins over the shipped scene.
    (tmp_path / "torus").write_text('name = "mine"\n')
    assert load_scene("torus").name == "mine"


def test_scenes_and_check_say_what_arena_each_scene_has():
    listing = {line.split()[0]: line for line in flock3d("scenes").stdout.splitlines()}
    assert "open space" in listing["couzin/torus"] and "R=" not in listing["couzin/torus"]
    assert "sphere R=30" in listing["default"]
    assert "square, side 50" in listing["classics/opensteer-box-2d"]
    assert "periodic square, side 300" in listing["classics/wraparound-270-2d"]
    out = flock3d("check", "couzin/swarm", "classics/perceived-centre", "torus")
    assert out.returncode == 0, out.stderr
    assert "100 boids, open space, fov 270" in out.stdout
    assert "box, side 800" in out.stdout and "sphere R=20" in out.stdout
    assert "radius" not in out.stdout


def test_the_background_compile_builds_this_process_flock3d_not_another(monkeypatch, tmp_path):
    # A first run compiles the shared driver in a second process; it must import the same
    # flock3d as this one, or its work is lost: not an installed copy that a source checkout
    # shadows, nor another checkout in the current directory. (A forked child is this process:
    # here the child is a fresh interpreter, as in a process with threads.)
    import flock3d
    from flock3d.core import assemble, elsewhere, forked

    launched = []

    class Recorder:
        def __init__(self, args, **kwargs):
            launched.append((args, kwargs["env"]))
            raise OSError("recorded, not started")

    monkeypatch.setattr(assemble, "_warm_up", None)
    monkeypatch.setattr(assemble, "driver_is_cached", lambda *options: False)
    monkeypatch.delenv("FLOCK3D_NO_WARM_UP", raising=False)
    monkeypatch.setattr(forked, "safe", lambda: False)
    monkeypatch.setattr(elsewhere.subprocess, "Popen", Recorder)
    assemble.warm_up_in_background(flock3d.Params())
    assert len(launched) == 1
    args, env = launched[0]
    assert args[1:3] == ["-P", "-c"] and env["FLOCK3D_NO_WARM_UP"] == "1"
    monkeypatch.undo()  # the real Popen again
    decoy = tmp_path / "flock3d"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("raise SystemExit('the decoy was imported')\n")
    which = subprocess.run(
        [*args[:3], "import flock3d; print(flock3d.__file__)"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert which.returncode == 0, which.stderr
    assert Path(which.stdout.strip()) == Path(flock3d.__file__).resolve()
