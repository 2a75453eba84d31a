"""Trajectories on disk: HDF5 files in the H5MD 1.1 layout (https://www.nongnu.org/h5md/).

Layout (N boids, M predators, T frames, D = 3, or 2 for a planar flock)::

    h5md/                       version [1, 1]; author/ name, creator/ name, version
                                (fixed-length strings)
    particles/flock/
        box                     dimension D, boundary D x "none", or "periodic" in a
                                periodic arena, with edges/{value (T, D), step, time}
        position/{value (T, N, D), step (T,), time (T,)}
        velocity/{value (T, N, D), step, time}        step and time hard-linked
        orientation/{value (T, N, 4) w x y z, step, time}
        species (N,)            each boid's species, 0 to S - 1 in the order of
                                [[species]] (0 for every boid of a flock without species)
    particles/predators/        the same, (T, M, ...), when the scene has predators
    parameters/flock3d          scene (the effective scene as TOML), source_text,
                                seed, every, flock3d_version, units
        files/<n>               the files the scene's objects were read from, once each:
                                attribute path (as the scene names it); a mesh's
                                vertices (V, 3) and faces (F, 3) as flock3d read them
                                (merged, outward-facing), or an image's heights (nx, nz)
                                in [0, 1]

A recording stands on its own: reading it back, a file of the scene that is gone (moved,
deleted) is served from ``files`` while the recording is open
(:func:`flock3d.io.meshes.serve_recorded_files`), so that
its world is measured and drawn as it was recorded. A file still there is read as it is now.

Units: the model has no physical scale; lengths are world units and time is
simulated seconds. Readers that convert units (MDAnalysis, at its default
settings) refuse data without unit attributes and convert the units they know to
their own base units, Angstrom and ps. So lengths are labelled ``Angstrom``,
times ``ps`` and velocities ``Angstrom ps-1``: the base units themselves, which
such a reader takes as they are, so that it reads every number as written.

A planar flock (``sim.dimensions = 2``) stores x and y; z is the arena
centre's and the vertical velocity 0. In a periodic arena
positions are wrapped into the cube of side 2R around the arena centre, an
image of the box ``edges`` as H5MD allows. Files written before these additions
(3-wide arrays, no species or edges) are read as well.

Frames are buffered a block at a time (about 1 MiB per array) and appended to
chunked, resizable datasets, so memory does not grow with the length of a run,
and every block written is flushed to disk: a run stopped by Ctrl-C or SIGTERM
leaves a valid file holding every frame written so far.

The recording is written to a temporary file beside ``path`` and renamed over it
when the writer is closed after the run ended (:class:`~flock3d.core.atomic.AtomicFile`):
a file already at ``path`` is never truncated or left half replaced. A run its user stopped
early (Ctrl-C, a signal) puts its frames at ``path`` only where nothing was; a file that was
there is kept, and the frames go beside it (``NAME.stopped.h5``: a stop a second in never
replaces a long recording). A run that failed (a step raised, as a user rule's error does)
puts its frames at ``path`` only where nothing was: a file that was there is kept, as after
a full disk (below).
Only a writer that is never closed (its process killed outright) leaves the
temporary file, ``.NAME.XXXXXXXX.tmp.h5``, a valid recording of the frames written; opening
``NAME`` then names it.

A disk that fills up must not cost the frames already written: HDF5 cannot undo
a flush that fails half way, so the space for each block is reserved
(``posix_fallocate``) before HDF5 is given the block. When the reservation
fails, the writer stops with :class:`DiskFullError` and the file stays as it was
after the last block, valid and complete up to there. It is put at ``path`` when
nothing was there; a file that was there is worth more than a run cut short by a
full disk, and is kept as it was (the new frames are dropped, freeing the disk).
"""

from __future__ import annotations

import contextlib
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from flock3d.core.atomic import left_behind
from flock3d.core.fields import is_whole_number
from flock3d.core.state import FlockState
from flock3d.io.h5md import BLOCK_BYTES, ELEMENTS, PREDATORS, DiskFullError, RecordingError, block_frames
from flock3d.io.recorded_files import recorded_files_first
from flock3d.io.trajectory_checks import StoredFile, check_layout
from flock3d.io.trajectory_writer import TrajectoryWriter

__all__ = ["TrajectoryWriter", "Trajectory", "RecordingError", "DiskFullError", "BLOCK_BYTES"]


class Trajectory:
    """A recorded trajectory, read lazily frame by frame.

    Its attributes: ``n_frames``, ``n_boids``, ``n_predators``, ``every`` (steps between
    frames), ``scene`` (the scene that was run), ``dimensions`` (2 for a planar flock, or 3)
    and ``period`` ((3,) sides of a periodic box per axis, 0 where it does not wrap, or None:
    the ``period`` of :mod:`flock3d.metrics`).

    Args:
        path: the H5MD file (``.h5``).
        group: the ``particles`` group to read, in a file that flock3d did not write (None:
            its only one; see below).

    **Files from other programs.** An H5MD file that flock3d did not write (no
    ``parameters/flock3d`` scene) is read as well, when one of its ``particles`` groups (the
    one named ``group``; the only one when None) holds ``position`` and ``velocity``
    elements, each with ``value`` (frames, N, D) and ``step`` and ``time`` (frames,); its
    ``box`` (``dimension``, ``boundary``, fixed ``edges``) gives D and the periodic sides.
    Its ``scene`` is None and ``n_predators`` 0; ``every`` is the step between frames when
    they are evenly spaced, else None; without an ``orientation`` element each particle
    faces along its velocity (up +Y, or +Z in a plane).

    Raises :class:`RecordingError` with a one-line reason when the file is missing,
    truncated, damaged or not a trajectory. Everything reading frames relies
    on (types, shapes, data actually stored, steps within int64, finite times that
    never decrease, data reached by the file's own hard links) is checked on opening,
    so a damaged file fails there and not half way through a command. The values of
    positions, velocities and orientations are not: a flock that blew up is recorded
    as it was, and each reader decides what it can use (metrics measures NaN, render
    refuses a frame it cannot draw).
    """

    def __init__(self, path: str | Path, group: str | None = None) -> None:
        import h5py

        self.path = Path(path)
        try:
            mode = self.path.stat().st_mode
        except FileNotFoundError:
            left = left_behind(self.path)
            if left:  # a run killed outright (SIGKILL, a power cut) leaves its frames there
                raise RecordingError(
                    f"{self.path}: no such file; {left[0].name} beside it holds the frames of a run "
                    f"stopped before it could put them there (rename it to {self.path.name} to read them)"
                ) from None
            raise RecordingError(f"{self.path}: no such file") from None
        except OSError as error:
            raise RecordingError(f"{self.path}: cannot read ({error.strerror or error})") from None
        if stat.S_ISDIR(mode):
            raise RecordingError(f"{self.path}: is a directory, not a trajectory file")
        if not stat.S_ISREG(mode):  # a FIFO would wait for a writer forever
            raise RecordingError(f"{self.path}: not a regular file; a trajectory is an HDF5 file")
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
        # The copies of gone files the recording holds are served while it is open, and no longer.
        self._serving = contextlib.ExitStack()
        try:
            with recorded_files_first(self):
                layout = check_layout(StoredFile(self._file, self.path), group, self, self._serving)
        except RecordingError:
            self.close()
            raise
        except Exception as error:  # any other surprise in a file that is not ours
            self.close()
            raise RecordingError(
                f"{self.path}: damaged trajectory ({type(error).__name__}: {' '.join(str(error).split())})"
            ) from None
        self._group, self._elements, self._groups = layout.group, layout.elements, layout.groups
        self._dimensions, self._plane_z = layout.dimensions, layout.plane_z
        self.n_frames, self.n_boids, self.n_predators = layout.n_frames, layout.n_boids, layout.n_predators
        self.every, self.scene, self.period = layout.every, layout.scene, layout.period

    @property
    def group(self) -> str:
        """The particles group read: ``particles/flock`` in a flock3d recording."""
        return self._group

    @property
    def dimensions(self) -> int:
        """2 for a planar flock (stored with x and y), or 3."""
        return self._dimensions

    @property
    def species(self) -> np.ndarray:
        """(N,) int64: each boid's species, the index of its ``[[species]]`` table.

        0 for every boid of a flock without species, and of a file that records none.
        """
        stored = self._file.get(f"{self._group}/species")
        if stored is None or stored.shape != (self.n_boids,) or stored.dtype.kind not in "iu":
            return np.zeros(self.n_boids, dtype=np.int64)
        return stored[:].astype(np.int64)

    @property
    def steps(self) -> np.ndarray:
        """(T,) int64 step number of each frame."""
        return self._file[f"{self._group}/position/step"][:].astype(np.int64)

    @property
    def times(self) -> np.ndarray:
        """(T,) float64 simulated time of each frame, seconds."""
        return self._file[f"{self._group}/position/time"][:].astype(np.float64)

    def frame(self, index: int) -> FlockState:
        """Frame ``index`` (negative counts from the end) as a :class:`FlockState`.

        A recording holds the boids' (and predators') positions, velocities and orientations: the
        per-boid state a term or model carries (``perches``, ``spins``, ``radii``: the state's
        ``carried``) is not recorded, and reads as its declaration's zeros, not as it was.

        Args:
            index: the frame's number from 0 (negative: from the end, -1 the last).

        Returns:
            The frame as a :class:`FlockState`: its positions [units], velocities [units/s],
            orientations, step and time [s].

        Raises:
            TypeError: ``index`` is no whole number (a float is not rounded).
            IndexError: there is no such frame.
            ValueError: the trajectory is closed.
            RecordingError: the file's frame cannot be read.
        """
        if not is_whole_number(index):
            raise TypeError(f"a frame's index must be a whole number (got {index!r})")
        if not -self.n_frames <= index < self.n_frames:
            raise IndexError(f"frame {index} out of range: the file has {self.n_frames} frames")
        i = index % self.n_frames
        return next(self._read(i, i + 1))

    def frames(self, stop: int | None = None) -> Iterator[FlockState]:
        """Iterate over the frames, reading a block at a time.

        Args:
            stop: read the first ``stop`` frames only (None: every frame).

        Yields:
            Each frame as a :class:`FlockState`.
        """
        total = self.n_frames if stop is None else min(stop, self.n_frames)
        block = block_frames(self.n_boids + self.n_predators)
        for start in range(0, total, block):
            yield from self._read(start, min(start + block, total))

    def _read(self, start: int, end: int) -> Iterator[FlockState]:
        f = self._file
        if not f:  # h5py's closed file: its error would read as a damaged frame
            raise ValueError(f"{self.path}: the trajectory is closed")
        try:
            arrays = {
                (g, name): self._in_3d(name, f[f"{g}/{name}/value"][start:end])
                for g in self._groups
                for name in self._elements
            }
            t = f[f"{self._group}/position/time"][start:end]
            s = f[f"{self._group}/position/step"][start:end]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise RecordingError(
                f"{self.path}: damaged frames {start}-{end - 1} ({' '.join(str(error).split())})"
            ) from None
        if "orientation" not in self._elements:  # a file from another program: facing the velocity
            from flock3d.core.quaternion import look_rotation

            up = (0.0, 0.0, 1.0) if self._dimensions == 2 else (0.0, 1.0, 0.0)
            velocities = arrays[self._group, "velocity"]
            arrays[self._group, "orientation"] = look_rotation(velocities.reshape(-1, 3), up).reshape(
                velocities.shape[:2] + (4,)
            )
        for k in range(end - start):
            state = FlockState(*(arrays[self._group, name][k] for name in ELEMENTS), float(t[k]), int(s[k]))
            if PREDATORS in self._groups:
                (state.predator_positions, state.predator_velocities, state.predator_orientations) = (
                    arrays[PREDATORS, name][k] for name in ELEMENTS
                )
            yield state

    def _in_3d(self, name: str, block: np.ndarray) -> np.ndarray:
        """(frames, n, 3 or 4) float64 from a stored block; a planar flock gets its z back."""
        block = np.asarray(block, dtype=np.float64)
        if self._dimensions == 3 or name == "orientation":
            return block
        z = self._plane_z if name == "position" else 0.0
        return np.concatenate([block, np.full(block.shape[:2] + (1,), z)], axis=2)

    def __len__(self) -> int:
        return self.n_frames

    def close(self) -> None:
        """Close the file (a :class:`Trajectory` is also a context manager that does)."""
        self._serving.close()
        self._file.close()

    def __enter__(self) -> Trajectory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
