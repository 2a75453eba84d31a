"""The H5MD layout of a flock3d recording: its names, widths, units and errors, and the parts of
it a writer creates besides the growing arrays (the header, the box, the parameters and the
scene's files). :mod:`flock3d.io.trajectory` describes the layout as a whole.
"""

from __future__ import annotations

import numpy as np

from flock3d._version import __version__
from flock3d.core.state import FlockState
from flock3d.errors import Flock3dError
from flock3d.scene import Scene

__all__ = [
    "BLOCK_BYTES",
    "ELEMENTS",
    "FLOCK",
    "PREDATORS",
    "LENGTH_UNIT",
    "TIME_UNIT",
    "VELOCITY_UNIT",
    "UNITS_NOTE",
    "RecordingError",
    "DiskFullError",
    "widths",
    "block_frames",
    "frame_arrays",
    "write_header",
    "create_box",
    "write_parameters",
]

#: Target size of one buffered block (and HDF5 chunk) per array.
BLOCK_BYTES = 1 << 20
#: The elements of a particles group, in the order of :class:`FlockState`'s arrays.
ELEMENTS = ("position", "velocity", "orientation")
FLOCK, PREDATORS = "particles/flock", "particles/predators"
#: Units written on the datasets (see :mod:`flock3d.io.trajectory`): world units and seconds,
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


def widths(dimensions: int) -> dict[str, int]:
    """Columns stored per boid for each element."""
    return {"position": dimensions, "velocity": dimensions, "orientation": 4}


def block_frames(n_boids: int) -> int:
    """Frames in one buffered block (and HDF5 chunk) of ``n_boids`` boids' arrays."""
    return int(np.clip(BLOCK_BYTES // max(1, n_boids * 3 * 8), 1, 1024))


def frame_arrays(state: FlockState, group: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The arrays of ``state`` stored in ``group`` (:data:`FLOCK` or :data:`PREDATORS`), in the
    order of :data:`ELEMENTS`."""
    if group == FLOCK:
        return state.positions, state.velocities, state.orientations
    return state.predator_positions, state.predator_velocities, state.predator_orientations


def write_header(f) -> None:
    """The ``h5md`` group of the open, empty h5py file ``f``: version, author and creator."""
    h5md = f.create_group("h5md")
    h5md.attrs["version"] = np.array([1, 1], dtype=np.int32)
    h5md.create_group("author").attrs["name"] = np.bytes_(b"flock3d user")
    creator = h5md.create_group("creator")
    creator.attrs["name"] = np.bytes_(b"flock3d")
    creator.attrs["version"] = np.bytes_(__version__.encode())


def create_box(group, d: int, periodic: bool, step, time):
    """The ``box`` of the particles ``group``; in a periodic arena, its growing ``edges/value``
    (returned, else None), sharing the elements' ``step`` and ``time`` datasets."""
    box = group.create_group("box")
    box.attrs["dimension"] = np.int32(d)
    boundary = b"periodic" if periodic else b"none"
    box.attrs["boundary"] = np.array([boundary] * d, dtype="S8")
    if not periodic:
        return None
    # A time-dependent element: H5MD readers look for edges/value.
    edges = box.create_group("edges")
    value = edges.create_dataset("value", shape=(0, d), maxshape=(None, d), chunks=(1024, d), dtype="f8")
    value.attrs["unit"] = LENGTH_UNIT
    edges["step"], edges["time"] = step, time
    return value


def write_parameters(f, scene: Scene, every: int) -> None:
    """``parameters/flock3d`` of the h5py file ``f``: the scene run, its seed, ``every``, the
    version and units, and the files the scene's objects were read from."""
    params = f.create_group("parameters").create_group("flock3d")
    params.attrs["scene"] = scene.to_toml()
    params.attrs["source_text"] = scene.text or ""
    params.attrs["seed"] = scene.seed
    params.attrs["every"] = every
    params.attrs["flock3d_version"] = __version__
    params.attrs["units"] = UNITS_NOTE
    _store_files(params, scene)


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
