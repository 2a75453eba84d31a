"""A trajectory file checked on opening: everything reading its frames relies on (types,
shapes, data actually stored, steps within int64, finite times that never decrease, data
reached by the file's own hard links), so that a damaged file fails when it is opened and
not half way through a command (:class:`flock3d.io.trajectory.Trajectory`).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from flock3d.core.params import short_repr
from flock3d.io.h5md import ELEMENTS, FLOCK, PREDATORS, RecordingError, widths
from flock3d.scene import Scene, SceneError, parse_scene
from flock3d.scene.scene import MAX_SCENE_BYTES

__all__ = ["StoredFile", "Layout", "check_layout"]


@dataclass
class Layout:
    """What an open trajectory file holds, as :func:`check_layout` found it."""

    group: str = ""  # the particles group read: particles/flock in a flock3d recording
    elements: tuple[str, ...] = ()  # the elements read (a file from another program may lack orientation)
    groups: list[str] = field(default_factory=list)  # the group read, then the predators' if recorded
    dimensions: int = 3  # 2 for a planar flock (stored with x and y), or 3
    n_frames: int = 0
    n_boids: int = 0
    n_predators: int = 0
    every: int | None = None  # steps between frames; None: unevenly spaced (another program's file)
    scene: Scene | None = None  # the scene recorded; None in a file from another program
    plane_z: float = 0.0  # z of a planar flock (its arena centre's)
    period: np.ndarray | None = None  # (3,) sides of a periodic box, 0 where it does not wrap


class StoredFile:
    """An HDF5 file open for reading as a trajectory, and the checks of what it holds: each
    refusal is a :class:`RecordingError` naming ``path``.

    Args:
        file: the open ``h5py.File``.
        path: the file's path, as the user named it.
    """

    def __init__(self, file, path: Path) -> None:
        self.file, self.path = file, path

    def damaged(self, why: str) -> RecordingError:
        """The error of a file whose layout is damaged, saying ``why``."""
        return RecordingError(f"{self.path}: damaged trajectory ({why})")

    def member(self, path: str):
        """The object at ``path``, or None where there is none, reached by hard links only.

        A recording holds its own data: an external link would make the reader open
        whatever file it names (``/etc/passwd``, a FIFO), and a soft link may lead
        through one, so both are refused rather than followed.
        """
        import h5py

        node = self.file
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

    def check_numbers(self, dataset, kinds: str) -> None:
        """``kinds``: the numpy kinds allowed, ``fiu`` (numbers) or ``iu`` (whole numbers)."""
        if dataset.dtype.kind not in kinds:
            what = "strings" if dataset.dtype.kind in "SUO" else f"values of type {dataset.dtype}"
            wanted = "whole numbers" if kinds == "iu" else "numbers"
            raise self.damaged(f"{dataset.name} holds {what}, not {wanted}")

    def check_stored(self, dataset) -> None:
        """Refuse a dataset declaring more data than the file holds (reading it would never end).

        Chunked data must have every chunk its shape needs: compressed chunks are smaller
        than their shape says, so bytes cannot tell, but a writer writes every chunk of
        the frames it writes (``TrajectoryWriter`` does).
        """
        if dataset.chunks is not None:
            needed = math.prod(-(-n // c) for n, c in zip(dataset.shape, dataset.chunks, strict=True))
            stored = dataset.id.get_num_chunks()
            if stored < needed:
                raise self.damaged(
                    f"{dataset.name} declares shape {dataset.shape} ({needed:,} chunks) "
                    f"but the file holds {stored:,} of them"
                )
            return
        declared = dataset.size * dataset.dtype.itemsize
        stored = dataset.id.get_storage_size()
        if stored < declared:
            raise self.damaged(
                f"{dataset.name} declares shape {dataset.shape} ({declared:,} bytes) "
                f"but the file holds {stored:,} bytes of it"
            )

    def stored_array(
        self, name: str, rows: tuple[int, int], width: int | None = None, whole: bool = False
    ) -> np.ndarray:
        """A stored file's array: 2-D, its rows (and its columns when ``width`` is None) within
        ``rows``, else ``width`` columns; checked before it is read (shape, type, storage),
        then its values finite."""
        import h5py

        dataset = self.member(f"parameters/flock3d/{name}")
        if not isinstance(dataset, h5py.Dataset):
            raise self.damaged(f"parameters/flock3d/{name} is missing")
        self.check_numbers(dataset, "iu" if whole else "fiu")
        (low, high), shape = rows, dataset.shape
        columns = (lambda n: n == width) if width is not None else (lambda n: low <= n <= high)
        if not (dataset.ndim == 2 and low <= shape[0] <= high and columns(shape[1])):
            raise self.damaged(f"{dataset.name} has shape {shape}")
        self.check_stored(dataset)
        values = dataset[()]
        if not whole:
            values = values.astype(np.float64)
            if not np.isfinite(values).all():
                raise self.damaged(f"{dataset.name} holds numbers that are not finite")
        return values

    def dimension_of(self, box, fallback: int = 3) -> int:
        """D from the box; without one, ``fallback`` (3 for files written before planar flocks
        were stored in 2D, the positions' width for a file from another program)."""
        if box is None or "dimension" not in box.attrs:
            if fallback not in (2, 3):
                raise self.damaged(f"positions have {fallback} coordinates; expected 2 or 3")
            return fallback
        d = box.attrs["dimension"]
        if not (isinstance(d, (int, np.integer)) and d in (2, 3)):
            raise self.damaged(f"box dimension = {_plain_repr(d)}; expected 2 or 3")
        return int(d)

    def check_clock(self, group: str, n_frames: int) -> None:
        """Steps must be whole numbers from 0 to 2**63 - 1 (they are read as int64), times
        finite and never decreasing (frames are shown and measured at their times)."""
        steps, times = self.file[f"{group}/position/step"], self.file[f"{group}/position/time"]
        block, previous = 1 << 20, -np.inf
        for start in range(0, n_frames, block):
            s = steps[start : start + block]
            bad = (s < 0) | (s > np.iinfo(np.int64).max) if s.dtype.kind == "u" else s < 0
            if bad.any():
                k = int(np.argmax(bad))
                raise self.damaged(
                    f"{steps.name} holds {_plain_repr(s[k])} at frame {start + k:,}; "
                    "expected whole numbers from 0 to 2**63 - 1"
                )
            t = np.asarray(times[start : start + block], dtype=np.float64)
            if not np.all(np.isfinite(t)):
                k = int(np.argmax(~np.isfinite(t)))
                raise self.damaged(
                    f"{times.name} holds {_plain_repr(t[k])} at frame {start + k:,}; expected finite times"
                )
            back = np.diff(t, prepend=previous) < 0
            if back.any():
                k = int(np.argmax(back))
                before = t[k - 1] if k else previous
                raise self.damaged(
                    f"{times.name} goes back from {before:g} to {t[k]:g} s at frame {start + k:,}; "
                    "expected times that never decrease"
                )
            if len(t):
                previous = t[-1]

    def particle_group(self, chosen: str | None) -> str:
        """The particles group of a file from another program: the one chosen, or the only one
        holding a position element."""
        import h5py

        particles = self.member("particles")
        names = sorted(
            name
            for name in (particles.keys() if isinstance(particles, h5py.Group) else ())
            if isinstance(self.member(f"particles/{name}/position/value"), h5py.Dataset)
        )
        if chosen is not None:
            if chosen not in names:
                holds = f"it holds {', '.join(names)}" if names else "it holds none"
                raise RecordingError(f"{self.path}: no particles group {chosen!r} with positions ({holds})")
            return f"particles/{chosen}"
        if not names:
            raise RecordingError(f"{self.path}: not a flock3d trajectory (no {FLOCK}/position/value)")
        if len(names) > 1:
            raise RecordingError(
                f"{self.path}: holds several particles groups ({', '.join(names)}) and no flock3d scene to "
                "say which is the flock; `flock3d infer maxent --group NAME` or Trajectory(path, group=NAME) "
                "reads one"
            )
        return f"particles/{names[0]}"


def check_layout(
    stored: StoredFile, chosen: str | None, owner: object, serving: contextlib.ExitStack
) -> Layout:
    """Check everything reading frames relies on, so that reading cannot fail or run away."""
    import h5py

    layout = Layout()
    params = stored.member("parameters/flock3d")
    ours = isinstance(params, h5py.Group) and "scene" in params.attrs
    boids = FLOCK.removeprefix("particles/")
    if ours and chosen not in (None, boids):  # its predators are read beside its boids, never alone
        raise RecordingError(
            f"{stored.path}: a flock3d recording, whose boids are the particles group {boids!r} "
            f"(not {chosen!r})"
        )
    layout.group = FLOCK if ours else stored.particle_group(chosen)
    # The elements read: all three in a flock3d recording; elsewhere the orientation may be missing.
    layout.elements = tuple(
        name
        for name in ELEMENTS
        if ours or isinstance(stored.member(f"{layout.group}/{name}/value"), h5py.Dataset)
    )
    required = ("position", "velocity", "orientation") if ours else ("position", "velocity")
    paths = [f"{layout.group}/{name}/value" for name in required] + [
        f"{layout.group}/position/{n}" for n in ("step", "time")
    ]
    for path in paths:
        if not isinstance(stored.member(path), h5py.Dataset):
            what = "a flock3d trajectory" if ours else "a trajectory flock3d can read"
            raise RecordingError(f"{stored.path}: not {what} (no {path})")
    layout.groups = [layout.group] + (
        [PREDATORS] if ours and isinstance(stored.member(f"{PREDATORS}/position/value"), h5py.Dataset) else []
    )
    box = stored.member(f"{layout.group}/box")
    position = stored.member(f"{layout.group}/position/value")
    fallback = position.shape[2] if position.ndim == 3 and not ours else 3
    layout.dimensions = stored.dimension_of(box, fallback)
    columns = widths(layout.dimensions)
    frames, counts = set(), {}
    for group in layout.groups:
        for name in layout.elements:
            dataset = stored.member(f"{group}/{name}/value")
            if not isinstance(dataset, h5py.Dataset):
                raise stored.damaged(f"{group}/{name}/value is missing")
            stored.check_numbers(dataset, "fiu")
            if dataset.ndim != 3 or dataset.shape[2] != columns[name]:
                raise stored.damaged(
                    f"{dataset.name} has shape {dataset.shape}; expected (frames, boids, {columns[name]})"
                )
            stored.check_stored(dataset)
            frames.add(dataset.shape[0])
            counts.setdefault(group, set()).add(dataset.shape[1])
    for name, kinds in (("step", "iu"), ("time", "fiu")):
        dataset = stored.member(f"{layout.group}/position/{name}")
        stored.check_numbers(dataset, kinds)
        if dataset.ndim != 1:
            raise stored.damaged(f"{dataset.name} has shape {dataset.shape}; expected (frames,)")
        stored.check_stored(dataset)
        frames.add(dataset.shape[0])
    if len(frames) != 1 or any(len(c) != 1 for c in counts.values()):
        raise stored.damaged("inconsistent array shapes")
    layout.n_frames = frames.pop()
    stored.check_clock(layout.group, layout.n_frames)
    (layout.n_boids,) = counts[layout.group]
    # the predators beside the boids (ours); another program's predators group read as the particles has none
    layout.n_predators = next(iter(counts[PREDATORS])) if PREDATORS in layout.groups[1:] else 0
    if not ours:
        _check_foreign(stored, layout, box)
        return layout
    every = params.attrs.get("every", 1)
    if not (isinstance(every, (int, np.integer)) and not isinstance(every, bool) and every >= 1):
        raise stored.damaged(f"every = {_plain_repr(every)}; expected a whole number >= 1")
    layout.every = int(every)  # steps between recorded frames
    _keep_files(stored, owner, serving)
    text = params.attrs["scene"]
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str) or len(text) > MAX_SCENE_BYTES:
        raise stored.damaged("the stored scene is not TOML text of a scene's size")
    try:
        layout.scene = parse_scene(text, source=f"{stored.path}:scene")
    except SceneError as error:
        raise RecordingError(f"{stored.path}: the stored scene is invalid ({error.problems[0]})") from None
    layout.plane_z = float(layout.scene.params.arena_center[2])
    from flock3d.metrics import periodic_box

    layout.period = periodic_box(layout.scene.params)
    return layout


def _keep_files(stored: StoredFile, owner: object, serving: contextlib.ExitStack) -> None:
    """Serve the files stored with the scene through :mod:`flock3d.io.meshes`, checked as a
    file read from disk would be, for the scene's files that are gone, while ``serving`` is open
    (``owner``: the trajectory serving them)."""
    import h5py

    from flock3d.io import meshes

    files = stored.member("parameters/flock3d/files")
    if files is None or not meshes.world_extra_installed():  # then the scene says what is missing
        return
    if not isinstance(files, h5py.Group):
        raise stored.damaged("parameters/flock3d/files is not a group")
    copies: dict[str, object] = {}
    for name in files:
        entry = stored.member(f"parameters/flock3d/files/{name}")
        path = entry.attrs.get("path") if isinstance(entry, h5py.Group) else None
        if isinstance(path, bytes):
            path = path.decode("utf-8", errors="replace")
        if not isinstance(path, str) or not path or "\0" in path:
            raise stored.damaged(f"parameters/flock3d/files/{name} names no file")
        if "heights" in entry:
            heights = stored.stored_array(f"files/{name}/heights", (2, meshes.MAX_IMAGE_SIDE))
            if not (np.all(heights >= 0.0) and np.all(heights <= 1.0)):
                raise stored.damaged(f"the heights stored for {path} are not all in [0, 1]")
            copies[path] = np.ascontiguousarray(heights, dtype=np.float64)
            continue
        vertices = stored.stored_array(f"files/{name}/vertices", (3, 3 * meshes.MAX_TRIANGLES), 3)
        faces = stored.stored_array(f"files/{name}/faces", (1, meshes.MAX_TRIANGLES), 3, whole=True)
        if faces.min() < 0 or faces.max() >= len(vertices):
            raise stored.damaged(f"the faces stored for {path} name vertices it does not hold")
        copies[path] = meshes.recorded_mesh(vertices, faces)
    serving.enter_context(meshes.serve_recorded_files(owner, copies))


def _check_foreign(stored: StoredFile, layout: Layout, box) -> None:
    """What a file from another program needs besides its arrays: velocities recorded at
    the positions' steps, and a box that wraps at fixed sides, if it wraps."""
    import h5py

    layout.scene, layout.plane_z = None, 0.0
    steps = stored.file[f"{layout.group}/position/step"][:].astype(np.int64)
    velocity_steps = stored.member(f"{layout.group}/velocity/step")
    if isinstance(velocity_steps, h5py.Dataset) and not (
        velocity_steps.shape == steps.shape and np.array_equal(velocity_steps[()], steps)
    ):
        raise RecordingError(
            f"{stored.path}: {layout.group} records positions and velocities at different steps"
        )
    gaps = np.diff(steps)
    layout.every = int(gaps[0]) if len(gaps) and gaps[0] > 0 and np.all(gaps == gaps[0]) else None
    layout.period = None
    if box is None or "boundary" not in box.attrs:
        return
    boundary = [b.decode() if isinstance(b, bytes) else str(b) for b in np.ravel(box.attrs["boundary"])]
    wraps = np.array([b == "periodic" for b in boundary])
    if len(wraps) != layout.dimensions:
        raise stored.damaged(
            f"{box.name} boundary has {len(wraps)} entries for dimension {layout.dimensions}"
        )
    if not wraps.any():
        return
    edges = stored.member(f"{box.name.lstrip('/')}/edges")
    if isinstance(edges, h5py.Group):
        edges = stored.member(f"{edges.name.lstrip('/')}/value")
    if not isinstance(edges, h5py.Dataset):
        raise stored.damaged(f"{box.name} is periodic but has no edges")
    stored.check_numbers(edges, "fiu")
    stored.check_stored(edges)
    sides = np.asarray(edges[()], dtype=np.float64)
    d = layout.dimensions
    if sides.shape[-2:] == (d, d):  # a matrix of box vectors: the sides of a rectangular box
        off_diagonal = sides * (1.0 - np.eye(d))
        if np.any(off_diagonal != 0.0):
            raise RecordingError(
                f"{stored.path}: {box.name} is not rectangular; flock3d reads rectangular boxes"
            )
        sides = np.diagonal(sides, axis1=-2, axis2=-1)
    sides = sides.reshape(-1, d) if sides.size else sides.reshape(0, d)
    if sides.shape[-1] != d or not len(sides):
        raise stored.damaged(f"{edges.name} has shape {edges.shape}; expected the {d} sides of the box")
    if np.any(sides != sides[0]):
        raise RecordingError(f"{stored.path}: {box.name} changes size; flock3d reads boxes of fixed sides")
    if not np.all(np.isfinite(sides[0][wraps]) & (sides[0][wraps] > 0.0)):
        raise stored.damaged(f"{edges.name} holds {_plain_repr(sides[0])}; expected sides > 0")
    layout.period = np.zeros(3)
    layout.period[:d] = np.where(wraps, sides[0], 0.0)


def _plain_repr(value) -> str:
    """A value read from HDF5, shown as Python would show the plain value (0, not np.int64(0))."""
    return short_repr(value.tolist() if isinstance(value, (np.generic, np.ndarray)) else value)
