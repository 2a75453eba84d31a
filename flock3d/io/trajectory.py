"""Trajectories on disk: HDF5 files in the H5MD layout (https://www.nongnu.org/h5md/).

Layout (N boids, T frames)::

    h5md/                       version [1, 1]; author/, creator/ (name, version)
    particles/flock/
        box                     dimension 3, boundary ["none", "none", "none"]
        position/{value (T, N, 3), step (T,), time (T,)}
        velocity/{value (T, N, 3), step, time}        step and time hard-linked
        orientation/{value (T, N, 4) w x y z, step, time}
    parameters/flock3d          scene (the effective scene as TOML), source_text,
                                seed, every, flock3d_version

Frames are buffered a block at a time (about 1 MiB per array) and appended to
chunked, resizable datasets, so memory does not grow with the length of a run,
and every block written is flushed to disk: a run stopped by Ctrl-C or SIGTERM
leaves a valid file holding every frame written so far.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from flock3d import __version__
from flock3d.core.state import FlockState
from flock3d.errors import Flock3dError
from flock3d.scene import Scene, parse_scene

__all__ = ["TrajectoryWriter", "Trajectory", "RecordingError", "BLOCK_BYTES"]

#: Target size of one buffered block (and HDF5 chunk) per array.
BLOCK_BYTES = 1 << 20
_ELEMENTS = {"position": 3, "velocity": 3, "orientation": 4}
_GROUP = "particles/flock"


class RecordingError(Flock3dError):
    """A trajectory file that cannot be read: missing, truncated, damaged or not ours."""


def _block_frames(n_boids: int) -> int:
    return int(np.clip(BLOCK_BYTES // max(1, n_boids * 3 * 8), 1, 1024))


class TrajectoryWriter:
    """Append frames of a flock to an H5MD file.

    Args:
        path: file to create (overwritten if it exists).
        n_boids: N, fixed for the whole file.
        scene: the scene being run; its TOML is stored in the file.
        every: steps between frames (stored as metadata).

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, path: str | Path, n_boids: int, scene: Scene, every: int = 1) -> None:
        import h5py

        self.path = Path(path)
        self.n_boids = n_boids
        self.frames_written = 0
        self._block = _block_frames(n_boids)
        self._buffer: dict[str, np.ndarray] = {
            name: np.empty((self._block, n_boids, width)) for name, width in _ELEMENTS.items()
        }
        self._steps = np.empty(self._block, dtype=np.int64)
        self._times = np.empty(self._block)
        self._buffered = 0
        try:
            self._file = h5py.File(self.path, "w")
        except OSError as error:
            raise RecordingError(f"{self.path}: cannot create ({error})") from None
        f = self._file
        h5md = f.create_group("h5md")
        h5md.attrs["version"] = np.array([1, 1], dtype=np.int32)
        h5md.create_group("author").attrs["name"] = "flock3d user"
        creator = h5md.create_group("creator")
        creator.attrs["name"] = "flock3d"
        creator.attrs["version"] = __version__
        group = f.create_group(_GROUP)
        box = group.create_group("box")
        box.attrs["dimension"] = np.int32(3)
        box.attrs["boundary"] = np.array([b"none"] * 3)
        self._values = {}
        step = time = None
        for name, width in _ELEMENTS.items():
            element = group.create_group(name)
            self._values[name] = element.create_dataset(
                "value",
                shape=(0, n_boids, width),
                maxshape=(None, n_boids, width),
                chunks=(self._block, max(n_boids, 1), width),
                dtype="f8",
            )
            if step is None:
                step = element.create_dataset(
                    "step", shape=(0,), maxshape=(None,), chunks=(1024,), dtype="i8"
                )
                time = element.create_dataset(
                    "time", shape=(0,), maxshape=(None,), chunks=(1024,), dtype="f8"
                )
                time.attrs["unit"] = "s"
            else:  # H5MD allows elements to share step and time by hard links
                element["step"], element["time"] = step, time
        self._step, self._time = step, time
        params = f.create_group("parameters").create_group("flock3d")
        params.attrs["scene"] = scene.to_toml()
        params.attrs["source_text"] = scene.text or ""
        params.attrs["seed"] = scene.seed
        params.attrs["every"] = every
        params.attrs["flock3d_version"] = __version__
        f.flush()

    def append(self, state: FlockState) -> None:
        """Buffer one frame; full blocks are written and flushed to disk."""
        if len(state) != self.n_boids:
            raise ValueError(f"frame has {len(state)} boids, the file holds {self.n_boids}")
        k = self._buffered
        self._buffer["position"][k] = state.positions
        self._buffer["velocity"][k] = state.velocities
        self._buffer["orientation"][k] = state.orientations
        self._steps[k], self._times[k] = state.step_count, state.time
        self._buffered += 1
        if self._buffered == self._block:
            self.flush()

    def flush(self) -> None:
        """Write the buffered frames and flush the file to disk."""
        k = self._buffered
        if k:
            start, stop = self.frames_written, self.frames_written + k
            for name, dataset in self._values.items():
                dataset.resize(stop, axis=0)
                dataset[start:stop] = self._buffer[name][:k]
            self._step.resize((stop,))
            self._time.resize((stop,))
            self._step[start:stop] = self._steps[:k]
            self._time[start:stop] = self._times[:k]
            self.frames_written, self._buffered = stop, 0
        self._file.flush()

    def close(self) -> None:
        if self._file.id.valid:
            self.flush()
            self._file.close()

    def __enter__(self) -> TrajectoryWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Trajectory:
    """A recorded trajectory, read lazily frame by frame.

    Raises :class:`RecordingError` with a one-line reason when the file is
    missing, truncated, damaged or not a flock3d trajectory.
    """

    def __init__(self, path: str | Path) -> None:
        import h5py

        self.path = Path(path)
        if not self.path.exists():
            raise RecordingError(f"{self.path}: no such file")
        if self.path.is_dir():
            raise RecordingError(f"{self.path}: is a directory, not a trajectory file")
        try:
            self._file = h5py.File(self.path, "r")
        except OSError as error:
            text = str(error)
            if "truncated" in text:
                reason = "truncated HDF5 file (was the run killed while writing?)"
            elif "signature" in text:
                reason = "not an HDF5 file"
            else:
                reason = "damaged or unreadable HDF5 file"
            raise RecordingError(f"{self.path}: {reason}") from None
        try:
            self._check_layout()
        except RecordingError:
            self._file.close()
            raise

    def _check_layout(self) -> None:
        f = self._file
        missing = [f"{_GROUP}/{name}/value" for name in _ELEMENTS if f"{_GROUP}/{name}/value" not in f]
        if missing or "parameters/flock3d" not in f:
            what = missing[0] if missing else "parameters/flock3d"
            raise RecordingError(f"{self.path}: not a flock3d trajectory (no {what})")
        try:
            shapes = {name: f[f"{_GROUP}/{name}/value"].shape for name in _ELEMENTS}
            n_steps = f[f"{_GROUP}/position/step"].shape[0]
            n_times = f[f"{_GROUP}/position/time"].shape[0]
        except (KeyError, OSError, RuntimeError) as error:
            raise RecordingError(f"{self.path}: damaged trajectory ({error})") from None
        frames = {shape[0] for shape in shapes.values()} | {n_steps, n_times}
        boids = {shape[1] for shape in shapes.values()}
        widths = [shapes[name][2] for name in _ELEMENTS]
        if len(frames) != 1 or len(boids) != 1 or widths != list(_ELEMENTS.values()):
            raise RecordingError(f"{self.path}: damaged trajectory (inconsistent array shapes {shapes})")
        self.n_frames, self.n_boids = frames.pop(), boids.pop()

    @property
    def scene(self) -> Scene:
        """The effective scene the run used (with its --set overrides and seed)."""
        text = self._file["parameters/flock3d"].attrs["scene"]
        return parse_scene(text, source=f"{self.path}:scene")

    @property
    def every(self) -> int:
        """Steps between recorded frames."""
        return int(self._file["parameters/flock3d"].attrs.get("every", 1))

    @property
    def steps(self) -> np.ndarray:
        """(T,) int64 step number of each frame."""
        return self._file[f"{_GROUP}/position/step"][:]

    @property
    def times(self) -> np.ndarray:
        """(T,) float64 simulated time of each frame, seconds."""
        return self._file[f"{_GROUP}/position/time"][:]

    def frame(self, index: int) -> FlockState:
        """Frame ``index`` (negative counts from the end) as a :class:`FlockState`."""
        if not -self.n_frames <= index < self.n_frames:
            raise IndexError(f"frame {index} out of range: the file has {self.n_frames} frames")
        i = index % self.n_frames
        g = self._file[_GROUP]
        try:
            return FlockState(
                g["position/value"][i],
                g["velocity/value"][i],
                g["orientation/value"][i],
                float(g["position/time"][i]),
                int(g["position/step"][i]),
            )
        except OSError as error:
            raise RecordingError(f"{self.path}: damaged frame {i} ({error})") from None

    def frames(self, stop: int | None = None) -> Iterator[FlockState]:
        """Iterate over the frames (the first ``stop`` of them), reading a block at a time."""
        total = self.n_frames if stop is None else min(stop, self.n_frames)
        block = _block_frames(self.n_boids)
        g = self._file[_GROUP]
        for start in range(0, total, block):
            end = min(start + block, total)
            try:
                p, v, q = (g[f"{name}/value"][start:end] for name in _ELEMENTS)
                t, s = g["position/time"][start:end], g["position/step"][start:end]
            except OSError as error:
                raise RecordingError(f"{self.path}: damaged frames {start}-{end - 1} ({error})") from None
            for k in range(end - start):
                yield FlockState(p[k], v[k], q[k], float(t[k]), int(s[k]))

    def __len__(self) -> int:
        return self.n_frames

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Trajectory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
