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

This module reads the files and builds a world's fields from them; the jobs it calls on lie
beside it: :mod:`~flock3d.io.mesh_files` (a mesh file parsed and checked),
:mod:`~flock3d.io.sdf_grid` (the grid sampled), :mod:`~flock3d.io.grid_cache` (the disk cache),
:mod:`~flock3d.io.recorded_files` (a recording's copies of files gone since) and
:mod:`~flock3d.io.world_extra` (the extra they need, and :class:`MeshError`).
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import threading
import time
import warnings
from pathlib import Path
from stat import S_ISREG
from typing import Any, NamedTuple

import numpy as np

from flock3d.core.fields import MAX_MAGNITUDE
from flock3d.core.objects import Object, SDFGrid, needs_field, scales
from flock3d.core.params import Params
from flock3d.io.grid_cache import CACHE_VERSION, grid_cache_dir, read_cached, remove_entry, write_cached
from flock3d.io.mesh_files import MESH_SUFFIXES
from flock3d.io.mesh_files import load_mesh_file as _load
from flock3d.io.recorded_files import recorded_copy, recorded_copy_mesh, recorded_mesh, serve_recorded_files
from flock3d.io.sdf_grid import _STRIDE as _STRIDE  # the stride of the grid's error bound
from flock3d.io.sdf_grid import EXACT_BAND, GRID_RESOLUTION, grid_lattice, mesh_grid
from flock3d.io.world_extra import MeshError, world_extra_installed
from flock3d.io.world_extra import require_world_extra as _require

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
        mesh = recorded_copy_mesh(path, role)  # an open recording's copy of a file gone since
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
    mesh = _load(str(path), digest, stat.st_size, MAX_TRIANGLES)
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
    digest = hashlib.sha256(f"{CACHE_VERSION}:{resolution}:".encode())
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
    grid, damage = read_cached(path, plan.key, plan.nodes)
    if grid is not None:
        return grid
    if damage is not None:
        removed = remove_entry(path)
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
        failed = write_cached(path, plan.key, grid)
        if failed is not None:  # a cache only saves time: a full disk costs the next run its wait
            level = logging.DEBUG if damage is not None else logging.WARNING  # one line a grid
            _log.log(level, "flock3d: could not cache the grid of %s (%s)", name, failed)
    return grid


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
    if not path.exists() and (heights := recorded_copy(path, heights=True)) is not None:
        return heights  # an open recording's copy of a file gone since
    if not path.is_file():
        raise MeshError(f"{path}: no such image file" if not path.exists() else f"{path}: not a regular file")
    from PIL import Image

    try:
        with warnings.catch_warnings():  # Pillow's warning of a huge image (two lines) is an error here
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            pixels = np.asarray(iio.imread(path, plugin="pillow"))
    except PermissionError as error:
        raise MeshError(f"{path}: cannot read ({error.strerror})") from None
    except Exception as error:  # imageio raises what its plugins raise, or its own OSError from it
        bomb = (Image.DecompressionBombWarning, Image.DecompressionBombError)
        cause = error if isinstance(error, bomb) else error.__cause__
        if isinstance(cause, bomb):  # far past 8,192 pixels a side
            found = re.search(r"\((\d+) pixels\)", str(cause))
            size = f"{int(found[1]):,} pixels in all" if found else "more pixels"
            needs = f"more than Pillow decodes safely (a heightfield takes 2 to {MAX_IMAGE_SIDE:,} a side)"
            raise MeshError(f"{path}: {size}, {needs}") from None
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
