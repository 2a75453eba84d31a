"""The H5MD trajectory format: layout, round trip, bounded memory."""

import re
import subprocess
import sys

import h5py
import numpy as np
import pytest
from helpers import process_env

from flock3d import Flock, Params
from flock3d.io import Trajectory, TrajectoryWriter
from flock3d.scene import Scene, parse_scene


def test_round_trip_and_h5md_layout(tmp_path):
    scene = Scene(Params(count=50), name="round trip", seed=3)
    flock = Flock.from_scene(scene)
    path = tmp_path / "t.h5"
    recorded = []
    with TrajectoryWriter(path, len(flock), scene, every=5) as writer:
        for _ in range(7):
            writer.append(flock.state)
            recorded.append(flock.state.copy())
            flock.step(5)
    with h5py.File(path) as f:
        assert list(f["h5md"].attrs["version"]) == [1, 1]
        for group, name in (("author", "name"), ("creator", "name"), ("creator", "version")):
            string = f[f"h5md/{group}"].attrs.get_id(name).get_type()
            assert isinstance(string, h5py.h5t.TypeStringID) and not string.is_variable_str(), (group, name)
        assert f["h5md/creator"].attrs["name"] == b"flock3d"
        g = f["particles/flock"]
        assert g["position/value"].shape == (7, 50, 3) and g["orientation/value"].shape == (7, 50, 4)
        # step and time are shared by hard links, as H5MD allows
        assert g["velocity/step"].id == g["position/step"].id
        assert g["box"].attrs["dimension"] == 3 and list(g["box"].attrs["boundary"]) == [b"none"] * 3
        assert "edges" not in g["box"]  # a sphere has no periodic box
        assert g["position/value"].attrs["unit"] == "Angstrom"
        assert g["velocity/value"].attrs["unit"] == "Angstrom ps-1"
        assert g["position/time"].attrs["unit"] == "ps"
        np.testing.assert_array_equal(g["species"], np.zeros(50))
        assert f["parameters/flock3d"].attrs["every"] == 5
    with Trajectory(path) as traj:
        assert (traj.n_frames, traj.n_boids) == (7, 50)
        np.testing.assert_array_equal(traj.steps, [0, 5, 10, 15, 20, 25, 30])
        assert traj.scene == scene
        for expected, got in zip(recorded, traj.frames(), strict=True):
            np.testing.assert_array_equal(got.positions, expected.positions)
            np.testing.assert_array_equal(got.orientations, expected.orientations)
            assert got.time == expected.time and got.step_count == expected.step_count


#: Records 500 frames of 2,000 boids (80 MB of positions, velocities and orientations: 10x the
#: bound) under tracemalloc; prints the writer's peak above its start [bytes] and the frames read back.
STREAMING = """
import sys, tracemalloc
from flock3d import Flock, Params
from flock3d.io import Trajectory, TrajectoryWriter
from flock3d.scene import Scene, parse_scene
n, frames, path = 2000, 500, sys.argv[1]
scene = Scene(Params(count=n))
state = Flock.from_scene(scene).state
tracemalloc.start()
with TrajectoryWriter(path, n, scene) as writer:
    baseline = tracemalloc.get_traced_memory()[0]
    for k in range(frames):
        state.step_count = k
        writer.append(state)
    peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
with Trajectory(path) as traj:
    print(peak - baseline, traj.n_frames, traj.steps[-1])
"""


@pytest.mark.slow
def test_streaming_memory_does_not_grow_with_run_length(tmp_path):
    # In a process of its own: in the suite's processes this took 25-37 s, alone 1.4-2.6 s
    # (tracemalloc traces every thread's allocations, and what else those processes hold is theirs).
    out = subprocess.run([sys.executable, "-c", STREAMING, str(tmp_path / "big.h5")], capture_output=True,
                         text=True, timeout=300, env=process_env())  # fmt: skip
    assert out.returncode == 0, out.stderr
    growth, frames, last = (int(word) for word in out.stdout.split())
    assert growth < 8 * 2**20  # a few buffered blocks at most, never the run
    assert frames == 500 and last == 499


@pytest.mark.slow
def test_frames_already_written_survive_an_unclosed_writer(tmp_path):
    # Each full block is flushed to disk as it is written, to the temporary file beside the
    # recording that close() renames: a process killed before that leaves them there.
    scene = Scene(Params(count=10000))
    state = Flock.from_scene(scene).state
    writer = TrajectoryWriter(tmp_path / "open.h5", 10000, scene)
    for _ in range(10):
        writer.append(state)
    writer.flush()
    assert writer.temp_path.parent == tmp_path and not (tmp_path / "open.h5").exists()
    with Trajectory(writer.temp_path) as traj:  # readable while the writer is still open
        assert traj.n_frames == 10
    writer.close()
    assert [p.name for p in tmp_path.iterdir()] == ["open.h5"]
    with Trajectory(tmp_path / "open.h5") as traj:
        assert traj.n_frames == 10


def _record(tmp_path, scene, steps=40, every=10):
    flock = Flock.from_scene(scene)
    path = tmp_path / "rec.h5"
    recorded = []
    with TrajectoryWriter(path, len(flock), scene, every=every) as writer:
        for _ in range(steps // every + 1):
            writer.append(flock.state)
            recorded.append(flock.state.copy())
            flock.step(every)
    return path, recorded


def test_a_periodic_arena_is_a_periodic_box_that_mdanalysis_reads_as_written(tmp_path):
    h5md = pytest.importorskip("MDAnalysis.coordinates.H5MD")  # in the test extra
    scene = Scene(Params(count=60, arena_shape="periodic", arena_radius=30.0, max_speed=9.0), seed=2)
    path, recorded = _record(tmp_path, scene)
    with h5py.File(path) as f:
        box = f["particles/flock/box"]
        assert list(box.attrs["boundary"]) == [b"periodic"] * 3
        np.testing.assert_array_equal(box["edges/value"][:], np.full((5, 3), 60.0))
        assert box["edges/step"].id == f["particles/flock/position/step"].id  # as H5MD requires
    # MDAnalysis at its default settings (converting units) reads the numbers written:
    # a box of 60 reads as 60 (lengths labelled nm would read as 600, in angstroms).
    reader = h5md.H5MDReader(str(path))
    assert reader.convert_units and reader.n_frames == len(recorded) and reader.n_atoms == 60
    for ts, state in zip(reader, recorded, strict=True):
        # MDAnalysis holds coordinates as float32: equal to the float64 written, to its precision.
        np.testing.assert_allclose(ts.positions, state.positions, rtol=1e-6, atol=1e-5)
        np.testing.assert_allclose(ts.velocities, state.velocities, rtol=1e-6, atol=1e-5)
        assert ts.time == pytest.approx(state.time, rel=1e-12, abs=1e-12)
        assert ts.data["step"] == state.step_count
        np.testing.assert_allclose(ts.dimensions, [60.0, 60.0, 60.0, 90.0, 90.0, 90.0])
    reader.close()
    # Positions wrap into the cube of side 2R around the centre: an image of the box.
    assert np.all(np.abs(recorded[-1].positions) <= 30.0)


@pytest.mark.slow
def test_a_planar_flock_is_stored_in_two_dimensions(tmp_path):
    scene = Scene(Params(count=40, dimensions=2, arena_center=(1.0, 2.0, 3.5)), seed=5)
    path, recorded = _record(tmp_path, scene)
    with h5py.File(path) as f:
        g = f["particles/flock"]
        assert g["box"].attrs["dimension"] == 2 and len(g["box"].attrs["boundary"]) == 2
        assert g["position/value"].shape == (5, 40, 2) and g["velocity/value"].shape == (5, 40, 2)
    with Trajectory(path) as traj:
        for expected, got in zip(recorded, traj.frames(), strict=True):
            np.testing.assert_array_equal(got.positions, expected.positions)  # z restored exactly
            np.testing.assert_array_equal(got.velocities, expected.velocities)
            np.testing.assert_array_equal(got.orientations, expected.orientations)


def test_files_of_the_earlier_layout_are_still_read(tmp_path):
    # Before H5MD 1.1 conformance: no species, no units but time's, variable-length strings.
    scene = Scene(Params(count=5), seed=1)
    state = Flock.from_scene(scene).state
    path = tmp_path / "old.h5"
    with h5py.File(path, "w") as f:
        f.create_group("h5md").attrs["version"] = np.array([1, 1], dtype=np.int32)
        g = f.create_group("particles/flock")
        g.create_group("box").attrs["dimension"] = np.int32(3)
        for name, array in (("position", state.positions), ("velocity", state.velocities),
                            ("orientation", state.orientations)):  # fmt: skip
            g[f"{name}/value"] = array[None]
            g[f"{name}/step"] = np.array([0])
            g[f"{name}/time"] = np.array([0.0])
        params = f.create_group("parameters/flock3d")
        params.attrs["scene"] = scene.to_toml()
        params.attrs["every"] = 1
    with Trajectory(path) as traj:
        assert traj.n_frames == 1 and traj.scene == scene
        np.testing.assert_array_equal(traj.frame(0).positions, state.positions)


def test_a_frame_index_is_a_whole_number_and_a_closed_trajectory_says_so(tmp_path):
    # frame(1.5) and a read after close() were reported as "damaged frames" of a sound file.
    scene = Scene(Params(count=10), seed=3)
    flock = Flock.from_scene(scene, engine="reference")
    path = tmp_path / "t.h5"
    with TrajectoryWriter(path, len(flock), scene, every=1) as writer:
        for _ in range(3):
            writer.append(flock.state)
            flock.step(1)
    trajectory = Trajectory(path)
    for index in (1.5, "1", True):
        with pytest.raises(TypeError, match="^a frame's index must be a whole number"):
            trajectory.frame(index)
    with pytest.raises(IndexError, match="^frame 3 out of range: the file has 3 frames$"):
        trajectory.frame(3)
    assert trajectory.frame(np.int64(-1)).step_count == 2
    trajectory.close()
    with pytest.raises(ValueError, match="the trajectory is closed$"):
        trajectory.frame(0)
    with pytest.raises(ValueError, match="the trajectory is closed$"):
        next(trajectory.frames())


def test_the_predators_group_of_a_file_read_as_another_programs_is_its_particles(tmp_path):
    # A recording without its flock3d parameters is another program's to the reader: its predators
    # group, chosen as the particles, was counted as predators too ("KeyError: pop from an empty set").
    scene = Scene(Params(count=10, predator_count=2), seed=3)
    flock = Flock.from_scene(scene, engine="reference")
    path = tmp_path / "t.h5"
    with TrajectoryWriter(path, len(flock), scene, every=1, n_predators=2) as writer:
        for _ in range(3):
            writer.append(flock.state)
            flock.step(1)
    with h5py.File(path, "r+") as f:
        del f["parameters"]
    with Trajectory(path, group="predators") as predators:
        assert (predators.n_boids, predators.n_predators, predators.scene) == (2, 0, None)
        assert predators.frame(-1).positions.shape == (2, 3)
    with Trajectory(path, group="flock") as boids:
        assert (boids.n_boids, boids.n_predators) == (10, 0)


def test_a_missing_recording_names_the_frames_a_killed_run_left_beside_it(tmp_path):
    # A run killed outright (kill -9) leaves its frames in .NAME.XXXXXXXX.tmp.h5, which the
    # reader then called "no such file" without a word of them.
    import shutil

    from flock3d.io.trajectory import RecordingError

    scene = Scene(Params(count=10), seed=3)
    flock = Flock.from_scene(scene, engine="reference")
    with TrajectoryWriter(tmp_path / "done.h5", len(flock), scene, every=1) as writer:
        writer.append(flock.state)
    left = tmp_path / ".k9.h5.0efb7f28.tmp.h5"  # as AtomicFile names k9.h5's temporary file
    shutil.copy(tmp_path / "done.h5", left)
    (tmp_path / ".other.h5.0efb7f28.tmp.h5").touch()  # another file's: not named
    message = (
        f"{tmp_path / 'k9.h5'}: no such file; .k9.h5.0efb7f28.tmp.h5 beside it holds the frames of a run "
        "stopped before it could put them there (rename it to k9.h5 to read them)"
    )
    with pytest.raises(RecordingError, match=f"^{re.escape(message)}$"):
        Trajectory(tmp_path / "k9.h5")
    with pytest.raises(RecordingError, match="no such file$"):
        Trajectory(tmp_path / "other-name.h5")
    left.rename(tmp_path / "k9.h5")
    with Trajectory(tmp_path / "k9.h5") as recovered:
        assert recovered.n_frames == 1


def test_each_boids_species_is_recorded(tmp_path):
    scene = parse_scene(
        '[[species]]\nname = "swift"\ncount = 3\n[[species]]\nname = "gull"\ncount = 4\n', source="test"
    )
    path, _ = _record(tmp_path, scene)
    with Trajectory(path) as traj:
        np.testing.assert_array_equal(traj.species, [0, 0, 0, 1, 1, 1, 1])  # was 0 for every boid
    with h5py.File(path) as f:  # as another program reads it: H5MD's per-particle species
        np.testing.assert_array_equal(f["particles/flock/species"], [0, 0, 0, 1, 1, 1, 1])
        assert f["particles/flock/species"].dtype == np.int32
