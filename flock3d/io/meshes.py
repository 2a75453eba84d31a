"""Meshes and heightfield images of the world's objects: read, checked, and turned into the
fields the engines read (:func:`flock3d.core.objects.pack_objects`).

A mesh (OBJ, STL, PLY, glTF/GLB, read with trimesh) becomes a grid of signed distances
sampled once, computed by libigl's ``signed_distance`` (the sign from pseudonormals, exact
for a closed, consistently oriented mesh; from the fast winding number for an open one)
and cached on disk, keyed by the mesh's content (its scaled vertices and triangles) and the
grid's size. A heightfield's greyscale PNG (read with imageio) becomes its heights.

These need the ``world`` extra (trimesh, libigl, imageio); a scene without meshes or images
needs none of it.

**Grid.** ``resolution`` nodes (128) span the longest side of the mesh's bounding box plus a
margin of 12.5% of that side on each end; the other sides take as many nodes of the same
spacing h as they need. Between nodes the distance is trilinear, so it differs from the
mesh's exact distance by at most ``h * sqrt(3) / 2`` (half a cell's diagonal: the distance
is 1-Lipschitz and the interpolant a convex combination of nodes within that reach), and
from the shape the mesh approximates by that plus the mesh's own tessellation error.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import importlib.util
import logging
import math
import os
import re
import shutil
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from stat import S_ISREG
from typing import Any, NamedTuple

import numpy as np

from flock3d.core.atomic import atomic_write
from flock3d.core.fields import MAX_MAGNITUDE
from flock3d.core.objects import Object, SDFGrid, needs_field, scales
from flock3d.core.params import Params
from flock3d.errors import Flock3dError

__all__ = [
    "MeshError",
    "world_extra_installed",
    "MAX_TRIANGLES",
    "MAX_MESH_BYTES",
    "MAX_GRID_BYTES",
    "MAX_IMAGE_SIDE",
    "GRID_RESOLUTION",
    "EXACT_BAND",
    "MESH_SUFFIXES",
    "read_mesh",
    "mesh_grid",
    "object_grid",
    "read_heights",
    "object_fields",
    "grid_cache_dir",
    "serve_recorded_files",
    "recorded_mesh",
]

_log = logging.getLogger("flock3d")

#: Triangles a mesh may have: its grid takes about 7 s per 100,000 on two cores.
MAX_TRIANGLES = 1_000_000
#: Bytes a mesh file may hold, checked before it is read: 256 a triangle (an ASCII STL spends
#: about that on one at full precision; OBJ, PLY and binary STL less) for :data:`MAX_TRIANGLES`.
#: trimesh holds several times a file's size while it parses it.
MAX_MESH_BYTES = 256 * MAX_TRIANGLES
#: Bytes the distinct grids of one world may hold together (64 grids of 128^3 nodes), checked
#: from the meshes' bounding boxes before any grid is sampled. Identical meshes (the same
#: triangles at the same scale) share one grid, and the packed world holds each grid once
#: more, so a world's grids take at most twice this.
MAX_GRID_BYTES = 1 << 30
#: Pixels along a side of a heightfield image.
MAX_IMAGE_SIDE = 8192
#: Nodes along the longest side of a mesh's grid.
GRID_RESOLUTION = 128
#: Margin around a mesh's bounding box, as a fraction of its longest side.
GRID_MARGIN = 0.125
#: What trimesh reads for us.
MESH_SUFFIXES = (".obj", ".stl", ".ply", ".gltf", ".glb")
#: Bumped whenever the grid's layout or the way it is computed changes: old entries are not read.
_CACHE_VERSION = "2"
#: The modules of the world extra, by import name.
_EXTRA = ("trimesh", "igl", "imageio")


class MeshError(Flock3dError):
    """A mesh or image that cannot be used, in one line naming the file and the problem."""


def _missing() -> list[str]:
    return [m for m in _EXTRA if importlib.util.find_spec(m) is None]


def world_extra_installed() -> bool:
    """Whether this install can read meshes and heightfield images (the world extra)."""
    return not _missing()


def _require(what: str) -> None:
    missing = _missing()
    if missing:
        raise MeshError(
            f"{what} needs the world extra (missing {', '.join(missing)}): "
            "python -m pip install 'flock3d[world]'"
        )


# -- reading and checking ---------------------------------------------------------------------


def read_mesh(path: str | Path, role: str = "obstacle", scale: tuple[float, float, float] = (1.0, 1.0, 1.0)):
    """The triangle mesh in ``path``, checked, outward-facing when closed.

    A file is parsed once per content in a process: a file rewritten in place, even at the same
    size and modification time, is read again.

    Raises:
        MeshError: the file is missing or unreadable, larger than :data:`MAX_MESH_BYTES` (told
            from its size, before it is read), or not a regular file (nor may the files it
            names, a glTF's buffers or an OBJ's materials, be anything else); its text is not
            UTF-8; it holds no triangle mesh, a vertex of other than 3 coordinates, a triangle
            naming a vertex it lacks (an OBJ's index 0 included), vertices that are not finite
            or larger than :data:`~flock3d.core.fields.MAX_MAGNITUDE` in size, or more than
            :data:`MAX_TRIANGLES` triangles; or it is open (not watertight) while ``role`` is
            ``"arena"`` (boids stay inside a closed shape only); or, scaled by ``scale`` (its
            object's, per local axis), it reaches further than ``MAX_MAGNITUDE``.
    """
    _require(f"{path}: a mesh")
    path = Path(path)
    if "\0" in str(path):
        raise MeshError(f"{str(path)!r}: a file name cannot hold a NUL character")
    try:
        stat = path.stat()
    except FileNotFoundError:
        mesh = _recorded_mesh(path, role)  # an open recording's copy of a file gone since
        if mesh is not None:
            return mesh
        raise MeshError(f"{path}: no such mesh file") from None
    except OSError as error:
        raise MeshError(f"{path}: cannot read ({error.strerror or error})") from None
    if S_ISREG(stat.st_mode) and stat.st_size > MAX_MESH_BYTES:
        raise MeshError(
            f"{path}: holds {stat.st_size:,} bytes; a mesh file may hold at most {MAX_MESH_BYTES:,} "
            "(simplify the mesh)"
        )
    try:
        digest = _content_digest(path, stat)
    except OSError as error:
        raise MeshError(f"{path}: cannot read ({error.strerror or error})") from None
    mesh = _load(str(path), digest, stat.st_size)
    if isinstance(mesh, str):
        raise MeshError(f"{path}: {mesh}")
    if role == "arena" and not mesh.is_watertight:
        raise MeshError(
            f"{path}: is open (not watertight): an arena mesh must be closed, or boids could leave "
            "through its holes"
        )
    reach = float(np.max(np.abs(mesh.vertices) * np.asarray(scale, dtype=np.float64)))
    if reach > MAX_MAGNITUDE:
        raise MeshError(
            f"{path}: scaled by {_factors(scale)}, its coordinates reach {reach:g}; "
            f"a mesh may reach at most {MAX_MAGNITUDE:g} (a smaller scale)"
        )
    return mesh


def _factors(scale: tuple[float, float, float]) -> str:
    return f"{scale[0]:g}" if len(set(scale)) == 1 else "[" + ", ".join(f"{f:g}" for f in scale) + "]"


# -- the copies recordings keep ----------------------------------------------------------------

#: The copies of gone files that open recordings hold, one table a recording, newest last:
#: owner -> {path: trimesh.Trimesh or (nx, nz) heights}. A copy is served only while its
#: recording is open (:func:`serve_recorded_files`), so that a scene loaded after it names a gone
#: file as gone; and a path whose open recordings hold different copies is refused, not guessed.
_recorded: dict[object, dict[str, Any]] = {}
_recorded_lock = threading.Lock()
#: The recording whose copies come first in this context (:func:`recorded_files_first`).
_first: contextvars.ContextVar[object | None] = contextvars.ContextVar(
    "flock3d_recording_first", default=None
)


@contextlib.contextmanager
def serve_recorded_files(owner: object, files: dict[str, Any]) -> Iterator[None]:
    """While the block runs, serve ``files`` (path -> a mesh as :func:`recorded_mesh` builds it,
    or (nx, nz) heights in [0, 1]) for their paths whose files are gone."""
    with _recorded_lock:
        _recorded[owner] = files
    try:
        yield
    finally:
        with _recorded_lock:
            _recorded.pop(owner, None)


@contextlib.contextmanager
def recorded_files_first(owner: object) -> Iterator[None]:
    """While the block runs in this context, the copies ``owner`` serves come before any other
    open recording's: a recording reads its own world while it opens."""
    token = _first.set(owner)
    try:
        yield
    finally:
        _first.reset(token)


def recorded_mesh(vertices: np.ndarray, faces: np.ndarray):
    """The mesh a recording stored, as :func:`read_mesh` returned it when it was recorded.

    Args:
        vertices: (V, 3) float64; faces: (F, 3) int, in [0, V).
    """
    _require("a recorded mesh")
    import trimesh

    return trimesh.Trimesh(vertices, faces, process=False)


def _recorded_copy(path: Path, heights: bool) -> Any | None:
    """The open recordings' copy of the gone file ``path``, its heights or else its mesh (None
    if none holds one).

    Raises:
        MeshError: two open recordings hold different copies of it.
    """
    with _recorded_lock:
        first = _recorded.get(_first.get(), {})
        if str(path) in first:
            copies = [first[str(path)]]
        else:
            copies = [files[str(path)] for files in _recorded.values() if str(path) in files]
    copies = [c for c in copies if isinstance(c, np.ndarray) == heights]
    if not copies:
        return None
    first = copies[0]
    key = _copy_key(first)
    if any(_copy_key(c) != key for c in copies[1:]):
        raise MeshError(
            f"{path}: is gone, and the open recordings hold different copies of it (close all but one)"
        )
    return first


def _copy_key(copy: Any) -> bytes:
    if isinstance(copy, np.ndarray):
        return hashlib.sha256(copy.tobytes()).digest() + repr(copy.shape).encode()
    return hashlib.sha256(np.asarray(copy.vertices).tobytes() + np.asarray(copy.faces).tobytes()).digest()


def _recorded_mesh(path: Path, role: str):
    mesh = _recorded_copy(path, heights=False)
    if mesh is None:
        return None
    if role == "arena" and not mesh.is_watertight:
        raise MeshError(
            f"{path}: is open (not watertight): an arena mesh must be closed (the recording's copy)"
        )
    return mesh


#: Digests of files by their stat (see :func:`_content_digest`): path, device, inode, size,
#: mtime and ctime in ns -> (digest, when it was taken, ns).
_digests: dict[tuple, tuple[str, int]] = {}
_digests_lock = threading.Lock()
#: How far apart (ns) two writes to a file may be and still leave the same ctime: the
#: kernel stamps files from a coarse clock (a tick of up to 10 ms), with room to spare.
_STAMP_GRAIN_NS = 1_000_000_000


def _content_digest(path: Path, stat: os.stat_result) -> str | None:
    """The sha256 of a regular file's bytes; None for anything else (a FIFO is not opened here).

    The stat alone cannot tell a rewrite at the same size and mtime (``os.utime`` sets the
    mtime back; the ctime is stamped from a coarse clock), so a digest is reused only while
    the file's stat is unchanged and its ctime is older than the digest by more than the
    clock's grain: a later write then stamps a later ctime. Otherwise the bytes are read again.
    """
    if not S_ISREG(stat.st_mode):
        return None
    key = (str(path), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    with _digests_lock:
        known = _digests.get(key)
    if known is not None and stat.st_ctime_ns < known[1] - _STAMP_GRAIN_NS:
        return known[0]
    taken = time.time_ns()
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    with _digests_lock:
        if len(_digests) >= 256:
            _digests.pop(next(iter(_digests)))
        _digests[key] = (digest.hexdigest(), taken)
    return digest.hexdigest()


@functools.lru_cache(maxsize=32)
def _load(path: str, digest: str | None, size: int):
    """The mesh of a file, loaded once per content of the file (``digest``, its bytes' sha256:
    :func:`_content_digest`), or the message saying why not."""
    import trimesh

    if not os.path.isfile(path):
        return "not a regular file; a mesh is an OBJ, STL, PLY, glTF or GLB file"
    if not path.lower().endswith(MESH_SUFFIXES):
        return f"not a mesh file: its name must end in {', '.join(MESH_SUFFIXES)}"
    try:
        with open(path, "rb") as handle:
            handle.read(1)
        problem = _text_problem(path)
        if problem:
            return problem
        # Unprocessed: processing would drop non-finite vertices (and their triangles) unsaid.
        # errstate: trimesh's arithmetic on huge coordinates would print warnings before our line.
        with np.errstate(all="ignore"):
            loaded = trimesh.load(path, force="mesh", process=False, resolver=_regular_files(path))
    except PermissionError as error:
        return f"cannot read ({error.strerror})"
    except Exception as error:  # trimesh raises what its parsers raise: any of them means "not a mesh"
        if _is_encoding_error(error):  # a text format trimesh could not decode as UTF-8
            return _not_utf8(path) or "is not UTF-8 text; save it as UTF-8 (or plain ASCII)"
        reason = str(error).splitlines()[0][:120] if str(error) else type(error).__name__
        return f"not a mesh trimesh can read ({reason})"
    if not isinstance(loaded, trimesh.Trimesh) or len(loaded.faces) == 0:
        return "holds no triangles; a mesh needs at least one"
    problem = _array_problem(np.asarray(loaded.vertices), np.asarray(loaded.faces))
    if problem:
        return problem
    if len(loaded.faces) > MAX_TRIANGLES:
        return f"has {len(loaded.faces):,} triangles; a mesh may have at most {MAX_TRIANGLES:,} (simplify it)"
    loaded.merge_vertices()  # triangles sharing corners share vertices: what watertight is judged on
    if loaded.is_watertight and loaded.is_winding_consistent and loaded.volume < 0:
        loaded.invert()  # a closed mesh facing inwards: its inside is what it encloses
    return loaded


def _array_problem(vertices: np.ndarray, faces: np.ndarray) -> str | None:
    """What is wrong with the vertices and triangles trimesh read, or None.

    trimesh takes them as the file gives them: a triangle may name a vertex past the end or a
    negative one (numpy would wrap it round to another vertex), and coordinates of any size.
    Beyond :data:`MAX_MAGNITUDE` the world's arithmetic is no longer exact enough (merging
    vertices alone rounds them to int64 at 1e-8 and overflows near 1e11).
    """
    if vertices.ndim != 2 or vertices.shape[1] != 3:
        return f"has vertices of {vertices.shape[-1]} coordinates; a mesh's vertices need 3 (x, y, z)"
    if faces.ndim != 2 or faces.shape[1] != 3:
        return f"has faces of {faces.shape[-1]} corners that trimesh could not split into triangles"
    low, high = int(faces.min()), int(faces.max())
    if low < 0 or high >= len(vertices):
        bad = low if low < 0 else high
        return (
            f"has a triangle naming vertex {bad} (numbered from 0), but it holds {len(vertices):,} vertices; "
            "the file is damaged"
        )
    if not np.isfinite(vertices).all():
        return "has vertices that are not finite numbers (NaN or inf); a mesh needs finite coordinates"
    largest = float(np.abs(vertices).max())
    if largest > MAX_MAGNITUDE:
        return (
            f"has a coordinate of {largest:g}; a mesh's coordinates must be at most {MAX_MAGNITUDE:g} "
            "in size (rescale the file, then size it with the object's scale)"
        )
    return None


#: What an OBJ's text is searched for before trimesh reads it: a vertex of fewer than 3
#: coordinates, and a face index 0 (indices count from 1, or back from -1). trimesh accepts
#: both: the first garbles every vertex, the second silently names the last vertex. Each
#: pattern begins at the newline before its line, a literal the regex engine scans for fast.
_OBJ_SHORT_VERTEX = re.compile(rb"\n[ \t]*v(?:[ \t]+[^ \t\r\n]+){0,2}[ \t]*\r?(?=\n|\Z)")
_OBJ_ZERO_INDEX = re.compile(rb"\n[ \t]*f(?=[ \t])[^\n]*?[ \t/][-+]?0+(?=[/ \t\r\n]|\Z)")


def _text_problem(path: str) -> str | None:
    """What trimesh would misread in a text mesh (OBJ, ASCII STL): text that is not UTF-8 (which
    trimesh would guess at, with a module flock3d does not install), and the OBJ flaws above."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in (".obj", ".stl"):
        return None
    with open(path, "rb") as handle:
        data = handle.read()
    # A binary STL says how many triangles follow its 80-byte header, and is that long.
    if suffix == ".stl" and len(data) >= 84 and len(data) == 84 + 50 * int.from_bytes(data[80:84], "little"):
        return None
    problem = _not_utf8(path, data)
    if problem or suffix != ".obj":
        return problem
    text = b"\n" + data  # every line, the first included, after a newline
    for pattern, what in (
        (_OBJ_SHORT_VERTEX, "has a vertex of fewer than 3 coordinates; a mesh's vertices need x, y and z"),
        (_OBJ_ZERO_INDEX, "has a face with index 0; an OBJ's indices count from 1 (or back from -1)"),
    ):
        found = pattern.search(text)
        if found:
            line = text.count(b"\n", 0, found.start() + 1)
            return f"line {line}: {what}"
    return None


def _not_utf8(path: str, data: bytes | None = None) -> str | None:
    """The line saying where the file stops being UTF-8 text, or None when it is UTF-8."""
    if data is None:
        with open(path, "rb") as handle:
            data = handle.read()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        return (
            f"is not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start:,}); save it as UTF-8 "
            "(or plain ASCII)"
        )
    return None


def _is_encoding_error(error: BaseException) -> bool:
    """Whether trimesh failed to decode text: a UnicodeDecodeError, or its fallback's missing module."""
    while error is not None:
        if isinstance(error, UnicodeDecodeError) or (
            isinstance(error, ImportError) and error.name == "charset_normalizer"
        ):
            return True
        error = error.__cause__ or error.__context__
    return False


def _regular_files(path: str):
    """trimesh's resolver for the files a mesh names (a glTF's buffers and images, an OBJ's
    materials), confined to the mesh's folder as trimesh's own is, and refusing anything but a
    regular file: a FIFO there would block the read forever, a device never end it."""
    from trimesh.resolvers import FilePathResolver

    class RegularFiles(FilePathResolver):
        def get(self, name: str):
            for candidate in (name.strip(), name.strip().lstrip("/"), os.path.split(name)[-1]):
                try:
                    found = self.absolute(candidate)
                except ValueError:  # outside the folder: trimesh's own get refuses it
                    continue
                if found.exists() and not found.is_file():
                    raise ValueError(f"{name!r} is not a regular file")
            try:
                return super().get(name)
            except ValueError:  # trimesh's words for a name outside the folder advise a programmer
                raise ValueError(f"{name!r} lies outside the mesh's folder") from None

    return RegularFiles(path)


# -- the grid ---------------------------------------------------------------------------------


def mesh_grid(vertices: np.ndarray, faces: np.ndarray, resolution: int = GRID_RESOLUTION) -> SDFGrid:
    """Signed distances of the mesh sampled on a grid (see the module's notes), computed by
    libigl: the sign from pseudonormals when the mesh is closed and consistently oriented,
    from the fast winding number otherwise.

    libigl's closest-point search visits nearly every triangle from a point that many
    triangles are about equally far from (deep inside a round shape, far outside one), so
    sampling every node of 128^3 took 60 to 80 s for 100,000 triangles on two cores. Nodes
    are therefore computed coarse to fine: libigl gives the distance at every
    :data:`_STRIDE`-th node along each axis; a coarse cell whose corners are all farther
    than :data:`EXACT_BAND` cells plus half its diagonal from the surface holds no node
    within that band (the distance is 1-Lipschitz) and takes its nodes by trilinear
    interpolation of its corners; libigl computes every other node. So every node within
    ``EXACT_BAND * h`` of the surface is the mesh's own distance, and every node is within
    ``sqrt(3) / 2 * _STRIDE * h`` of it, with its sign exact.

    Args:
        vertices: (V, 3) float64 in the object's scaled local frame; faces: (F, 3) int.
        resolution: nodes along the longest side, at least 2.
    """
    import igl
    import trimesh

    v = np.ascontiguousarray(vertices, dtype=np.float64)
    f = np.ascontiguousarray(faces, dtype=np.int64)
    origin, h, nodes = grid_lattice(v, resolution)
    mesh = trimesh.Trimesh(v, f, process=False)
    kind = igl.SignedDistanceType
    sign = (
        kind.SIGNED_DISTANCE_TYPE_PSEUDONORMAL
        if mesh.is_watertight and mesh.is_winding_consistent
        else kind.SIGNED_DISTANCE_TYPE_FAST_WINDING_NUMBER
    )

    def distances(i, j, k):  # libigl's distances at the nodes of index arrays i, j, k
        points = origin + h * np.stack([i, j, k], axis=-1).astype(np.float64)
        return igl.signed_distance(points.reshape(-1, 3), v, f, sign_type=sign)[0]

    coarse = [np.unique(np.r_[np.arange(0, n, _STRIDE), n - 1]) for n in nodes]
    at = np.meshgrid(*coarse, indexing="ij")
    corners = distances(*at).reshape(at[0].shape)
    # Coarse cells all of whose nodes lie beyond the band: the least |d| of the corners, less
    # the farthest a node can be from its nearest corner.
    a = np.abs(corners)
    least = np.minimum.reduce(
        [a[x : a.shape[0] - 1 + x, y : a.shape[1] - 1 + y, z : a.shape[2] - 1 + z] for x in (0, 1)
         for y in (0, 1) for z in (0, 1)]
    )  # fmt: skip
    far_cells = least > (EXACT_BAND + 0.5 * math.sqrt(3.0) * _STRIDE) * h
    weights = [_linear_weights(n, c) for n, c in zip(nodes, coarse, strict=True)]
    values = np.einsum("ia,jb,kc,abc->ijk", *weights, corners, optimize=True)
    cell_of = [np.minimum(np.searchsorted(c, np.arange(n), side="right") - 1, len(c) - 2) for n, c in
               zip(nodes, coarse, strict=True)]  # fmt: skip
    near = ~far_cells[np.ix_(*cell_of)]
    values[near] = distances(*np.nonzero(near))
    return SDFGrid(tuple(float(c) for c in origin), float(h), np.ascontiguousarray(values))


def grid_lattice(
    vertices: np.ndarray, resolution: int = GRID_RESOLUTION
) -> tuple[np.ndarray, float, np.ndarray]:
    """The lattice of a mesh's grid (see the module's notes), known before anything is sampled:
    ``(origin (3,), h, nodes (3,) int64)``; the grid holds ``prod(nodes)`` float64 values.

    Args:
        vertices: (V, 3) float64 in the object's scaled local frame.
        resolution: nodes along the longest side, at least 2.

    Raises:
        MeshError: the mesh is a single point.
    """
    low, high = vertices.min(axis=0), vertices.max(axis=0)
    longest = float(max(high - low))
    if not longest > 0.0:
        raise MeshError("the mesh is a single point; it encloses nothing")
    h = longest * (1.0 + 2.0 * GRID_MARGIN) / (resolution - 1)
    nodes = np.ceil((high - low) / h + 2.0 * GRID_MARGIN * longest / h).astype(np.int64) + 1
    nodes = np.clip(nodes, 2, resolution)
    origin = 0.5 * (low + high) - 0.5 * (nodes - 1) * h
    return origin, h, nodes


#: Nodes between the coarse nodes libigl computes first (see :func:`mesh_grid`).
_STRIDE = 4
#: Every node this many cells or less from the surface is computed by libigl.
EXACT_BAND = 8


def _linear_weights(n: int, coarse: np.ndarray) -> np.ndarray:
    """(n, len(coarse)): linear interpolation from the coarse node indices to every index 0..n-1."""
    i = np.arange(n)
    a = np.minimum(np.searchsorted(coarse, i, side="right") - 1, len(coarse) - 2)
    t = (i - coarse[a]) / (coarse[a + 1] - coarse[a])
    w = np.zeros((n, len(coarse)))
    w[i, a] = 1.0 - t
    w[i, a + 1] += t
    return w


def grid_cache_dir() -> Path:
    """Where mesh grids are cached: ``grids`` beside the compiled steps' folder
    (:func:`flock3d.core.step.cache.cache_dir`)."""
    from flock3d.core.step.cache import cache_dir

    folder = cache_dir().parent / "grids"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class _GridPlan(NamedTuple):
    """What a mesh object's grid is made from, and its size, known before it is sampled."""

    vertices: np.ndarray  # (V, 3) float64, scaled local frame
    faces: np.ndarray  # (F, 3) int64
    key: str  # digest of the inputs: cache version, resolution, vertices, faces
    nodes: tuple[int, int, int]
    resolution: int

    @property
    def bytes(self) -> int:
        return 8 * math.prod(self.nodes)


def _grid_plan(o: Object, resolution: int) -> _GridPlan:
    mesh = read_mesh(o.file, o.role)
    vertices = np.ascontiguousarray(mesh.vertices * np.asarray(scales(o)), dtype=np.float64)
    faces = np.ascontiguousarray(mesh.faces, dtype=np.int64)
    digest = hashlib.sha256(f"{_CACHE_VERSION}:{resolution}:".encode())
    digest.update(vertices.tobytes())
    digest.update(faces.tobytes())
    nodes = tuple(int(n) for n in grid_lattice(vertices, resolution)[2])
    return _GridPlan(vertices, faces, digest.hexdigest()[:32], nodes, resolution)


def _check_grid_bytes(total: int, what: str) -> None:
    if total > MAX_GRID_BYTES:
        raise MeshError(
            f"{what} {total / 2**20:,.1f} MiB of distance grids; a world's distinct grids may take "
            f"at most {MAX_GRID_BYTES / 2**20:,.1f} MiB (use fewer distinct meshes or scales, or a lower "
            "resolution)"
        )


def object_grid(o: Object, resolution: int = GRID_RESOLUTION, cache: bool = True) -> SDFGrid:
    """A mesh object's grid, in its scaled local frame: from the cache when its mesh (scaled
    vertices and triangles) and the resolution were sampled before, else computed and cached.

    A cache entry holds a digest of the inputs it was made from and one of its contents, and
    is used only when both match: a damaged, swapped or edited entry (or a folder in its
    place) is dropped and computed again, with one line logged. A cache that cannot be
    written (a read-only folder, a full disk) costs the time of sampling, never the run.

    Raises:
        MeshError: the mesh cannot be used, or its grid alone is over :data:`MAX_GRID_BYTES`.
    """
    plan = _grid_plan(o, resolution)
    _check_grid_bytes(plan.bytes, f"{o.file} at resolution {resolution} needs")
    return _grid_of(plan, o.file, cache)


def _grid_of(plan: _GridPlan, name: str, cache: bool = True) -> SDFGrid:
    if not cache:
        return mesh_grid(plan.vertices, plan.faces, plan.resolution)
    try:
        path: Path | None = grid_cache_dir() / f"{plan.key}.npz"
    except OSError as error:  # no cache folder can be made: sample, and say why it is not kept
        _log.warning("flock3d: could not cache the grid of %s (%s)", name, error.strerror or error)
        return mesh_grid(plan.vertices, plan.faces, plan.resolution)
    grid, damage = _read_cached(path, plan)
    if grid is not None:
        return grid
    if damage is not None:
        removed = _remove_entry(path)
        if removed is None:
            _log.warning(
                "flock3d: the cached grid %s was damaged (%s); computing it again", path.name, damage
            )
        else:  # a read-only cache: say it once, and do not try to write
            _log.warning(
                "flock3d: the cached grid %s was damaged (%s) and cannot be replaced (%s); computing it "
                "again without caching it",
                path.name,
                damage,
                removed,
            )
            path = None
    grid = mesh_grid(plan.vertices, plan.faces, plan.resolution)
    if path is not None:
        failed = _write_cached(path, plan.key, grid)
        if failed is not None:  # a cache only saves time: a full disk costs the next run its wait
            level = logging.DEBUG if damage is not None else logging.WARNING  # one line a grid
            _log.log(level, "flock3d: could not cache the grid of %s (%s)", name, failed)
    return grid


def _entry_digest(key: str, origin, cell: float, values: np.ndarray) -> str:
    """A digest of an entry's contents: what it was made from (``key``) and what it holds."""
    digest = hashlib.sha256(f"{key}:{values.dtype.str}:{values.shape}:".encode())
    digest.update(np.asarray(origin, dtype="<f8").tobytes() + np.asarray(cell, dtype="<f8").tobytes())
    digest.update(np.ascontiguousarray(values).tobytes())
    return digest.hexdigest()


def _write_cached(path: Path, key: str, grid: SDFGrid) -> str | None:
    """Write an entry (atomically: another process never reads half of one); None, or why not."""
    checksum = _entry_digest(key, grid.origin, grid.cell, grid.values)
    try:
        with atomic_write(path, "wb") as handle:
            np.savez(
                handle, key=key, checksum=checksum, origin=grid.origin, cell=grid.cell, values=grid.values
            )
    except OSError as error:
        return error.strerror or str(error)
    return None


def _remove_entry(path: Path) -> str | None:
    """Remove a damaged entry (a file, or a folder in its place); None, or why it could not be."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    except OSError as error:
        return error.strerror or str(error)
    return None


def _array_header(entry: zipfile.ZipFile, name: str) -> tuple[tuple, np.dtype]:
    """The shape and dtype of an array stored in an .npz, read from its header alone."""
    with entry.open(f"{name}.npy") as handle:
        version = np.lib.format.read_magic(handle)
        fmt = np.lib.format
        read = fmt.read_array_header_2_0 if version >= (2, 0) else fmt.read_array_header_1_0
        shape, _, dtype = read(handle)
    return shape, dtype


def _read_cached(path: Path, plan: _GridPlan) -> tuple[SDFGrid | None, str | None]:
    """The grid cached at ``path``: ``(grid, None)``; ``(None, None)`` when there is none;
    ``(None, why)`` when what is there cannot be used."""
    if not os.path.lexists(path):
        return None, None
    if os.path.isdir(path):
        return None, "a folder in its place"
    try:
        with zipfile.ZipFile(path) as entry:  # the header first: a swapped entry could be any size
            shape, dtype = _array_header(entry, "values")
        if shape != plan.nodes or dtype != np.float64:
            held, wanted = "x".join(map(str, shape)), "x".join(map(str, plan.nodes))
            return None, f"it holds a {held} {dtype} grid, not {wanted}"
        with np.load(path, allow_pickle=False) as entry:
            key, checksum = str(entry["key"]), str(entry["checksum"])
            origin, cell, values = entry["origin"], entry["cell"], entry["values"]
    except Exception as error:  # a truncated or overwritten file: zipfile, numpy and OS errors alike
        return None, type(error).__name__
    if key != plan.key:
        return None, "it was made from another mesh or resolution"
    if origin.shape != (3,) or cell.shape != () or checksum != _entry_digest(key, origin, cell, values):
        return None, "its contents do not match their checksum"
    grid = SDFGrid(tuple(float(c) for c in origin), float(cell), np.ascontiguousarray(values))
    if not (math.isfinite(grid.cell) and grid.cell > 0 and np.isfinite(grid.values).all()):
        return None, "it holds numbers that are not finite"
    return grid, None


# -- heightfield images -----------------------------------------------------------------------


def read_heights(path: str | Path) -> np.ndarray:
    """(nx, nz) heights in [0, 1] from a greyscale PNG: column i along +X, row k along +Z,
    black 0 and white 1 (8 or 16 bits).

    Raises:
        MeshError: the file is missing, unreadable, not an image, not greyscale, or smaller
            than 2 x 2 or larger than :data:`MAX_IMAGE_SIDE` pixels a side.
    """
    _require(f"{path}: a heightfield image")
    import imageio.v3 as iio

    path = Path(path)
    if "\0" in str(path):
        raise MeshError(f"{str(path)!r}: a file name cannot hold a NUL character")
    if not path.exists() and (heights := _recorded_copy(path, heights=True)) is not None:
        return heights  # an open recording's copy of a file gone since
    if not path.is_file():
        raise MeshError(f"{path}: no such image file" if not path.exists() else f"{path}: not a regular file")
    try:
        pixels = np.asarray(iio.imread(path, plugin="pillow"))
    except PermissionError as error:
        raise MeshError(f"{path}: cannot read ({error.strerror})") from None
    except Exception as error:  # imageio raises what its plugins raise
        raise MeshError(f"{path}: not an image imageio can read ({type(error).__name__})") from None
    if pixels.ndim == 3 and pixels.shape[2] in (2, 4):
        pixels = pixels[..., :-1]  # alpha says nothing of the height
    if pixels.ndim == 3:
        if not all(np.array_equal(pixels[..., 0], pixels[..., c]) for c in range(1, pixels.shape[2])):
            raise MeshError(f"{path}: not a greyscale image; a heightfield's image must be grey (R = G = B)")
        pixels = pixels[..., 0]
    if pixels.ndim != 2 or not np.issubdtype(pixels.dtype, np.integer):
        raise MeshError(f"{path}: not a greyscale image of 8 or 16 bits (got {pixels.dtype} {pixels.shape})")
    rows, cols = pixels.shape
    if min(rows, cols) < 2 or max(rows, cols) > MAX_IMAGE_SIDE:
        raise MeshError(f"{path}: {cols} x {rows} pixels; a heightfield needs 2 to {MAX_IMAGE_SIDE:,} a side")
    top = np.iinfo(pixels.dtype).max
    return np.ascontiguousarray(pixels.T, dtype=np.float64) / top


# -- the fields of a world ------------------------------------------------------------------------


def object_fields(params: Params, resolution: int = GRID_RESOLUTION) -> dict[int, Any]:
    """What :func:`flock3d.core.objects.pack_objects` needs for the objects read from files: by
    object index, a mesh's :class:`SDFGrid` or a heightfield's heights.

    Objects of identical meshes (the same triangles at the same scale) get the same
    :class:`SDFGrid` object, and :func:`~flock3d.core.objects.pack_objects` packs it once.
    The distinct grids' size is known from the meshes' bounding boxes, and a world over
    :data:`MAX_GRID_BYTES` is refused before any grid is sampled or read from the cache.

    Raises:
        MeshError: one line naming the object, its file and the problem; or the world's grids'
            size.
    """
    plans: dict[int, _GridPlan] = {}
    planned: dict[tuple, _GridPlan] = {}  # a file read once however many objects name it
    for k, o in enumerate(params.objects):
        if o.shape == "mesh":
            same = (o.file, scales(o), o.role)
            try:
                plans[k] = planned[same] if same in planned else _grid_plan(o, resolution)
            except MeshError as error:
                raise MeshError(f"objects[{k}]: {error}") from None
            planned[same] = plans[k]
    distinct = {plan.key: plan for plan in plans.values()}
    _check_grid_bytes(
        sum(plan.bytes for plan in distinct.values()),
        f"the {len(distinct)} distinct mesh{'es' if len(distinct) != 1 else ''} of this world "
        + ("need" if len(distinct) != 1 else "needs"),
    )
    grids: dict[str, SDFGrid] = {}
    fields: dict[int, Any] = {}
    for k, o in enumerate(params.objects):
        if not needs_field(o):
            continue
        try:
            if o.shape == "mesh":
                key = plans[k].key
                if key not in grids:
                    grids[key] = _grid_of(plans[k], o.file)
                fields[k] = grids[key]
            else:
                fields[k] = read_heights(o.image)
        except MeshError as error:
            raise MeshError(f"objects[{k}]: {error}") from None
    return fields
