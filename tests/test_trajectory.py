"""The H5MD trajectory format: layout, round trip, bounded memory."""

import tracemalloc

import h5py
import numpy as np

from flock3d import Flock, Params
from flock3d.io import Trajectory, TrajectoryWriter
from flock3d.scene import Scene


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
        assert f["h5md/creator"].attrs["name"] == "flock3d"
        g = f["particles/flock"]
        assert g["position/value"].shape == (7, 50, 3) and g["orientation/value"].shape == (7, 50, 4)
        # step and time are shared by hard links, as H5MD allows
        assert g["velocity/step"].id == g["position/step"].id
        assert f["parameters/flock3d"].attrs["every"] == 5
    with Trajectory(path) as traj:
        assert (traj.n_frames, traj.n_boids) == (7, 50)
        np.testing.assert_array_equal(traj.steps, [0, 5, 10, 15, 20, 25, 30])
        assert traj.scene == scene
        for expected, got in zip(recorded, traj.frames(), strict=True):
            np.testing.assert_array_equal(got.positions, expected.positions)
            np.testing.assert_array_equal(got.orientations, expected.orientations)
            assert got.time == expected.time and got.step_count == expected.step_count


def test_streaming_memory_does_not_grow_with_run_length(tmp_path):
    n, frames = 2000, 1000  # 160 MB of positions, velocities and orientations
    scene = Scene(Params(count=n))
    state = Flock.from_scene(scene).state
    tracemalloc.start()
    with TrajectoryWriter(tmp_path / "big.h5", n, scene) as writer:
        baseline = tracemalloc.get_traced_memory()[0]
        for k in range(frames):
            state.step_count = k
            writer.append(state)
        peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak - baseline < 8 * 2**20  # a few buffered blocks at most, never the run
    with Trajectory(tmp_path / "big.h5") as traj:
        assert traj.n_frames == frames and traj.steps[-1] == frames - 1


def test_frames_already_written_survive_an_unclosed_writer(tmp_path):
    # Each full block is flushed to disk as it is written.
    scene = Scene(Params(count=10000))
    state = Flock.from_scene(scene).state
    writer = TrajectoryWriter(tmp_path / "open.h5", 10000, scene)
    for _ in range(10):
        writer.append(state)
    writer.flush()
    with Trajectory(tmp_path / "open.h5") as traj:  # readable while the writer is still open
        assert traj.n_frames == 10
    writer.close()
