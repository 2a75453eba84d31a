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
        species (N,)            0 for every boid
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
when the writer is closed (:class:`~flock3d.core.atomic.AtomicFile`), however the
run ended: a file already at ``path`` is never truncated or left half replaced.
Only a writer that is never closed (its process killed outright) leaves the
temporary file, ``.NAME.XXXXXXXX.tmp.h5``, a valid recording of the frames written.

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
import errno
import gc
import math
import os
import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from flock3d._version import __version__
from flock3d.core.atomic import AtomicFile
from flock3d.core.params import short_repr
from flock3d.core.state import FlockState
from flock3d.errors import Flock3dError
from flock3d.scene import Scene, SceneError, parse_scene
from flock3d.scene.scene import MAX_SCENE_BYTES

__all__ = ["TrajectoryWriter", "Trajectory", "RecordingError", "DiskFullError", "BLOCK_BYTES"]

#: Target size of one buffered block (and HDF5 chunk) per array.
BLOCK_BYTES = 1 << 20
_ELEMENTS = ("position", "velocity", "orientation")
_FLOCK, _PREDATORS = "particles/flock", "particles/predators"
#: Units written on the datasets (see the module's docstring): world units and seconds,
#: labelled with MDAnalysis's base units so that it converts nothing.
LENGTH_UNIT, TIME_UNIT, VELOCITY_UNIT = "Angstrom", "ps", "Angstrom ps-1"
UNITS_NOTE = (
    "lengths in world units and time in simulated seconds, labelled Angstrom and ps "
    "(the base units of readers that convert, so that they take the numbers as written); "
    "no physical scale is implied"
)


class RecordingError(Flock3dError):
    """A trajectory file that cannot be read: missing, truncated, damaged or not ours."""


class DiskFullError(RecordingError):
    """No room for the next block of frames; the frames written before it are kept."""


#: Room reserved for HDF5's own bookkeeping (chunk index nodes, headers) on each flush.
_METADATA_BYTES = 1 << 20


def _widths(dimensions: int) -> dict[str, int]:
    """Columns stored per boid for each element."""
    return {"position": dimensions, "velocity": dimensions, "orientation": 4}


def _block_frames(n_boids: int) -> int:
    return int(np.clip(BLOCK_BYTES // max(1, n_boids * 3 * 8), 1, 1024))


def _arrays(state: FlockState, group: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if group == _FLOCK:
        return state.positions, state.velocities, state.orientations
    return state.predator_positions, state.predator_velocities, state.predator_orientations


class TrajectoryWriter:
    """Append frames of a flock (and its predators) to an H5MD file.

    Args:
        path: file to create (replaced on :meth:`close` if it exists; see the module's notes).
        n_boids: N, fixed for the whole file.
        scene: the scene being run; its TOML is stored in the file.
        every: steps between frames (stored as metadata).
        n_predators: M, fixed for the whole file (0: no predator group).

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(
        self, path: str | Path, n_boids: int, scene: Scene, every: int = 1, n_predators: int = 0
    ) -> None:
        import h5py

        self.path = Path(path)
        self.n_boids, self.n_predators = n_boids, n_predators
        self.frames_written = 0
        self._block = _block_frames(n_boids + n_predators)
        self._groups = {_FLOCK: n_boids, **({_PREDATORS: n_predators} if n_predators else {})}
        params = scene.params
        self._widths = _widths(params.dimensions)
        self._periodic = params.arena_shape == "periodic"
        self._buffer = {
            (group, name): np.empty((self._block, n, width))
            for group, n in self._groups.items()
            for name, width in self._widths.items()
        }
        self._steps = np.empty(self._block, dtype=np.int64)
        self._times = np.empty(self._block)
        self._buffered = 0
        self._failed: RecordingError | None = None
        try:
            self._on_disk = AtomicFile(self.path)
        except OSError as error:
            raise RecordingError(f"{self.path}: cannot create ({error.strerror or error})") from None
        try:
            self._file = h5py.File(self._on_disk.temp, "w")
        except OSError as error:
            self._on_disk.discard()
            raise RecordingError(f"{self.path}: cannot create ({_reason(error)})") from None
        try:
            self._create_layout(scene, every)
        except Exception as error:  # noqa: BLE001
            reason = _reason(error)
        else:
            return
        self._abandon()
        self._on_disk.discard()
        raise RecordingError(f"{self.path}: cannot write the trajectory's layout ({reason})")

    def _create_layout(self, scene: Scene, every: int) -> None:
        f = self._file
        h5md = f.create_group("h5md")
        h5md.attrs["version"] = np.array([1, 1], dtype=np.int32)
        h5md.create_group("author").attrs["name"] = np.bytes_(b"flock3d user")
        creator = h5md.create_group("creator")
        creator.attrs["name"] = np.bytes_(b"flock3d")
        creator.attrs["version"] = np.bytes_(__version__.encode())
        d = scene.params.dimensions
        self._values, self._edges = {}, []
        step = time = None
        for group_name, n in self._groups.items():
            group = f.create_group(group_name)
            for name, width in self._widths.items():
                element = group.create_group(name)
                value = self._values[group_name, name] = element.create_dataset(
                    "value",
                    shape=(0, n, width),
                    # A chunk cannot be empty: an empty flock gets chunks of one boid.
                    maxshape=(None, max(n, 1), width),
                    chunks=(self._block, max(n, 1), width),
                    dtype="f8",
                )
                value.attrs["unit"] = {"position": LENGTH_UNIT, "velocity": VELOCITY_UNIT}.get(name, "1")
                if step is None:
                    step = element.create_dataset(
                        "step", shape=(0,), maxshape=(None,), chunks=(1024,), dtype="i8"
                    )
                    time = element.create_dataset(
                        "time", shape=(0,), maxshape=(None,), chunks=(1024,), dtype="f8"
                    )
                    time.attrs["unit"] = TIME_UNIT
                else:  # H5MD allows elements to share step and time by hard links
                    element["step"], element["time"] = step, time
            box = group.create_group("box")
            box.attrs["dimension"] = np.int32(d)
            boundary = b"periodic" if self._periodic else b"none"
            box.attrs["boundary"] = np.array([boundary] * d, dtype="S8")
            if self._periodic:  # a time-dependent element: H5MD readers look for edges/value
                edges = box.create_group("edges")
                value = edges.create_dataset(
                    "value", shape=(0, d), maxshape=(None, d), chunks=(1024, d), dtype="f8"
                )
                value.attrs["unit"] = LENGTH_UNIT
                edges["step"], edges["time"] = step, time
                self._edges.append(value)
            group.create_dataset("species", data=np.zeros(n, dtype=np.int32))
        self._step, self._time = step, time
        self._side = 2.0 * scene.params.arena_radius
        params = f.create_group("parameters").create_group("flock3d")
        params.attrs["scene"] = scene.to_toml()
        params.attrs["source_text"] = scene.text or ""
        params.attrs["seed"] = scene.seed
        params.attrs["every"] = every
        params.attrs["flock3d_version"] = __version__
        params.attrs["units"] = UNITS_NOTE
        _store_files(params, scene)
        f.flush()

    @property
    def temp_path(self) -> Path:
        """Where the frames are written until :meth:`close` renames the file to ``path``."""
        return self._on_disk.temp

    @property
    def frames(self) -> int:
        """Frames appended so far (written or still buffered)."""
        return self.frames_written + self._buffered

    def append(self, state: FlockState) -> None:
        """Buffer one frame; full blocks are written and flushed to disk."""
        if len(state) != self.n_boids or state.n_predators != self.n_predators:
            raise ValueError(
                f"frame has {len(state)} boids and {state.n_predators} predators, "
                f"the file holds {self.n_boids} and {self.n_predators}"
            )
        k = self._buffered
        for group in self._groups:
            for name, array in zip(_ELEMENTS, _arrays(state, group), strict=True):
                self._buffer[group, name][k] = array[:, : self._widths[name]]
        self._steps[k], self._times[k] = state.step_count, state.time
        self._buffered += 1
        if self._buffered == self._block:
            self.flush()

    def flush(self) -> None:
        """Write the buffered frames and flush the file to disk.

        Raises:
            DiskFullError: there is no room for the buffered frames (a full disk, a
                quota, ``ulimit -f``); they are dropped, the file keeps every frame
                written before them, and the writer takes no more frames.
            RecordingError: writing failed in another way; the file may be damaged, and
                :meth:`close` drops it.
        """
        if self._failed is not None:
            raise self._failed
        k = self._buffered
        if not k:
            self._file.flush()
            return
        start, stop = self.frames_written, self.frames_written + k
        self._buffered = 0
        reason = self._reserve(start, stop)
        if reason is None:
            reason = self._write(start, stop)
            if reason is None:
                self.frames_written = stop
                self._release()
                return
            kept = self._roll_back(start)
            if kept is None:
                self._failed = RecordingError(
                    f"{self.path}: cannot write frames {start}-{stop - 1} ({reason}); "
                    + "the recording is dropped"
                    + (" and the file there before kept as it was" if self._on_disk.existed else "")
                )
                raise self._failed
            self.frames_written = kept
        self._release()
        kept = f"{self.frames_written:,} frames written"
        kept = (
            f"dropping the {kept} and keeping the file there before as it was"
            if self._on_disk.existed
            else f"keeping the {kept}"
        )
        self._failed = DiskFullError(f"{self.path}: no room for more frames ({reason}); stopped, {kept}")
        raise self._failed

    def _datasets(self) -> list:
        """Every dataset that grows by one row per frame."""
        return [*self._values.values(), self._step, self._time, *self._edges]

    def _reserve(self, start: int, stop: int) -> str | None:
        """Allocate the disk space that writing frames ``start`` to ``stop`` will take.

        Returns why that is not possible, or None (also where the system cannot reserve).
        """
        need = _METADATA_BYTES
        for dataset in self._datasets():
            chunk = dataset.chunks[0]
            new_chunks = -(-stop // chunk) - -(-start // chunk)  # chunks are allocated whole
            need += new_chunks * int(np.prod(dataset.chunks)) * dataset.dtype.itemsize
        fd, end = self._file.id.get_vfd_handle(), self._file.id.get_filesize()  # HDF5 allocates from end
        try:
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(fd, end, need)
            elif hasattr(os, "pwrite"):  # macOS: allocate by writing zeros, which HDF5 overwrites
                zeros, offset = bytes(min(need, 1 << 20)), end
                while offset < end + need:
                    offset += os.pwrite(fd, zeros[: end + need - offset], offset)
        except OSError as error:
            if error.errno in (errno.EINVAL, errno.EOPNOTSUPP, errno.ENODEV):
                return None  # a file system that cannot reserve: write, and roll back on failure
            return error.strerror or str(error)
        return None

    def _write(self, start: int, stop: int) -> str | None:
        """Hand frames ``start`` to ``stop`` to HDF5 and flush; why that failed, or None.

        Only the text leaves this frame: a traceback holding HDF5 handles of a file
        that failed to flush crashes the interpreter when it is freed at exit.
        """
        k = stop - start
        with _quietly_freed():
            try:
                for key, dataset in self._values.items():
                    dataset.resize(stop, axis=0)
                    dataset[start:stop] = self._buffer[key][:k]
                self._step.resize((stop,))
                self._time.resize((stop,))
                self._step[start:stop] = self._steps[:k]
                self._time[start:stop] = self._times[:k]
                for edges in self._edges:
                    edges.resize(stop, axis=0)
                    edges[start:stop] = self._side
                self._file.flush()
            except Exception as error:  # noqa: BLE001
                return _reason(error)
        return None

    def _roll_back(self, frames: int) -> int | None:
        """Shrink the file back to ``frames`` frames after a failed write; ``frames``, or None.

        Shrinking drops the chunks HDF5 could not write, so that what it still holds
        fits in the file. HDF5 is not to be trusted after an error, though (it has
        been seen to lose chunks it had written): None unless every chunk is there.
        """
        with _quietly_freed():
            try:
                for dataset in self._datasets():
                    dataset.resize(frames, axis=0)
                self._file.flush()
                if all(_stored_rows(dataset) >= frames for dataset in self._datasets()):
                    return frames
            except Exception:  # noqa: BLE001
                pass
        return None

    def _release(self) -> None:
        """Give back what the last reservation did not use (HDF5 has written all it holds)."""
        with contextlib.suppress(Exception):
            used = self._file.id.get_filesize()
            fd = self._file.id.get_vfd_handle()
            if os.fstat(fd).st_size > used:
                os.ftruncate(fd, used)

    def close(self) -> None:
        """Write what is buffered and put the recording at ``path``.

        Raises:
            DiskFullError, RecordingError: as :meth:`flush` (a failure reported before is
                not raised again); what is then at ``path`` is said in the module's notes.
            RecordingError: the finished file cannot be renamed over ``path``.
        """
        if not self._file.id.valid:
            return
        if self._failed is not None:
            self._finish_failed()
            return
        try:
            self.flush()
        except BaseException:
            self._finish_failed()
            raise
        self._file.close()
        self._put_in_place()

    def _finish_failed(self) -> None:
        """Close a file whose writing failed and keep it or drop it (see the module's notes)."""
        # After a failed write HDF5 may fail again on closing and on freeing each handle
        # (the error is reported already): free them all now, quietly, none left for exit.
        self._abandon()
        # Cut short by a full disk, the recording is whole up to its last block: kept where no
        # file was. One that may be damaged is never put in place.
        if isinstance(self._failed, DiskFullError) and not self._on_disk.existed:
            self._put_in_place()
        else:
            self._on_disk.discard()

    def _put_in_place(self) -> None:
        try:
            self._on_disk.commit()
        except OSError as error:
            reason = error.strerror or error
            raise RecordingError(f"{self.path}: cannot put the recording in place ({reason})") from None

    def _abandon(self) -> None:
        """Close a file that failed to write, freeing every handle now and quietly."""
        with _quietly_freed():
            self._values, self._step, self._time, self._edges = {}, None, None, []
            with contextlib.suppress(Exception):
                self._file.close()

    def __enter__(self) -> TrajectoryWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _store_files(group, scene: Scene) -> None:
    """The meshes and heightfield images the scene's objects were read from, in ``group/files``."""
    from flock3d.core.objects import needs_field, shape_of

    objects = [o for o in scene.params.objects if needs_field(o)]
    if not objects:
        return
    from flock3d.io.meshes import read_heights, read_mesh

    files = group.create_group("files")
    stored: set[str] = set()
    for o in objects:
        path = shape_of(o).source(o)
        if path in stored:
            continue
        entry = files.create_group(str(len(stored)))
        stored.add(path)
        entry.attrs["path"] = path
        if o.shape == "mesh":
            mesh = read_mesh(path, o.role)
            entry.create_dataset("vertices", data=np.asarray(mesh.vertices, dtype=np.float64))
            entry.create_dataset("faces", data=np.asarray(mesh.faces, dtype=np.int64))
        else:
            entry.create_dataset("heights", data=read_heights(path))


def _stored_rows(dataset) -> int:
    """How many leading rows of a chunked dataset have their chunks in the file."""
    rows = dataset.chunks[0]
    present = {dataset.id.get_chunk_info(i).chunk_offset[0] for i in range(dataset.id.get_num_chunks())}
    chunks = 0
    while chunks * rows in present:
        chunks += 1
    return min(chunks * rows, dataset.shape[0])


def _plain_repr(value) -> str:
    """A value read from HDF5, shown as Python would show the plain value (0, not np.int64(0))."""
    return short_repr(value.tolist() if isinstance(value, (np.generic, np.ndarray)) else value)


def _reason(error: Exception) -> str:
    """One line saying why HDF5 failed: the system's error text when there is one."""
    text = str(error)
    errno_text = re.search(r"error message = '([^']*)'", text)
    return errno_text[1] if errno_text else " ".join(text.split())


@contextlib.contextmanager
def _quietly_freed() -> Iterator[None]:
    """Free HDF5 handles left over by a failed write without printing HDF5's complaints.

    h5py prints a traceback for each handle it cannot free (through ``sys.excepthook``
    and ``sys.unraisablehook``), and a handle of a file that failed to flush, left for
    the interpreter to free at exit, crashes it: collect them here, inside the block.
    """
    hooks = sys.excepthook, sys.unraisablehook
    sys.excepthook = sys.unraisablehook = lambda *args: None
    try:
        yield
        gc.collect()
    finally:
        sys.excepthook, sys.unraisablehook = hooks


class Trajectory:
    """A recorded trajectory, read lazily frame by frame.

    Attributes: ``n_frames``, ``n_boids``, ``n_predators``, ``every`` (steps between
    frames), ``scene`` (the scene that was run), ``dimensions`` (2 for a planar flock, or 3)
    and ``period`` ((3,) sides of a periodic box per axis, 0 where it does not wrap, or None:
    the ``period`` of :mod:`flock3d.metrics`).

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
        self._chosen = group
        try:
            mode = self.path.stat().st_mode
        except FileNotFoundError:
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
        from flock3d.io import meshes

        # The copies of gone files the recording holds are served while it is open, and no longer.
        self._files: dict[str, object] = {}
        self._serving = contextlib.ExitStack()
        try:
            with meshes.recorded_files_first(self):
                self._check_layout()
        except RecordingError:
            self.close()
            raise
        except Exception as error:  # any other surprise in a file that is not ours
            self.close()
            raise RecordingError(
                f"{self.path}: damaged trajectory ({type(error).__name__}: {' '.join(str(error).split())})"
            ) from None

    def _damaged(self, why: str) -> RecordingError:
        return RecordingError(f"{self.path}: damaged trajectory ({why})")

    def _check_layout(self) -> None:
        """Check everything reading frames relies on, so that reading cannot fail or run away."""
        import h5py

        params = self._member("parameters/flock3d")
        ours = isinstance(params, h5py.Group) and "scene" in params.attrs
        self._group = _FLOCK if ours else self._particle_group()
        # The elements read: all three in a flock3d recording; elsewhere the orientation may be missing.
        self._elements = tuple(
            name
            for name in _ELEMENTS
            if ours or isinstance(self._member(f"{self._group}/{name}/value"), h5py.Dataset)
        )
        required = ("position", "velocity", "orientation") if ours else ("position", "velocity")
        paths = [f"{self._group}/{name}/value" for name in required] + [
            f"{self._group}/position/{n}" for n in ("step", "time")
        ]
        for path in paths:
            if not isinstance(self._member(path), h5py.Dataset):
                what = "a flock3d trajectory" if ours else "a trajectory flock3d can read"
                raise RecordingError(f"{self.path}: not {what} (no {path})")
        self._groups = [self._group] + (
            [_PREDATORS]
            if ours and isinstance(self._member(f"{_PREDATORS}/position/value"), h5py.Dataset)
            else []
        )
        box = self._member(f"{self._group}/box")
        position = self._member(f"{self._group}/position/value")
        fallback = position.shape[2] if position.ndim == 3 and not ours else 3
        self._dimensions = self._dimension_of(box, fallback)
        widths = _widths(self._dimensions)
        frames, counts = set(), {}
        for group in self._groups:
            for name in self._elements:
                dataset = self._member(f"{group}/{name}/value")
                if not isinstance(dataset, h5py.Dataset):
                    raise self._damaged(f"{group}/{name}/value is missing")
                self._check_numbers(dataset, "fiu")
                if dataset.ndim != 3 or dataset.shape[2] != widths[name]:
                    raise self._damaged(
                        f"{dataset.name} has shape {dataset.shape}; expected (frames, boids, {widths[name]})"
                    )
                self._check_stored(dataset)
                frames.add(dataset.shape[0])
                counts.setdefault(group, set()).add(dataset.shape[1])
        for name, kinds in (("step", "iu"), ("time", "fiu")):
            dataset = self._member(f"{self._group}/position/{name}")
            self._check_numbers(dataset, kinds)
            if dataset.ndim != 1:
                raise self._damaged(f"{dataset.name} has shape {dataset.shape}; expected (frames,)")
            self._check_stored(dataset)
            frames.add(dataset.shape[0])
        if len(frames) != 1 or any(len(c) != 1 for c in counts.values()):
            raise self._damaged("inconsistent array shapes")
        self.n_frames = frames.pop()
        self._check_clock()
        self.n_boids = counts[self._group].pop()
        self.n_predators = counts[_PREDATORS].pop() if _PREDATORS in counts else 0
        if not ours:
            self._check_foreign(box)
            return
        every = params.attrs.get("every", 1)
        if not (isinstance(every, (int, np.integer)) and not isinstance(every, bool) and every >= 1):
            raise self._damaged(f"every = {_plain_repr(every)}; expected a whole number >= 1")
        self.every = int(every)  # steps between recorded frames
        self._keep_files()
        text = params.attrs["scene"]
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        if not isinstance(text, str) or len(text) > MAX_SCENE_BYTES:
            raise self._damaged("the stored scene is not TOML text of a scene's size")
        try:
            self.scene = parse_scene(text, source=f"{self.path}:scene")
        except SceneError as error:
            raise RecordingError(f"{self.path}: the stored scene is invalid ({error.problems[0]})") from None
        self._plane_z = float(self.scene.params.arena_center[2])
        from flock3d.metrics import periodic_box

        self.period = periodic_box(self.scene.params)

    def _keep_files(self) -> None:
        """Serve the files stored with the scene through :mod:`flock3d.io.meshes`, checked as a
        file read from disk would be, for the scene's files that are gone, while this is open."""
        import h5py

        from flock3d.io import meshes

        files = self._member("parameters/flock3d/files")
        if files is None or not meshes.world_extra_installed():  # then the scene says what is missing
            return
        if not isinstance(files, h5py.Group):
            raise self._damaged("parameters/flock3d/files is not a group")
        for name in files:
            entry = self._member(f"parameters/flock3d/files/{name}")
            path = entry.attrs.get("path") if isinstance(entry, h5py.Group) else None
            if isinstance(path, bytes):
                path = path.decode("utf-8", errors="replace")
            if not isinstance(path, str) or not path or "\0" in path:
                raise self._damaged(f"parameters/flock3d/files/{name} names no file")
            if "heights" in entry:
                heights = self._stored_array(f"files/{name}/heights", (2, meshes.MAX_IMAGE_SIDE))
                if not (np.all(heights >= 0.0) and np.all(heights <= 1.0)):
                    raise self._damaged(f"the heights stored for {path} are not all in [0, 1]")
                self._files[path] = np.ascontiguousarray(heights, dtype=np.float64)
                continue
            vertices = self._stored_array(f"files/{name}/vertices", (3, 3 * meshes.MAX_TRIANGLES), 3)
            faces = self._stored_array(f"files/{name}/faces", (1, meshes.MAX_TRIANGLES), 3, whole=True)
            if faces.min() < 0 or faces.max() >= len(vertices):
                raise self._damaged(f"the faces stored for {path} name vertices it does not hold")
            self._files[path] = meshes.recorded_mesh(vertices, faces)
        self._serving.enter_context(meshes.serve_recorded_files(self, self._files))

    def _stored_array(
        self, name: str, rows: tuple[int, int], width: int | None = None, whole: bool = False
    ) -> np.ndarray:
        """A stored file's array: 2-D, its rows (and its columns when ``width`` is None) within
        ``rows``, else ``width`` columns; checked before it is read (shape, type, storage),
        then its values finite."""
        import h5py

        dataset = self._member(f"parameters/flock3d/{name}")
        if not isinstance(dataset, h5py.Dataset):
            raise self._damaged(f"parameters/flock3d/{name} is missing")
        self._check_numbers(dataset, "iu" if whole else "fiu")
        (low, high), shape = rows, dataset.shape
        columns = (lambda n: n == width) if width is not None else (lambda n: low <= n <= high)
        if not (dataset.ndim == 2 and low <= shape[0] <= high and columns(shape[1])):
            raise self._damaged(f"{dataset.name} has shape {shape}")
        self._check_stored(dataset)
        values = dataset[()]
        if not whole:
            values = values.astype(np.float64)
            if not np.isfinite(values).all():
                raise self._damaged(f"{dataset.name} holds numbers that are not finite")
        return values

    def _particle_group(self) -> str:
        """The particles group of a file from another program: the one chosen, or the only one
        holding a position element."""
        import h5py

        particles = self._member("particles")
        names = sorted(
            name
            for name in (particles.keys() if isinstance(particles, h5py.Group) else ())
            if isinstance(self._member(f"particles/{name}/position/value"), h5py.Dataset)
        )
        if self._chosen is not None:
            if self._chosen not in names:
                holds = f"it holds {', '.join(names)}" if names else "it holds none"
                raise RecordingError(
                    f"{self.path}: no particles group {self._chosen!r} with positions ({holds})"
                )
            return f"particles/{self._chosen}"
        if not names:
            raise RecordingError(f"{self.path}: not a flock3d trajectory (no {_FLOCK}/position/value)")
        if len(names) > 1:
            raise RecordingError(
                f"{self.path}: holds several particles groups ({', '.join(names)}); choose one"
            )
        return f"particles/{names[0]}"

    def _check_foreign(self, box) -> None:
        """What a file from another program needs besides its arrays: velocities recorded at
        the positions' steps, and a box that wraps at fixed sides, if it wraps."""
        import h5py

        self.scene, self._plane_z = None, 0.0
        steps = self.steps
        velocity_steps = self._member(f"{self._group}/velocity/step")
        if isinstance(velocity_steps, h5py.Dataset) and not (
            velocity_steps.shape == steps.shape and np.array_equal(velocity_steps[()], steps)
        ):
            raise RecordingError(
                f"{self.path}: {self._group} records positions and velocities at different steps"
            )
        gaps = np.diff(steps)
        self.every = int(gaps[0]) if len(gaps) and gaps[0] > 0 and np.all(gaps == gaps[0]) else None
        self.period = None
        if box is None or "boundary" not in box.attrs:
            return
        boundary = [b.decode() if isinstance(b, bytes) else str(b) for b in np.ravel(box.attrs["boundary"])]
        wraps = np.array([b == "periodic" for b in boundary])
        if len(wraps) != self._dimensions:
            raise self._damaged(
                f"{box.name} boundary has {len(wraps)} entries for dimension {self._dimensions}"
            )
        if not wraps.any():
            return
        edges = self._member(f"{box.name.lstrip('/')}/edges")
        if isinstance(edges, h5py.Group):
            edges = self._member(f"{edges.name.lstrip('/')}/value")
        if not isinstance(edges, h5py.Dataset):
            raise self._damaged(f"{box.name} is periodic but has no edges")
        self._check_numbers(edges, "fiu")
        self._check_stored(edges)
        sides = np.asarray(edges[()], dtype=np.float64)
        d = self._dimensions
        if sides.shape[-2:] == (d, d):  # a matrix of box vectors: the sides of a rectangular box
            off_diagonal = sides * (1.0 - np.eye(d))
            if np.any(off_diagonal != 0.0):
                raise RecordingError(
                    f"{self.path}: {box.name} is not rectangular; flock3d reads rectangular boxes"
                )
            sides = np.diagonal(sides, axis1=-2, axis2=-1)
        sides = sides.reshape(-1, d) if sides.size else sides.reshape(0, d)
        if sides.shape[-1] != d or not len(sides):
            raise self._damaged(f"{edges.name} has shape {edges.shape}; expected the {d} sides of the box")
        if np.any(sides != sides[0]):
            raise RecordingError(f"{self.path}: {box.name} changes size; flock3d reads boxes of fixed sides")
        if not np.all(np.isfinite(sides[0][wraps]) & (sides[0][wraps] > 0.0)):
            raise self._damaged(f"{edges.name} holds {_plain_repr(sides[0])}; expected sides > 0")
        self.period = np.zeros(3)
        self.period[:d] = np.where(wraps, sides[0], 0.0)

    def _member(self, path: str):
        """The object at ``path``, or None where there is none, reached by hard links only.

        A recording holds its own data: an external link would make the reader open
        whatever file it names (``/etc/passwd``, a FIFO), and a soft link may lead
        through one, so both are refused rather than followed.
        """
        import h5py

        node = self._file
        for name in path.split("/"):
            if not isinstance(node, h5py.Group):
                return None
            link = node.get(name, getlink=True)
            if link is None:
                return None
            if not isinstance(link, h5py.HardLink):
                where = f"{node.name.rstrip('/')}/{name}".lstrip("/")
                if isinstance(link, h5py.ExternalLink):
                    what = f"a link to another file, {link.filename!r}"
                else:
                    what = f"a soft link to {link.path!r}"
                raise RecordingError(
                    f"{self.path}: {where} is {what}; a flock3d recording holds its own data"
                )
            node = node[name]
        return node

    def _check_clock(self) -> None:
        """Steps must be whole numbers from 0 to 2**63 - 1 (they are read as int64), times
        finite and never decreasing (frames are shown and measured at their times)."""
        steps, times = self._file[f"{self._group}/position/step"], self._file[f"{self._group}/position/time"]
        block, previous = 1 << 20, -np.inf
        for start in range(0, self.n_frames, block):
            s = steps[start : start + block]
            bad = (s < 0) | (s > np.iinfo(np.int64).max) if s.dtype.kind == "u" else s < 0
            if bad.any():
                k = int(np.argmax(bad))
                raise self._damaged(
                    f"{steps.name} holds {_plain_repr(s[k])} at frame {start + k:,}; "
                    "expected whole numbers from 0 to 2**63 - 1"
                )
            t = np.asarray(times[start : start + block], dtype=np.float64)
            if not np.all(np.isfinite(t)):
                k = int(np.argmax(~np.isfinite(t)))
                raise self._damaged(
                    f"{times.name} holds {_plain_repr(t[k])} at frame {start + k:,}; expected finite times"
                )
            back = np.diff(t, prepend=previous) < 0
            if back.any():
                k = int(np.argmax(back))
                before = t[k - 1] if k else previous
                raise self._damaged(
                    f"{times.name} goes back from {before:g} to {t[k]:g} s at frame {start + k:,}; "
                    "expected times that never decrease"
                )
            if len(t):
                previous = t[-1]

    def _dimension_of(self, box, fallback: int = 3) -> int:
        """D from the box; without one, ``fallback`` (3 for files written before planar flocks
        were stored in 2D, the positions' width for a file from another program)."""
        if box is None or "dimension" not in box.attrs:
            if fallback not in (2, 3):
                raise self._damaged(f"positions have {fallback} coordinates; expected 2 or 3")
            return fallback
        d = box.attrs["dimension"]
        if not (isinstance(d, (int, np.integer)) and d in (2, 3)):
            raise self._damaged(f"box dimension = {_plain_repr(d)}; expected 2 or 3")
        return int(d)

    def _check_numbers(self, dataset, kinds: str) -> None:
        """``kinds``: the numpy kinds allowed, ``fiu`` (numbers) or ``iu`` (whole numbers)."""
        if dataset.dtype.kind not in kinds:
            what = "strings" if dataset.dtype.kind in "SUO" else f"values of type {dataset.dtype}"
            wanted = "whole numbers" if kinds == "iu" else "numbers"
            raise self._damaged(f"{dataset.name} holds {what}, not {wanted}")

    def _check_stored(self, dataset) -> None:
        """Refuse a dataset declaring more data than the file holds (reading it would never end).

        Chunked data must have every chunk its shape needs: compressed chunks are smaller
        than their shape says, so bytes cannot tell, but a writer writes every chunk of
        the frames it writes (``TrajectoryWriter`` does).
        """
        if dataset.chunks is not None:
            needed = math.prod(-(-n // c) for n, c in zip(dataset.shape, dataset.chunks, strict=True))
            stored = dataset.id.get_num_chunks()
            if stored < needed:
                raise self._damaged(
                    f"{dataset.name} declares shape {dataset.shape} ({needed:,} chunks) "
                    f"but the file holds {stored:,} of them"
                )
            return
        declared = dataset.size * dataset.dtype.itemsize
        stored = dataset.id.get_storage_size()
        if stored < declared:
            raise self._damaged(
                f"{dataset.name} declares shape {dataset.shape} ({declared:,} bytes) "
                f"but the file holds {stored:,} bytes of it"
            )

    @property
    def group(self) -> str:
        """The particles group read: ``particles/flock`` in a flock3d recording."""
        return self._group

    @property
    def dimensions(self) -> int:
        """2 for a planar flock (stored with x and y), or 3."""
        return self._dimensions

    @property
    def steps(self) -> np.ndarray:
        """(T,) int64 step number of each frame."""
        return self._file[f"{self._group}/position/step"][:].astype(np.int64)

    @property
    def times(self) -> np.ndarray:
        """(T,) float64 simulated time of each frame, seconds."""
        return self._file[f"{self._group}/position/time"][:].astype(np.float64)

    def frame(self, index: int) -> FlockState:
        """Frame ``index`` (negative counts from the end) as a :class:`FlockState`."""
        if not -self.n_frames <= index < self.n_frames:
            raise IndexError(f"frame {index} out of range: the file has {self.n_frames} frames")
        i = index % self.n_frames
        return next(self._read(i, i + 1))

    def frames(self, stop: int | None = None) -> Iterator[FlockState]:
        """Iterate over the frames (the first ``stop`` of them), reading a block at a time."""
        total = self.n_frames if stop is None else min(stop, self.n_frames)
        block = _block_frames(self.n_boids + self.n_predators)
        for start in range(0, total, block):
            yield from self._read(start, min(start + block, total))

    def _read(self, start: int, end: int) -> Iterator[FlockState]:
        f = self._file
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
            state = FlockState(*(arrays[self._group, name][k] for name in _ELEMENTS), float(t[k]), int(s[k]))
            if _PREDATORS in self._groups:
                (state.predator_positions, state.predator_velocities, state.predator_orientations) = (
                    arrays[_PREDATORS, name][k] for name in _ELEMENTS
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
        self._serving.close()
        self._file.close()

    def __enter__(self) -> Trajectory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
