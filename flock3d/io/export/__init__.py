"""A recording as a file other programs open: USD (Blender, Houdini, Omniverse), glTF (game
engines, the web) and HTML (a browser), chosen by the file's suffix.

Every format is one module here obeying one contract: it defines ``SUFFIXES``, the suffixes
it writes (``(".usd", ".usda", ".usdc")``), and ``write(recording, path, progress)``, which
fills ``path`` (a temporary file ending in the target's suffix) from a
:class:`~flock3d.io.Trajectory` read frame by frame, calling ``progress`` (when not None)
with the number of frames done. It may define ``MAX_BOIDS``, the most boids it takes. What
every format needs (shapes, colours, the world's meshes, the camera, checked frames) is in
:mod:`flock3d.io.export.common`. :func:`export` picks the module by suffix from
:data:`WRITERS`, imports it only then (a format's library is needed only to write it), and
writes through :class:`~flock3d.core.atomic.AtomicFile`: a failed or interrupted export
leaves the file that was there as it was, or none, never part of one.

Run the flock on and export at once with :func:`export_flock` (``Flock.export``), or from
the command line: ``flock3d export (TRAJ.h5 | SCENE) --out FILE``.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from flock3d.core.atomic import AtomicFile
from flock3d.io.export.common import ExportError, open_recording, recorded_scene
from flock3d.io.h5md import RecordingError
from flock3d.io.playback import standing_still
from flock3d.io.trajectory import Trajectory

if TYPE_CHECKING:
    from flock3d.core.params import Params
    from flock3d.flock import Flock
    from flock3d.runner import RunStats, StopFlag
    from flock3d.scene import Scene

__all__ = [
    "export",
    "export_flock",
    "writer_for",
    "check_size",
    "check_run",
    "ExportError",
    "WRITERS",
    "EXTRA",
]

WRITERS: dict[str, str] = {
    ".usd": "usd",
    ".usda": "usd",
    ".usdc": "usd",
    ".glb": "gltf",
    ".gltf": "gltf",
    ".html": "html",
}
"""The module of :mod:`flock3d.io.export` writing each suffix (lower case). Each has ``SUFFIXES``
and ``write(recording, path, progress)``; one that bounds its file's size by the run's length
has ``refusal(rows, moving, frames)``, asked before a scene is run (:func:`export_flock`)."""
EXTRA = "export"
"""The extra that brings the formats' libraries: ``pip install 'flock3d[export]'``."""


def writer_for(path: str | Path) -> ModuleType:
    """The writer module for ``path``'s suffix, imported.

    Raises:
        ExportError: an unknown suffix, a format not in this build, or its library missing.
    """
    suffix = Path(path).suffix.lower()
    name = WRITERS.get(suffix)
    if name is None:
        known = ", ".join(WRITERS)
        if Path(path).is_dir() or str(path).endswith(("/", os.sep)):
            raise ExportError(f"{path}: a folder; name the file to write in it, ending in one of {known}")
        what = f"a {suffix} file" if suffix else "a file without a suffix"
        raise ExportError(f"{path}: cannot export to {what}; name one ending in {known}")
    module = f"{__name__}.{name}"
    try:
        writer = importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name == module:
            raise ExportError(f"{path}: {name} export is not in this build of flock3d") from None
        raise ExportError(
            f"{path}: {suffix} export needs the {EXTRA} extra (missing {error.name}): "
            f"python -m pip install 'flock3d[{EXTRA}]'"
        ) from None
    if suffix not in writer.SUFFIXES:  # the table and the module disagree: a bug, said plainly
        raise ExportError(
            f"{path}: {module} does not write {suffix} (it writes {', '.join(writer.SUFFIXES)})"
        )
    return writer


def check_size(path: str | Path, n_boids: int, writer: ModuleType | None = None) -> None:
    """Refuse a flock of ``n_boids`` larger than the format of ``path`` takes (its ``MAX_BOIDS``)."""
    writer = writer_for(path) if writer is None else writer
    limit = getattr(writer, "MAX_BOIDS", None)
    if limit is not None and n_boids > limit:
        raise ExportError(
            f"{path}: {n_boids:,} boids are more than {Path(path).suffix} export takes ({limit:,}, "
            "one node each); export to .usdc instead (one instancer for the whole flock)"
        )


def check_run(
    path: str | Path, params: Params, steps: int, every: int, writer: ModuleType | None = None
) -> None:
    """Refuse, before it runs, a run of ``params`` over ``steps`` steps, a frame every ``every``,
    whose export to ``path`` its format would refuse: more boids than it takes
    (:func:`check_size`), or a file larger than it may be (a writer's ``refusal``)."""
    writer = writer_for(path) if writer is None else writer
    check_size(path, params.count, writer)
    if hasattr(writer, "refusal"):
        moving = sum(o.motion is not None for o in params.objects)
        if too_large := writer.refusal(params.count + params.predator_count, moving, steps // every + 1):
            raise ExportError(f"{path}: {too_large}")


def _check_folder(path: Path) -> None:
    if not str(path).strip() or path.name in ("", ".", ".."):
        raise ExportError(f"{path}: needs a file name")
    if path.is_dir():
        raise ExportError(f"{path}: is a directory")
    if not path.parent.is_dir():
        raise ExportError(f"{path}: folder {path.parent} does not exist")


def export(recording: Trajectory | str | Path, path: str | Path, *, progress: bool | None = None) -> Path:
    """Write a recording to ``path`` in the format its suffix names (see :data:`WRITERS`).

    Args:
        recording: a :class:`~flock3d.io.Trajectory`, or the path of a recording
            (``flock3d run --out``).
        path: the file to write: ``.usd``, ``.usda``, ``.usdc``, ``.glb``, ``.gltf`` or ``.html``.
            A file there is replaced only when the new one is whole.
        progress: show a progress bar on stderr (None: only when stderr is a terminal).

    Returns:
        ``path``.

    Raises:
        ExportError: an unknown suffix or missing library, a frame that cannot be drawn (NaN,
            infinite, not a unit quaternion), more boids than the format takes, or a folder that
            cannot take the file; nothing is left at ``path`` then.
        flock3d.io.RecordingError: a missing or damaged recording.
    """
    from tqdm import tqdm

    path = Path(path)
    writer = writer_for(path)
    _check_folder(path)
    with open_recording(recording) as trajectory:
        recorded_scene(trajectory)
        if stands := standing_still(trajectory.times):
            raise ExportError(f"{trajectory.path}: {stands}")
        check_size(path, trajectory.n_boids, writer)
        bar = tqdm(total=trajectory.n_frames, unit="frame", file=sys.stderr,
                   disable=None if progress is None else not progress, desc=path.name)  # fmt: skip
        with bar:
            try:
                with AtomicFile(path) as file:
                    writer.write(trajectory, Path(file.temp), lambda done: bar.update(done - bar.n))
            except OSError as error:
                raise ExportError(f"{path}: cannot write ({error.strerror or error})") from None
    return path


def export_flock(
    flock: Flock,
    path: str | Path,
    steps: int,
    *,
    scene: Scene | None = None,
    every: int | None = None,
    progress: bool | None = True,
    stop: StopFlag | None = None,
) -> RunStats:
    """Run ``flock`` on for ``steps`` steps, recording every ``every``-th, and export the run to
    ``path``; the recording is a temporary file beside ``path``, removed afterwards.

    Args:
        scene: the scene the flock was made from (its view: boid shapes, colours, camera); None:
            a scene of the flock's parameters with the default view.
        every: steps between frames (default: one frame per 0.1 s of simulated time, as
            ``flock3d run``).
        stop: a :class:`~flock3d.runner.StopFlag`; a run it stops is not exported.

    Returns:
        The run's :class:`~flock3d.runner.RunStats` (``interrupted`` set when ``stop`` ended it).
    """
    from flock3d.io.trajectory import TrajectoryWriter
    from flock3d.runner import default_every, run
    from flock3d.scene import Scene

    path = Path(path)
    writer = writer_for(path)  # an unknown suffix or a missing library is said before the run
    _check_folder(path)
    if scene is None:
        scene = Scene(params=flock.params, name="flock", seed=flock.seed or 0, fields=flock.fields)
    every = default_every(flock.params.dt) if every is None else every
    check_run(path, flock.params, steps, every, writer)
    try:
        folder = tempfile.TemporaryDirectory(prefix=f".{path.name}.", suffix=".recording", dir=path.parent)
    except OSError as error:
        raise ExportError(f"{path}: cannot write in {path.parent} ({error.strerror or error})") from None
    with folder:
        recording = Path(folder.name) / "run.h5"
        # The temporary recording is this call's own: its failures are said of ``path``, and
        # nothing of it is kept.
        try:
            with TrajectoryWriter(recording, len(flock), scene, every, flock.state.n_predators) as out:
                stats = run(flock, steps, writer=out, every=every, progress=progress, stop=stop)
            if not stats.interrupted:
                export(recording, path, progress=progress)
        except RecordingError as error:
            why = str(error).removeprefix(f"{recording}: ").split("; stopped")[0]
            raise ExportError(f"{path}: the run's recording failed: {why}; nothing written") from None
        except ExportError as error:
            raise ExportError(str(error).replace(str(recording), str(path))) from None
    return stats


class _Package(ModuleType):
    """This package, callable: ``flock3d.io.export(recording, path)`` is :func:`export`, while
    ``flock3d.io.export.usd`` and the other writers stay its modules."""

    def __call__(
        self, recording: Trajectory | str | Path, path: str | Path, *, progress: bool | None = True
    ) -> Path:
        return export(recording, path, progress=progress)


sys.modules[__name__].__class__ = _Package
