"""Writing a recording: :class:`TrajectoryWriter` buffers frames a block at a time, reserves the
disk space each block takes, writes it to a temporary file and puts the file in place when it
is closed. :mod:`flock3d.io.trajectory` says what the file holds and what is kept when a run
is cut short.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from flock3d.core.atomic import AtomicFile
from flock3d.core.fields import checked_count
from flock3d.core.state import FlockState
from flock3d.io.h5md import (
    ELEMENTS,
    FLOCK,
    LENGTH_UNIT,
    PREDATORS,
    TIME_UNIT,
    VELOCITY_UNIT,
    DiskFullError,
    RecordingError,
    block_frames,
    create_box,
    frame_arrays,
    widths,
    write_header,
    write_parameters,
)
from flock3d.scene import Scene

__all__ = ["TrajectoryWriter"]

#: The label of a stopped run's recording, put beside a file of its name
#: (:meth:`TrajectoryWriter.close_stopped`).
STOPPED = "stopped"

#: Room reserved for HDF5's own bookkeeping (chunk index nodes, headers) on each flush.
_METADATA_BYTES = 1 << 20


class TrajectoryWriter:
    """Append frames of a flock (and its predators) to an H5MD file.

    Args:
        path: file to create (replaced on :meth:`close` if it exists; see :mod:`flock3d.io.trajectory`).
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

        n_boids, n_predators = checked_count(n_boids, "n_boids"), checked_count(n_predators, "n_predators")
        every = checked_count(every, "every", least=1)  # what its reader asks of the file
        self.path = Path(path)
        self.n_boids, self.n_predators = n_boids, n_predators
        self.frames_written = 0
        self._block = block_frames(n_boids + n_predators)
        self._groups = {FLOCK: n_boids, **({PREDATORS: n_predators} if n_predators else {})}
        params = scene.params
        self._widths = widths(params.dimensions)
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
        self.kept_previous = False
        """Whether a run that failed left the file at ``path`` as it was (:meth:`close_cut_short`)."""
        self.written_to = self.path
        """Where the recording is once closed (beside ``path``: :meth:`close_stopped`)."""
        self._beside = False
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
        write_header(f)
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
            edges = create_box(group, d, self._periodic, step, time)
            if edges is not None:
                self._edges.append(edges)
            # Each boid's species (0 without species; predators all 0): what a reader tells them by.
            species = scene.params.species_of_boids if group_name == FLOCK else np.zeros(n)
            group.create_dataset("species", data=np.asarray(species, dtype=np.int32))
        self._step, self._time = step, time
        self._side = 2.0 * scene.params.arena_radius
        write_parameters(f, scene, every)
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
        """Buffer one frame; full blocks are written and flushed to disk.

        Args:
            state: the flock's state to record, with as many boids and predators as the file.

        Raises:
            ValueError: the state has another number of boids or predators.
            DiskFullError, RecordingError: a full block could not be written (:meth:`flush`).
        """
        if len(state) != self.n_boids or state.n_predators != self.n_predators:
            raise ValueError(
                f"frame has {len(state)} boids and {state.n_predators} predators, "
                f"the file holds {self.n_boids} and {self.n_predators}"
            )
        k = self._buffered
        for group in self._groups:
            for name, array in zip(ELEMENTS, frame_arrays(state, group), strict=True):
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
        reason = _reserve(self._file, self._datasets(), start, stop)
        if reason is None:
            reason = self._write(start, stop)
            if reason is None:
                self.frames_written = stop
                _release(self._file)
                return
            kept = _roll_back(self._file, self._datasets(), start)
            if kept is None:
                self._failed = RecordingError(
                    f"{self.path}: cannot write frames {start}-{stop - 1} ({reason}); "
                    + "the recording is dropped"
                    + (" and the file there before kept as it was" if self._on_disk.existed else "")
                )
                raise self._failed
            self.frames_written = kept
        _release(self._file)
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

    def close(self) -> None:
        """Write what is buffered and put the recording at ``path``.

        Raises:
            DiskFullError, RecordingError: as :meth:`flush` (a failure reported before is
                not raised again); what is then at ``path`` is said in :mod:`flock3d.io.trajectory`.
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
        """Close a file whose writing failed and keep it or drop it (see :mod:`flock3d.io.trajectory`)."""
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
            self.written_to = self._on_disk.commit_beside(STOPPED) if self._beside else self._on_disk.commit()
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

    def __exit__(self, kind, error, trace) -> None:
        if kind is None:
            self.close()  # a run that ended: its frames at ``path``
        elif issubclass(kind, KeyboardInterrupt):
            self.close_stopped()
        else:
            self.close_cut_short()

    def close_stopped(self) -> None:
        """Close the recording of a run its user stopped early (Ctrl-C, a signal).

        A file that was at ``path`` is kept, the frames put beside it at ``STEM.stopped.h5`` (or
        ``.stopped-2``, ...: :attr:`written_to`), so that a stop a second in never replaces a
        long recording.
        """
        self._beside = True
        self.close()

    def close_cut_short(self) -> None:
        """Close the recording of a run that failed (a step raised).

        As a run cut short by a full disk, its frames are put at ``path`` where no file was, and
        a file that was there is kept as it was (:attr:`kept_previous`), the new frames dropped.

        Raises:
            DiskFullError, RecordingError: as :meth:`close`, where no file was.
        """
        if not self._file.id.valid:
            return
        if not self._on_disk.existed:
            self.close()
            return
        self._abandon()
        self._on_disk.discard()
        self.kept_previous = True


def _roll_back(file, datasets: list, frames: int) -> int | None:
    """Shrink ``file``'s growing ``datasets`` back to ``frames`` frames after a failed write;
    ``frames``, or None.

    Shrinking drops the chunks HDF5 could not write, so that what it still holds fits in the
    file. HDF5 is not to be trusted after an error, though (it has been seen to lose chunks it
    had written): None unless every chunk is there.
    """
    with _quietly_freed():
        try:
            for dataset in datasets:
                dataset.resize(frames, axis=0)
            file.flush()
            if all(_stored_rows(dataset) >= frames for dataset in datasets):
                return frames
        except Exception:  # noqa: BLE001
            pass
    return None


def _release(file) -> None:
    """Give back what the last reservation did not use (HDF5 has written all the h5py ``file``
    holds)."""
    with contextlib.suppress(Exception):
        used = file.id.get_filesize()
        fd = file.id.get_vfd_handle()
        if os.fstat(fd).st_size > used:
            os.ftruncate(fd, used)


def _reserve(file, datasets: list, start: int, stop: int) -> str | None:
    """Allocate the disk space that writing frames ``start`` to ``stop`` of ``datasets`` (each
    growing by one row per frame) into the h5py ``file`` will take; why that is not possible,
    or None (also where the system cannot reserve)."""
    need = _METADATA_BYTES
    for dataset in datasets:
        chunk = dataset.chunks[0]
        new_chunks = -(-stop // chunk) - -(-start // chunk)  # chunks are allocated whole
        need += new_chunks * int(np.prod(dataset.chunks)) * dataset.dtype.itemsize
    fd, end = file.id.get_vfd_handle(), file.id.get_filesize()  # HDF5 allocates from end
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


def _stored_rows(dataset) -> int:
    """How many leading rows of a chunked dataset have their chunks in the file."""
    rows = dataset.chunks[0]
    present = {dataset.id.get_chunk_info(i).chunk_offset[0] for i in range(dataset.id.get_num_chunks())}
    chunks = 0
    while chunks * rows in present:
        chunks += 1
    return min(chunks * rows, dataset.shape[0])


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
