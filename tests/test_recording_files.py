"""A recording stands on its own: the meshes and heightfield images its scene read are stored in
it, so that once those files are moved or deleted the recording is still opened, measured and
drawn as it was recorded; and what it stores is checked as a file from disk would be."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from helpers import flock3d

trimesh = pytest.importorskip("trimesh")
pytest.importorskip("igl")
iio = pytest.importorskip("imageio.v3")
h5py = pytest.importorskip("h5py")

from flock3d import Flock  # noqa: E402
from flock3d.io import Trajectory, TrajectoryWriter  # noqa: E402
from flock3d.io.meshes import MeshError, read_heights, read_mesh  # noqa: E402
from flock3d.io.trajectory import RecordingError  # noqa: E402
from flock3d.scene import load_scene  # noqa: E402

SCENE = """
name = "rock and hills"
seed = 3

[flock]
count = 30

[arena]
shape = "sphere"
radius = 30.0

[[objects]]
shape = "mesh"
file = "assets/rock.obj"
position = [8.0, 0.0, 0.0]

[[objects]]
shape = "mesh"
file = "assets/rock.obj"
position = [-8.0, 0.0, 0.0]
scale = 0.5

[[objects]]
shape = "heightfield"
image = "assets/hills.png"
size = [60.0, 60.0]
height = 6.0
position = [0.0, -28.0, 0.0]
"""


#: Each test's grids and steps in a cache of its own (conftest.own_cache).
pytestmark = pytest.mark.usefixtures("own_cache")


@pytest.fixture
def recording(tmp_path):
    """A recording of a world read from a mesh and an image, whose folder is then moved away;
    with the scene as loaded before the move."""
    world = tmp_path / "world"
    (world / "assets").mkdir(parents=True)
    trimesh.creation.icosphere(2, radius=3.0).export(world / "assets" / "rock.obj")
    x, z = np.meshgrid(np.linspace(0, 1, 24), np.linspace(0, 1, 24), indexing="ij")
    hills = (255 * (0.5 + 0.5 * np.sin(6 * x) * np.cos(5 * z))).astype(np.uint8)
    iio.imwrite(world / "assets" / "hills.png", hills.T)
    (world / "scene.toml").write_text(SCENE)
    scene = load_scene(world / "scene.toml")
    flock = Flock.from_scene(scene, engine="reference")
    path = tmp_path / "rec.h5"
    with TrajectoryWriter(path, scene.params.count, scene, every=1) as writer:
        for _ in range(4):
            writer.append(flock.state)
            flock.step()
    shutil.move(world, tmp_path / "elsewhere")  # every file the scene named is gone
    assert not (world / "assets" / "rock.obj").exists()
    return path, scene


@pytest.mark.slow
def test_a_recording_whose_files_are_gone_opens_with_its_world_as_recorded(recording):
    path, scene = recording
    with Trajectory(path) as traj:
        assert traj.scene.params == scene.params  # the same objects, naming the same (gone) files
        assert traj.n_frames == 4
        fields = traj.scene.fields
        assert set(fields) == set(scene.fields) == {0, 1, 2}
        for k in (0, 1):  # the grids computed from the stored meshes are the recorded world's
            assert np.array_equal(fields[k].values, scene.fields[k].values)
            assert fields[k].origin == scene.fields[k].origin and fields[k].cell == scene.fields[k].cell
        np.testing.assert_array_equal(fields[2], scene.fields[2])
    with h5py.File(path) as f:  # the rock once, though two objects read it
        assert sorted(f["parameters/flock3d/files"]) == ["0", "1"]


@pytest.mark.slow
def test_a_recordings_copies_are_served_while_it_is_open_and_no_longer(recording, tmp_path):
    path, scene = recording
    gone = scene.params.objects[0].file
    with Trajectory(path):
        assert len(read_mesh(gone).faces) == len(trimesh.creation.icosphere(2).faces)
    with pytest.raises(MeshError, match="no such mesh file"):  # closed: the file is gone again
        read_mesh(gone)
    with pytest.raises(MeshError, match="no such image file"):
        read_heights(scene.params.objects[2].image)


@pytest.mark.slow
def test_two_open_recordings_with_different_copies_of_one_gone_file(recording, tmp_path):
    path, scene = recording
    gone = scene.params.objects[0].file
    other = tmp_path / "other.h5"
    shutil.copy(path, other)
    with h5py.File(other, "r+") as f:  # the same path, another rock
        _replace(f, "0/vertices", f["parameters/flock3d/files/0/vertices"][()] * 0.5)
    with Trajectory(other):
        assert np.ptp(read_mesh(gone).vertices[:, 0]) == pytest.approx(3.0, rel=0.05)
        with Trajectory(path):  # each reads its own world as it opens; then neither is guessed
            with pytest.raises(MeshError, match="open recordings hold different copies"):
                read_mesh(gone)
        assert np.ptp(read_mesh(gone).vertices[:, 0]) == pytest.approx(3.0, rel=0.05)
    with Trajectory(path) as traj:  # opened after the other closed: its own copy, not the other's
        assert np.ptp(read_mesh(gone).vertices[:, 0]) == pytest.approx(6.0, rel=0.05)
        assert traj.scene.fields[0].cell == scene.fields[0].cell


@pytest.mark.slow
def test_metrics_and_inference_of_a_recording_whose_files_are_gone(recording):
    path, _ = recording
    out = flock3d("metrics", path, "--no-progress")
    assert out.returncode == 0, out.stderr
    assert "4 frames of 30 boids" in out.stdout and "rock and hills" in out.stdout
    out = flock3d("infer", "maxent", path)
    assert out.returncode == 0, out.stderr


@pytest.mark.slow
@pytest.mark.gui
def test_render_of_a_recording_whose_files_are_gone(recording, tmp_path):
    path, _ = recording
    out = flock3d("render", path, "--out", tmp_path / "f.png", "--size", "160x120", "--no-progress")
    if out.returncode != 0 and "needs EGL" in out.stderr:
        pytest.skip("no EGL/OpenGL for offscreen rendering here")
    assert out.returncode == 0, out.stderr
    image = iio.imread(tmp_path / "f.png")
    assert image.shape[:2] == (120, 160) and image.std() > 0


@pytest.mark.slow
@pytest.mark.parametrize(
    "damage, message",
    [
        (
            lambda f: _replace(f, "0/faces", f["parameters/flock3d/files/0/faces"][()] + 10_000),
            "name vertices",
        ),
        (lambda f: _replace(f, "0/vertices", np.full((5, 3), np.nan)), "holds numbers that are not finite"),
        (lambda f: _replace(f, "0/vertices", np.zeros((5, 2))), "has shape (5, 2)"),
        (lambda f: _replace(f, "1/heights", np.full((4, 4), 2.0)), "are not all in [0, 1]"),
        (lambda f: f["parameters/flock3d/files/0"].attrs.__setitem__("path", ""), "names no file"),
    ],
    ids=["faces", "vertices", "columns", "heights", "path"],
)
def test_damaged_stored_files_are_refused_in_one_line(recording, damage, message):
    path, _ = recording
    with h5py.File(path, "r+") as f:
        damage(f)
    with pytest.raises(RecordingError) as error:
        Trajectory(path)
    assert str(error.value).startswith(f"{path}: damaged trajectory (") and message in str(error.value)
    assert "\n" not in str(error.value)


def _replace(f, name: str, values) -> None:
    del f[f"parameters/flock3d/files/{name}"]
    f[f"parameters/flock3d/files/{name}"] = values
