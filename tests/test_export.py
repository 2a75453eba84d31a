"""flock3d export: recordings as USD and glTF, read back with their own libraries (pxr,
pygltflib, trimesh), and the bad input each refuses in one line, leaving no file."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from flock3d.cli import main
from flock3d.core.quaternion import forward
from flock3d.core.state import FlockState
from flock3d.io import Trajectory, TrajectoryWriter
from flock3d.io.export.common import PLANE_RADII
from flock3d.look.camera import world_extent
from flock3d.look.colors import linear_from_srgb
from flock3d.look.world import GROUND_FILL, Frames, ground_colors, object_mesh
from flock3d.scene import parse_scene

pxr = pytest.importorskip("pxr")
gl = pytest.importorskip("pygltflib")
from pxr import Usd, UsdGeom, UsdValidation  # noqa: E402

#: Two species (6 and 4 boids), two predators, a plane, fractal terrain, a still sphere and a box
#: that moves and turns: every kind of thing an exporter writes.
SCENE = """
name = "export test"
[arena]
radius = 20.0
[predators]
count = 2
[view]
mesh = "bird"
[[species]]
name = "blue"
count = 6
color = "#4a90ff"
[[species]]
name = "amber"
count = 4
mesh = "dart"
[[objects]]
shape = "plane"
position = [0.0, -15.0, 0.0]
[[objects]]
shape = "heightfield"
seed = 3
size = [30.0, 30.0]
height = 4.0
position = [0.0, -14.0, 0.0]
[[objects]]
shape = "sphere"
radius = 2.0
position = [5.0, 0.0, 0.0]
color = "#d04040"
[[objects]]
shape = "box"
size = [2.0, 3.0, 4.0]
[objects.motion]
points = [[-8.0, 0.0, 0.0], [8.0, 2.0, 0.0]]
times = [0.0, 1.0]
rotations = [[0.0, 0.0, 0.0], [90.0, 20.0, 0.0]]
"""
N, M, FRAMES, EVERY, DT = 10, 2, 7, 6, 1.0 / 60.0


def _states(rng: np.random.Generator, n: int, frames: int, nan_frame: int | None = None):
    """Random frames of ``n`` boids (and M predators): unit quaternions, velocities along them."""
    for k in range(frames):
        q = rng.normal(size=(n, 4))
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        state = FlockState(rng.uniform(-15, 15, (n, 3)), 5.0 * forward(q), q, k * EVERY * DT, k * EVERY)
        p = rng.normal(size=(M, 4))
        p /= np.linalg.norm(p, axis=1, keepdims=True)
        state.predator_positions, state.predator_orientations = rng.uniform(-15, 15, (M, 3)), p
        state.predator_velocities = 7.0 * forward(p)
        if k == nan_frame:
            state.positions[3, 1] = np.nan
        yield state


def record(path: Path, n: int = N, frames: int = FRAMES, nan_frame: int | None = None) -> Path:
    scene = parse_scene(SCENE.replace("count = 4", f"count = {n - 6}"), "test.toml")
    with TrajectoryWriter(path, n, scene, EVERY, M) as writer:
        for state in _states(np.random.default_rng(7), n, frames, nan_frame):
            writer.append(state)
    return path


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    return record(tmp_path_factory.mktemp("export") / "run.h5")


def frames_of(path: Path) -> list[FlockState]:
    with Trajectory(path) as trajectory:
        return list(trajectory.frames())


def run(*args, capsys) -> tuple[int, str]:
    """``flock3d ARGS`` in this process: the exit status and what it wrote on stderr."""
    status = main([str(a) for a in args])
    return status, capsys.readouterr().err


# -- USD --------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".usda", ".usdc", ".usd"])
def test_usd_holds_every_frame_as_recorded_and_passes_usd_validation(recording, tmp_path, suffix):
    import flock3d.io

    out = flock3d.io.export(recording, tmp_path / f"flock{suffix}", progress=False)
    stage = Usd.Stage.Open(str(out))
    assert UsdGeom.GetStageUpAxis(stage) == "Y" and UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert stage.GetTimeCodesPerSecond() == 10.0  # a frame every 6 steps of 1/60 s
    assert (stage.GetStartTimeCode(), stage.GetEndTimeCode()) == (0.0, FRAMES - 1.0)
    boids = UsdGeom.PointInstancer(stage.GetPrimAtPath("/Flock3d/Boids"))
    predators = UsdGeom.PointInstancer(stage.GetPrimAtPath("/Flock3d/Predators"))
    assert list(boids.GetProtoIndicesAttr().Get()) == [0] * 6 + [1] * 4  # one prototype per species
    assert [p.name for p in boids.GetPrototypesRel().GetTargets()] == ["species_0_bird", "species_1_dart"]
    for k, state in enumerate(frames_of(recording)):
        code = Usd.TimeCode(float(k))
        for instancer, positions, orientations, velocities in (
            (boids, state.positions, state.orientations, state.velocities),
            (predators, state.predator_positions, state.predator_orientations, state.predator_velocities),
        ):
            assert np.array_equal(
                np.asarray(instancer.GetPositionsAttr().Get(code)), positions.astype(np.float32)
            )
            assert np.array_equal(
                np.asarray(instancer.GetVelocitiesAttr().Get(code)), velocities.astype(np.float32)
            )
            # quath: half precision, (real, i, j, k) as USD reads it
            wxyz = np.array(
                [[q.GetReal(), *q.GetImaginary()] for q in instancer.GetOrientationsAttr().Get(code)]
            )
            assert np.abs(wxyz - orientations).max() < 5e-4
            # USD's own maths places each boid's nose (+Z) along its recorded heading
            matrices = instancer.ComputeInstanceTransformsAtTime(code, code)
            noses = np.array([np.asarray(m)[2, :3] for m in matrices])  # row vectors: row 2 is +Z
            assert np.abs(noses - forward(orientations)).max() < 2e-3
    errors = UsdValidation.ValidationContext(UsdValidation.ValidationRegistry().GetOrLoadAllValidators())
    assert [e.GetMessage() for e in errors.Validate(stage)] == []


def test_usd_world_objects_arena_and_camera(recording, tmp_path):
    import flock3d.io

    with Trajectory(recording) as trajectory:  # an open recording, as well as a path
        stage = Usd.Stage.Open(str(flock3d.io.export(trajectory, tmp_path / "w.usda", progress=False)))
        assert trajectory.frame(0).time == 0.0  # left open for its owner
    names = [p.GetName() for p in stage.GetPrimAtPath("/Flock3d/World").GetChildren()]
    assert names == ["object_0_plane", "object_1_heightfield", "object_2_sphere", "object_3_box"]
    sphere = UsdGeom.Mesh(stage.GetPrimAtPath("/Flock3d/World/object_2_sphere"))
    red = np.asarray(sphere.GetDisplayColorAttr().Get())[0]
    assert red[0] > 0.5 > red[1]  # #d04040 in linear light
    scene = Trajectory(recording).scene
    frames = Frames(scene.params.objects)
    box = UsdGeom.Xformable(stage.GetPrimAtPath("/Flock3d/World/object_3_box"))
    for k in range(FRAMES):
        origins, rotations = frames.at(k * EVERY * DT)
        matrix = np.asarray(box.ComputeLocalToWorldTransform(Usd.TimeCode(k)))
        assert np.allclose(matrix[3, :3], origins[3], atol=1e-6)
        assert np.allclose(matrix[:3, :3].T, rotations[3], atol=1e-6)  # USD's rows are the local axes
    # The ground is coloured a vertex by height and slope, as the viewer draws it; the rest in one
    heights = UsdGeom.Mesh(stage.GetPrimAtPath("/Flock3d/World/object_1_heightfield"))
    shaded = heights.GetDisplayColorPrimvar()
    assert shaded.GetInterpolation() == UsdGeom.Tokens.vertex
    drawn = object_mesh(scene.params.objects[1], PLANE_RADII * world_extent(scene.params)[1])
    expected = linear_from_srgb(ground_colors(drawn, GROUND_FILL))
    assert np.allclose(np.asarray(shaded.Get()), expected, atol=1e-6)
    assert len(np.asarray(heights.GetPointsAttr().Get())) == len(expected)
    assert np.ptp(expected, axis=0).max() > 0.05  # grass, rock and snow: not one colour
    assert sphere.GetDisplayColorPrimvar().GetInterpolation() == UsdGeom.Tokens.constant
    arena = UsdGeom.Imageable(stage.GetPrimAtPath("/Flock3d/Arena"))
    assert arena.GetPurposeAttr().Get() == UsdGeom.Tokens.guide
    camera = UsdGeom.Camera(stage.GetPrimAtPath("/Flock3d/Camera")).GetCamera(Usd.TimeCode(0))
    eye = np.asarray(camera.frustum.GetPosition())
    look = np.asarray(camera.frustum.ComputeViewDirection())
    assert np.allclose(look, -eye / np.linalg.norm(eye), atol=1e-6)  # at the arena's centre, the origin
    assert abs(camera.GetFieldOfView(camera.FOVVertical) - 45.0) < 1e-3


# -- glTF ------------------------------------------------------------------------------------


def _accessor(gltf, index: int) -> np.ndarray:
    """An accessor's values, read as a glTF reader reads them (pygltflib's blob)."""
    accessor = gltf.accessors[index]
    view = gltf.bufferViews[accessor.bufferView]
    width = {"SCALAR": 1, "VEC3": 3, "VEC4": 4}[accessor.type]
    dtype = {gl.FLOAT: np.float32, gl.UNSIGNED_INT: np.uint32}[accessor.componentType]
    start = (view.byteOffset or 0) + (accessor.byteOffset or 0)
    data = np.frombuffer(gltf.binary_blob(), dtype, accessor.count * width, start)
    return data.reshape(accessor.count, width)


@pytest.mark.parametrize("suffix", [".glb", ".gltf"])
def test_gltf_moves_each_boid_node_through_its_recorded_frames(recording, tmp_path, suffix):
    import trimesh

    import flock3d.io

    out = flock3d.io.export(recording, tmp_path / f"flock{suffix}", progress=False)
    gltf = gl.GLTF2.load(str(out))
    if suffix == ".gltf":
        gltf.convert_buffers(gl.BufferFormat.BINARYBLOB)
    states = frames_of(recording)
    nodes = {node.name: k for k, node in enumerate(gltf.nodes)}
    assert gltf.scenes[gltf.scene].nodes == [nodes["flock3d"]]  # the scene a player opens holds them all
    assert sorted(gltf.nodes[nodes["flock3d"]].children) == list(range(1, len(gltf.nodes)))
    (animation,) = gltf.animations
    channels = {(c.target.node, c.target.path): animation.samplers[c.sampler] for c in animation.channels}
    for i in range(N + M):
        name = f"boid_{i}" if i < N else f"predator_{i - N}"
        for path, values in (
            ("translation", [np.vstack([s.positions, s.predator_positions])[i] for s in states]),
            (
                "rotation",
                [np.roll(np.vstack([s.orientations, s.predator_orientations])[i], -1) for s in states],
            ),
        ):
            sampler = channels[nodes[name], path]
            assert sampler.interpolation == "LINEAR"
            times = _accessor(gltf, sampler.input).ravel()
            assert np.allclose(times, [s.time for s in states], atol=1e-6)
            assert np.array_equal(_accessor(gltf, sampler.output), np.array(values, np.float32))
    species = [gltf.meshes[gltf.nodes[nodes[f"boid_{i}"]].mesh].name for i in range(N)]
    assert species == ["species_0_bird"] * 6 + ["species_1_dart"] * 4
    # The ground's colours a vertex (linear, the material white); other objects one colour
    scene = Trajectory(recording).scene
    drawn = object_mesh(scene.params.objects[1], PLANE_RADII * world_extent(scene.params)[1])
    expected = linear_from_srgb(ground_colors(drawn, GROUND_FILL))
    (ground,) = gltf.meshes[gltf.nodes[nodes["object_1_heightfield"]].mesh].primitives
    assert np.allclose(_accessor(gltf, ground.attributes.COLOR_0), expected, atol=1e-6)
    assert gltf.materials[ground.material].pbrMetallicRoughness.baseColorFactor == [1.0, 1.0, 1.0, 1.0]
    (sphere,) = gltf.meshes[gltf.nodes[nodes["object_2_sphere"]].mesh].primitives
    assert sphere.attributes.COLOR_0 is None
    loaded = trimesh.load(str(out))  # another reader takes the file as a scene
    assert len(loaded.geometry) >= 3 + 4  # three boid shapes and the four objects
    assert "camera" in nodes and "object_3_box" in nodes
    # trimesh reads the ground's COLOR_0 beside its material, a colour a vertex
    read = np.asarray(loaded.geometry["object_1_heightfield"].visual.vertex_attributes["color"])
    assert np.allclose(read[:, :3], expected, atol=1e-6)


def test_gltf_of_nothing_moving_has_no_animation(tmp_path):
    """glTF's schema requires an animation to have a channel: a flock of no boids, in a world that
    stands still, is written without one (it was written with an empty one)."""
    import flock3d.io

    scene = parse_scene('name = "empty"\n[flock]\ncount = 0\n', "empty.toml")
    with TrajectoryWriter(tmp_path / "empty.h5", 0, scene, EVERY, 0) as writer:
        for k in range(3):
            writer.append(
                FlockState(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 4)), k * EVERY * DT, k * EVERY)
            )
    out = flock3d.io.export(tmp_path / "empty.h5", tmp_path / "empty.glb", progress=False)
    gltf = gl.GLTF2.load(str(out))
    assert gltf.animations == [] and [n.name for n in gltf.nodes] == ["flock3d", "camera"]


def test_gltf_refuses_more_boids_than_its_limit_suggesting_usd(recording, tmp_path, capsys, monkeypatch):
    import flock3d.io.export.gltf

    monkeypatch.setattr(flock3d.io.export.gltf, "MAX_BOIDS", N - 1)
    status, err = run("export", recording, "--out", tmp_path / "big.glb", capsys=capsys)
    assert status == 2 and err.count("\n") == 1 and ".usdc" in err and "boids" in err
    assert list(tmp_path.iterdir()) == []
    # From a scene, before it is run (nothing is compiled or simulated)
    status, err = run(
        "export", "default", "--set", "flock.count=6000", "--out", tmp_path / "x.glb", capsys=capsys
    )
    assert status == 2 and "6,000 boids" in err and err.count("\n") == 1


# -- bad input -------------------------------------------------------------------------------


def test_bad_input_is_one_line_exit_2_and_no_file(recording, tmp_path, capsys, monkeypatch):
    cases = {
        "suffix": (
            ["export", recording, "--out", tmp_path / "x.obj"],
            "cannot export to a .obj file; name one ending in",
        ),
        "no suffix": (
            ["export", recording, "--out", tmp_path / "x"],
            "cannot export to a file without a suffix; name",
        ),
        "a folder": (["export", recording, "--out", tmp_path], "a folder; name the file to write in it"),
        "folder": (["export", recording, "--out", tmp_path / "none" / "x.usdc"], "does not exist"),
        "options": (
            ["export", recording, "--out", tmp_path / "x.usdc", "--seconds", "3"],
            "--seconds applies to scenes",
        ),
        "missing": (["export", tmp_path / "gone.h5", "--out", tmp_path / "x.usdc"], "no such file"),
    }
    damaged = tmp_path / "damaged.h5"
    damaged.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(2000))
    cases["damaged"] = (["export", damaged, "--out", tmp_path / "x.glb"], "damaged.h5")
    for name, (args, said) in cases.items():
        status, err = run(*args, capsys=capsys)
        assert status == 2 and err.count("\n") == 1 and said in err, (name, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["damaged.h5"]


def test_a_frame_that_cannot_be_drawn_is_refused_as_render_refuses_it(tmp_path, capsys):
    bad = record(tmp_path / "bad.h5", nan_frame=4)
    for suffix in (".usdc", ".glb"):
        status, err = run("export", bad, "--out", tmp_path / f"x{suffix}", capsys=capsys)
        assert status == 2 and err.count("\n") == 1, err
        assert "recorded frame 5 of " in err and "(t = 0.4 s) cannot be drawn" in err and "NaN" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.h5"]  # no file, no temporary left


def test_a_missing_library_names_the_export_extra(recording, tmp_path, capsys, monkeypatch):
    for module in ("flock3d.io.export.usd", "flock3d.io.export.gltf"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setitem(sys.modules, "pxr", None)
    monkeypatch.setitem(sys.modules, "pygltflib", None)
    for suffix in (".usdc", ".glb"):
        status, err = run("export", recording, "--out", tmp_path / f"x{suffix}", capsys=capsys)
        assert status == 2 and err.count("\n") == 1
        assert "needs the export extra" in err and "python -m pip install 'flock3d[export]'" in err, err


def test_a_folder_that_takes_no_file_is_one_line(recording, tmp_path, capsys):
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    if os.geteuid() == 0:  # root writes anywhere it may: a folder no one can create files in
        folder = Path("/proc")
    try:
        status, err = run("export", recording, "--out", folder / "x.usdc", capsys=capsys)
    finally:
        (tmp_path / "read-only").chmod(0o755)
    assert status == 2 and err.count("\n") == 1 and "cannot write" in err, err


def test_an_interrupted_export_leaves_the_file_there_before(recording, tmp_path, monkeypatch):
    import flock3d.io
    import flock3d.io.export.usd as usd

    out = tmp_path / "x.usdc"
    out.write_bytes(b"the old file")
    calls = []

    def interrupt(*args):
        calls.append(args)
        if len(calls) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(usd, "_sample", interrupt)
    with pytest.raises(KeyboardInterrupt):
        flock3d.io.export(recording, out, progress=False)
    assert out.read_bytes() == b"the old file" and sorted(tmp_path.iterdir()) == [out]


def test_unknown_formats_and_the_html_slot(tmp_path):
    from flock3d.io.export import WRITERS, ExportError, writer_for

    assert WRITERS[".html"] == "html"
    for name in ("x", "x.fbx"):
        with pytest.raises(ExportError, match="name one ending in .usd"):
            writer_for(tmp_path / name)
    try:
        assert ".html" in writer_for(tmp_path / "x.html").SUFFIXES
    except ExportError as error:  # until the HTML writer lands
        assert "html export is not in this build" in str(error)


# -- from a scene, and from Python -----------------------------------------------------------


@pytest.mark.slow
def test_a_scene_is_run_into_a_temporary_recording_then_exported(tmp_path, capsys):
    out = tmp_path / "t.glb"
    status = main(["export", "small-arena", "--seconds", "1", "--every", "2", "--set", "flock.count=40",
                   "--out", str(out), "--no-progress"])  # fmt: skip
    assert status == 0, capsys.readouterr().err
    assert sorted(tmp_path.iterdir()) == [out]  # the recording is gone
    gltf = gl.GLTF2.load(str(out))
    assert sum(node.name.startswith("boid_") for node in gltf.nodes) == 40
    assert len(_accessor(gltf, gltf.animations[0].samplers[0].input)) == 31  # 60 steps, every 2nd, and t = 0


@pytest.mark.slow
def test_flock_export_flies_on_and_writes(tmp_path):
    import flock3d

    flock = flock3d.Flock(flock3d.Params(count=30), seed=1)
    flock.step(6)
    out = flock.export(tmp_path / "f.usda", seconds=0.5, every=3, progress=False)
    assert flock.step_count == 36 and sorted(tmp_path.iterdir()) == [out]
    stage = Usd.Stage.Open(str(out))
    positions = UsdGeom.PointInstancer(stage.GetPrimAtPath("/Flock3d/Boids")).GetPositionsAttr()
    assert np.array_equal(
        np.asarray(positions.Get(stage.GetEndTimeCode())), flock.positions.astype(np.float32)
    )


@pytest.mark.slow
def test_the_readme_export_section_runs(tmp_path, monkeypatch, capsys):
    """Its commands as written, but shorter and with fewer boids; then its Python in the same folder."""
    import re
    import shlex

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = text.split("## Export to Blender", 1)[1].split("\n## ", 1)[0]
    shell, python = (
        re.search(r"```bash\n(.*?)```", section, re.S)[1],
        re.search(r"```python\n(.*?)```", section, re.S)[1],
    )
    monkeypatch.chdir(tmp_path)
    commands = [shlex.split(c) for line in shell.splitlines() for c in line.split("&&")]
    commands = [c[1:] for c in commands if c[0] == "flock3d"]
    assert len(commands) == 5
    for args in commands:
        shorter = ["0.5" if k and args[k - 1] == "--seconds" else a for k, a in enumerate(args)]
        fewer = [] if args[1].endswith(".h5") else ["--set", "flock.count=60"]  # a scene, not a recording
        assert main([*shorter, *fewer, "--no-progress"]) == 0, capsys.readouterr().err
    python = python.replace("count=200", "count=60").replace("seconds=5", "seconds=0.5")
    exec(compile(python, "README.md", "exec"), {})
    assert {"m.usdc", "t.glb", "m.html", "t.h5", "t.usda", "flock.glb", "t.usdc"} <= {
        p.name for p in tmp_path.iterdir()
    }


@pytest.mark.slow  # two interpreters started
def test_a_full_disk_leaves_the_file_there_before(recording, tmp_path):
    import subprocess

    from helpers import assert_clean_failure, file_size_limit

    for suffix in (".usdc", ".glb"):
        out = tmp_path / f"x{suffix}"
        out.write_bytes(b"the old file")
        args = ["export", str(recording), "--out", str(out)]
        code = f"import sys; from flock3d.cli import main; sys.exit(main({args!r}))"
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                              preexec_fn=file_size_limit(6_000))  # fmt: skip
        assert_clean_failure(done, f"{out}: cannot write (", "File too large")
        assert done.stderr.count("\n") == 1 and out.read_bytes() == b"the old file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.glb", "x.usdc"]


@pytest.mark.skipif(not os.environ.get("FLOCK3D_BPY_PYTHON"), reason="FLOCK3D_BPY_PYTHON: a Python with bpy")
def test_blender_places_every_boid_as_recorded(tmp_path):
    """Blender as the artist's client. bpy (Blender as a module, ~370 MB) pins numpy 1.26, which
    this environment cannot take, so it runs in its own, named by FLOCK3D_BPY_PYTHON (with h5py)."""
    import json
    import subprocess

    import flock3d.io

    run_h5 = record(tmp_path / "run.h5")
    usd, glb = (flock3d.io.export(run_h5, tmp_path / f"run{s}", progress=False) for s in (".usda", ".glb"))
    script = Path(__file__).with_name("blender_import.py")
    done = subprocess.run([os.environ["FLOCK3D_BPY_PYTHON"], script, run_h5, usd, glb], capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    for count, position, nose in found["usd"]:
        assert count == N + M and position < 1e-5 and nose < 2e-3  # quath: half precision
    for count, position, nose in found["gltf"]:
        assert count == N + M and position < 1e-5 and nose < 1e-5
